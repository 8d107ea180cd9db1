#!/usr/bin/env python3
"""Which threads run while an action server and client sit idle.

For each executor and run, starts the node of the `action_idle` scenario with
`--seconds 10` (its first phase is the idle window), samples every thread's
`/proc/<pid>/task/<tid>/schedstat` 3.5 s into the run and again 5 s later, and records
each thread that was scheduled in meanwhile: its name, its CPU time and how many times it
ran. The runs go into one JSON document beside the machine, rmw and command, with each
node's own report (`idle_cpu_pct` among it); a node that fails is recorded with its
error, not dropped.

    python3 benchmarks/harness/idle_threads.py --executors rclrs_tokio,rclrs_basic,rclcpp_events \\
        --runs 3 --output-dir benchmarks/results/amd_idle_threads

Run it with the harness's environment (`.ros/<flavour>/env.sh`, `install/setup.sh`, and the rclcpp
prefix for the rclcpp rows).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import machine  # noqa: E402
from scenarios import arguments, executor_arguments, node_for  # noqa: E402

SCENARIO = 'action_idle'
SECONDS = 10
SAMPLE_AT_S = 3.5
WINDOW_S = 5.0


def snapshot(pid: int) -> dict[int, tuple[str, int, int]]:
    """Each thread's name, CPU nanoseconds and times scheduled in (schedstat)."""
    threads = {}
    for task in Path(f'/proc/{pid}/task').iterdir():
        try:
            name = (task / 'comm').read_text().strip()
            cpu_ns, _waited_ns, runs = map(int, (task / 'schedstat').read_text().split())
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
        threads[int(task.name)] = (name, cpu_ns, runs)
    return threads


def run_once(node: Path, executor: str) -> dict:
    cmd = [str(node), *executor_arguments(executor), *arguments(SCENARIO),
           '--seconds', str(SECONDS)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as process:
        time.sleep(SAMPLE_AT_S)
        before = snapshot(process.pid)
        time.sleep(WINDOW_S)
        after = snapshot(process.pid)
        out, err = process.communicate(timeout=120)
    threads = [
        {'name': name, 'cpu_ms': round((cpu - before[tid][1]) / 1e6, 3),
         'runs': runs - before[tid][2]}
        for tid, (name, cpu, runs) in sorted(after.items())
        if tid in before and runs > before[tid][2]
    ]
    run = {'executor': executor, 'command': shlex.join(cmd), 'threads': threads}
    if process.returncode != 0:
        run['failed'] = err.strip().splitlines()[-1] if err.strip() else \
            f'exit status {process.returncode}'
    else:
        run['report'] = json.loads(out.strip().splitlines()[-1])
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--executors', default='rclrs_tokio,rclrs_basic,rclcpp_events')
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--output-dir', type=Path, required=True)
    args = parser.parse_args(argv)

    runs = []
    for repetition in range(args.runs):
        for executor in args.executors.split(','):
            node, why = node_for(SCENARIO, executor)
            if node is None:
                runs.append({'executor': executor, 'absent': why})
                continue
            run = run_once(node, executor)
            run['repetition'] = repetition + 1
            runs.append(run)
            summary = run.get('failed') or 'idle_cpu_pct {}'.format(
                run['report'].get('idle_cpu_pct'))
            print(f'{executor:<16} run {repetition + 1}: {summary}; threads that ran: '
                  + ', '.join(f"{t['name']} {t['runs']}" for t in run['threads']), flush=True)
    document = {
        'machine': machine(),
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
        'command': shlex.join(['benchmarks/harness/idle_threads.py', *(argv or sys.argv[1:])]),
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'method': {'scenario': SCENARIO, 'seconds': SECONDS, 'sample_at_s': SAMPLE_AT_S,
                   'window_s': WINDOW_S,
                   'threads': 'those scheduled in during the window, from schedstat'},
        'runs': runs,
    }
    args.output_dir.mkdir(parents=True, exist_ok=True)
    out = args.output_dir / 'idle_threads.json'
    out.write_text(json.dumps(document, indent=2) + '\n')
    print(f'wrote {out}')
    return 1 if any('failed' in run for run in runs) else 0


if __name__ == '__main__':
    sys.exit(main())
