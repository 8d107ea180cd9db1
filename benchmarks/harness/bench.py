#!/usr/bin/env python3
"""The benchmark harness: the same workloads for every executor, side by side, in one run.

    bench.py [--quick | --full] [--reps N] [--seconds S] [--warmup S]
             [--scenarios a,b] [--executors x,y] [--output-dir benchmarks/results]

Method:
- every (scenario, executor) pair runs in its own process (the Rust `bench_node` /
  `timer_node`, or the C++ `bench_node_cpp` / `timer_node_cpp` for rclcpp), with a
  warm-up before the measured window;
- repetitions are interleaved: each repetition runs every executor of a scenario, in an
  order rotated per repetition, so slow drift of the machine hits every executor alike;
- each metric is the median over repetitions, with min and max;
- the load average before each run is recorded as a foreign-load indicator;
- executors whose nodes are not installed (rclcpp where no ROS install provides it) are
  reported as absent, with the reason. Nothing is ever estimated in their place.

Writes latest.json (machine, rmw, command, method, runs), latest.csv, latest.md and PNG
plots into the output directory, and prints a table of ratios against rclcpp_events (or
rclrs_basic when rclcpp is absent).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import report  # noqa: E402
from scenarios import (  # noqa: E402
    EXECUTORS, EXIT_NOT_AVAILABLE, FULL, QUICK, TIMER_SCENARIOS, arguments, headline, node_for,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / 'benchmarks' / 'results'
METRICS = ['received_per_s', 'sent_per_s', 'dropped', 'drop_pct', 'cpu_process_pct',
           'cpu_executor_pct', 'latency_p50_us', 'latency_p99_us', 'latency_p999_us',
           'latency_max_us', 'timer_rate_hz', 'timer_jitter_p50_us', 'timer_jitter_p99_us',
           'timer_jitter_max_us', 'fires', 'expected_fires']


class NotAvailable(Exception):
    """The node says this executor is not in the installed library."""


def machine() -> dict:
    cpu = 'unknown'
    mem_kib = 0
    try:
        cpu = next(line.split(':', 1)[1].strip()
                   for line in Path('/proc/cpuinfo').read_text().splitlines()
                   if line.startswith('model name'))
        mem_kib = next(int(line.split()[1])
                       for line in Path('/proc/meminfo').read_text().splitlines()
                       if line.startswith('MemTotal:'))
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    return {
        'cpu': cpu,
        'cores': os.cpu_count(),
        'memory_gib': round(mem_kib / 2**20, 1),
        'kernel': platform.release(),
        'ros_distro': os.environ.get('ROS_DISTRO', ''),
        'python': platform.python_version(),
        'commit': commit,
        # Two cores leave no core to spare for pinning the publisher and the executor
        # apart from the middleware's threads; runs are interleaved instead.
        'pinned_cpus': False,
    }


def load_average() -> float:
    try:
        return float(Path('/proc/loadavg').read_text().split()[0])
    except OSError:
        return -1.0


def run_one(node: Path, scenario: str, executor: str, seconds: float, warmup: float) -> dict:
    cmd = [str(node), '--executor', executor, *arguments(scenario), '--seconds', str(seconds)]
    if scenario not in TIMER_SCENARIOS:
        cmd += ['--warmup-s', str(warmup)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + warmup + 120)
    if proc.returncode == EXIT_NOT_AVAILABLE:
        raise NotAvailable(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip()
                           else 'not available in the installed library')
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{')]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f'{" ".join(cmd)} failed ({proc.returncode}): '
                           f'{proc.stderr.strip()[-400:]}')
    return json.loads(lines[-1])


def summarise(samples: list[dict]) -> tuple[dict, dict]:
    metrics, spread = {}, {}
    for key in METRICS:
        values = [s[key] for s in samples if s.get(key) is not None]
        if values:
            metrics[key] = round(statistics.median(values), 2)
            spread[key] = [round(min(values), 2), round(max(values), 2)]
        else:
            metrics[key] = None
    return metrics, spread


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='the default set (make bench)')
    parser.add_argument('--full', action='store_true',
                        help='every scenario, 10 s windows, 5 repetitions')
    parser.add_argument('--reps', type=int, help='repetitions (default 3, --full 5)')
    parser.add_argument('--seconds', type=float, help='measured window (default 3, --full 10)')
    parser.add_argument('--warmup', type=float, default=1.0, help='warm-up before the window')
    parser.add_argument('--scenarios', help='comma-separated (default: the quick set)')
    parser.add_argument('--executors', default=','.join(EXECUTORS),
                        help='comma-separated (default: all; missing ones are reported absent)')
    parser.add_argument('--output-dir', type=Path, default=RESULTS)
    parser.add_argument('--no-plots', action='store_true')
    args = parser.parse_args(argv)
    reps = args.reps or (5 if args.full else 3)
    seconds = args.seconds or (10.0 if args.full else 3.0)
    scenarios = [s for s in (args.scenarios or ','.join(FULL if args.full else QUICK)).split(',')
                 if s]
    executors = [e for e in args.executors.split(',') if e]
    unknown = [s for s in scenarios if s not in FULL] + [e for e in executors if e not in EXECUTORS]
    if unknown:
        parser.error(f'unknown scenarios or executors: {unknown}')

    # Which pairs can run, and why the others cannot.
    plan: dict[str, list[tuple[str, Path]]] = {}
    absent: dict[tuple[str, str], str] = {}
    for scenario in scenarios:
        plan[scenario] = []
        for executor in executors:
            node, why = node_for(scenario, executor)
            if node is not None:
                plan[scenario].append((executor, node))
            elif 'no timer workload' not in why and 'no message workload' not in why:
                absent[(scenario, executor)] = why

    samples: dict[tuple[str, str], list[dict]] = {}
    total = reps * sum(len(pairs) for pairs in plan.values())
    done = 0
    started = time.monotonic()
    for rep in range(reps):
        for scenario in scenarios:
            pairs = plan[scenario]
            if not pairs:
                continue
            shift = rep % len(pairs)
            for executor, node in pairs[shift:] + pairs[:shift]:
                done += 1
                if (scenario, executor) in absent:
                    continue
                load = load_average()
                try:
                    result = run_one(node, scenario, executor, seconds, args.warmup)
                except NotAvailable as why:
                    absent[(scenario, executor)] = str(why)
                    continue
                result['load_before'] = load
                samples.setdefault((scenario, executor), []).append(result)
                metric, _ = headline(scenario)
                print(f'[{done:>3}/{total}] rep {rep + 1} {scenario:<20} {executor:<18} '
                      f'{metric}={result.get(metric)} load={load:.2f} '
                      f'({time.monotonic() - started:.0f}s)', flush=True)

    runs = []
    for (scenario, executor), group in samples.items():
        metrics, spread = summarise(group)
        runs.append({'scenario': scenario, 'executor': executor, 'reps': len(group),
                     'metrics': metrics, 'spread': spread,
                     'load_before': [g['load_before'] for g in group]})
    for (scenario, executor), why in absent.items():
        runs.append({'scenario': scenario, 'executor': executor, 'reps': 0,
                     'metrics': None, 'absent': why})
    order = {s: i for i, s in enumerate(scenarios)}
    executor_order = {e: i for i, e in enumerate(EXECUTORS)}
    runs.sort(key=lambda r: (order[r['scenario']], executor_order[r['executor']]))
    document = {
        'machine': machine(),
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
        'command': ' '.join(shlex.quote(a) for a in
                            ['benchmarks/harness/bench.py', *(argv or sys.argv[1:])]),
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'method': {'reps': reps, 'window_s': seconds, 'warmup_s': args.warmup,
                   'interleaved': True, 'statistic': 'median, spread [min, max]',
                   'process': 'one process per run: publisher thread + executor thread(s)'},
        'runs': runs,
    }
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / 'latest.json').write_text(json.dumps(document, indent=2) + '\n')
    report.write_csv(runs, out / 'latest.csv')
    report.write_markdown(document, out / 'latest.md')
    plots = [] if args.no_plots else report.write_plots(runs, out)
    print()
    print(report.table(runs))
    print(f'\nwrote {out}/latest.json, latest.csv, latest.md'
          + (f' and {len(plots)} plots' if plots else ' (no plots: matplotlib missing)'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
