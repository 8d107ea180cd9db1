#!/usr/bin/env python3
"""The benchmark harness: the same workloads for every executor, side by side, in one run.

    bench.py [--quick | --full] [--reps N] [--seconds S] [--scenarios a,b] [--executors x,y]
             [--output benchmarks/results/latest.json]

Method:
- every (scenario, executor) pair runs in its own process (`bench_node`), with a warm-up
  before the measured window;
- repetitions are interleaved: rep 1 runs every executor of a scenario, then rep 2 does
  again in rotated order, so slow drift of the machine hits every executor alike;
- each metric is reported as the median over repetitions, with min and max;
- the load of the machine before each run is recorded as a foreign-load indicator.

Prints a progress line per run, then a table with each executor's ratio to the reference
(`rclcpp_events` when it ran, else `rclrs_basic`), and writes the JSON results.
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

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / 'benchmarks' / 'results'

# name -> bench_node arguments. Names continue across the project's issues. The plain
# scenarios use node-level callbacks (`node.create_subscription`, as in the rclcpp
# anchors); the `_worker` variants use a Worker's subscription instead.
_RELIABLE_1000 = ['--reliability', 'reliable', '--depth', '1000']
SCENARIOS = {
    'throughput_0B': ['--payload', '0', *_RELIABLE_1000, '--rate-hz', '0'],
    'throughput_64KB': ['--payload', '65536', *_RELIABLE_1000, '--rate-hz', '0'],
    'latency_1kHz': ['--payload', '0', *_RELIABLE_1000, '--rate-hz', '1000', '--latency'],
    'cpu_10kHz': ['--payload', '0', *_RELIABLE_1000, '--rate-hz', '10000'],
}
for _name in list(SCENARIOS):
    SCENARIOS[f'{_name}_worker'] = [*SCENARIOS[_name], '--callback', 'worker']
    SCENARIOS[_name] = [*SCENARIOS[_name], '--callback', 'node']
QUICK = ['throughput_0B', 'throughput_64KB', 'latency_1kHz', 'cpu_10kHz',
         'throughput_0B_worker', 'cpu_10kHz_worker']
RUST_EXECUTORS = ['rclrs_tokio', 'rclrs_basic', 'raw_rcl']
METRICS = ['received_per_s', 'sent_per_s', 'dropped', 'drop_pct', 'cpu_process_pct',
           'cpu_executor_pct', 'latency_p50_us', 'latency_p99_us', 'latency_p999_us',
           'latency_max_us']
# What the console table shows per scenario, and whether higher is better.
HEADLINE = {}
for _name in SCENARIOS:
    if _name.startswith('throughput'):
        HEADLINE[_name] = ('received_per_s', True)
    elif _name.startswith('latency'):
        HEADLINE[_name] = ('latency_p99_us', False)
    elif _name.startswith('cpu'):
        HEADLINE[_name] = ('cpu_executor_pct', False)


def find_bench_node() -> Path:
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        candidate = Path(prefix) / 'lib' / 'rclrs_tokio_benchmarks' / 'bench_node'
        if candidate.is_file():
            return candidate
    sys.exit('bench: bench_node is not installed; run `make bench` (it builds first)')


def machine() -> dict:
    cpu = 'unknown'
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    mem_kib = 0
    try:
        for line in Path('/proc/meminfo').read_text().splitlines():
            if line.startswith('MemTotal:'):
                mem_kib = int(line.split()[1])
    except OSError:
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
        'pinned_cpus': False,
    }


def load_average() -> float:
    try:
        return float(Path('/proc/loadavg').read_text().split()[0])
    except OSError:
        return -1.0


def run_one(bench_node: Path, scenario: str, executor: str, seconds: float,
            warmup: float) -> dict:
    cmd = [str(bench_node), '--executor', executor, *SCENARIOS[scenario],
           '--seconds', str(seconds), '--warmup-s', str(warmup)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + warmup + 120)
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


def table(runs: list[dict]) -> str:
    by = {(r['scenario'], r['executor']): r for r in runs}
    executors = [e for e in ['rclrs_tokio', 'rclrs_basic', 'raw_rcl', 'rclcpp_events',
                             'rclcpp_single', 'rclcpp_multi', 'rclcpp_events_cbg']
                 if any(r['executor'] == e for r in runs)]
    reference = 'rclcpp_events' if 'rclcpp_events' in executors else 'rclrs_basic'
    lines = [f'reference for ratios: {reference}', '']
    header = f'{"scenario":<18} {"metric":<18}' + ''.join(f'{e:>22}' for e in executors)
    lines += [header, '-' * len(header)]
    for scenario in dict.fromkeys(r['scenario'] for r in runs):
        metric, _higher = HEADLINE.get(scenario, ('received_per_s', True))
        ref = by.get((scenario, reference), {}).get('metrics', {}).get(metric)
        cells = []
        for e in executors:
            value = by.get((scenario, e), {}).get('metrics', {}).get(metric)
            if value is None:
                cells.append(f'{"absent":>22}')
                continue
            ratio = f' ({value / ref:.2f}x)' if ref else ''
            cells.append(f'{value:>12.1f}{ratio:>10}')
        lines.append(f'{scenario:<18} {metric:<18}' + ''.join(cells))
        drops = [by.get((scenario, e), {}).get('metrics', {}).get('drop_pct') for e in executors]
        if scenario.startswith('throughput'):
            lines.append(f'{"":<18} {"drop_pct":<18}' + ''.join(
                f'{d:>22.2f}' if d is not None else f'{"absent":>22}' for d in drops))
    return '\n'.join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='the default set (make bench)')
    parser.add_argument('--full', action='store_true', help='longer windows, 5 repetitions')
    parser.add_argument('--reps', type=int)
    parser.add_argument('--seconds', type=float)
    parser.add_argument('--warmup', type=float, default=1.0)
    parser.add_argument('--scenarios', default=None,
                        help=f'comma-separated; default (quick): {",".join(QUICK)}; --full: all')
    parser.add_argument('--executors', default=','.join(RUST_EXECUTORS))
    parser.add_argument('--output', type=Path, default=RESULTS / 'latest.json')
    args = parser.parse_args(argv)
    reps = args.reps or (5 if args.full else 3)
    seconds = args.seconds or (10.0 if args.full else 3.0)
    chosen = args.scenarios or ','.join(SCENARIOS if args.full else QUICK)
    scenarios = [s for s in chosen.split(',') if s]
    executors = [e for e in args.executors.split(',') if e]
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        parser.error(f'unknown scenarios: {unknown}; known: {list(SCENARIOS)}')
    bench_node = find_bench_node()

    samples: dict[tuple[str, str], list[dict]] = {}
    total = reps * len(scenarios) * len(executors)
    done = 0
    started = time.monotonic()
    for rep in range(reps):
        for scenario in scenarios:
            order = executors[rep % len(executors):] + executors[:rep % len(executors)]
            for executor in order:
                load = load_average()
                result = run_one(bench_node, scenario, executor, seconds, args.warmup)
                result['load_before'] = load
                samples.setdefault((scenario, executor), []).append(result)
                done += 1
                headline, _ = HEADLINE.get(scenario, ('received_per_s', True))
                print(f'[{done:>3}/{total}] rep {rep + 1} {scenario:<16} {executor:<12} '
                      f'{headline}={result.get(headline)} drop%={result.get("drop_pct")} '
                      f'load={load:.2f} ({time.monotonic() - started:.0f}s)', flush=True)

    runs = []
    for (scenario, executor), group in samples.items():
        metrics, spread = summarise(group)
        runs.append({'scenario': scenario, 'executor': executor, 'reps': len(group),
                     'metrics': metrics, 'spread': spread,
                     'load_before': [g['load_before'] for g in group]})
    document = {
        'machine': machine(),
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
        'command': ' '.join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])]),
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'method': {'reps': reps, 'window_s': seconds, 'warmup_s': args.warmup,
                   'interleaved': True, 'statistic': 'median, [min, max]'},
        'runs': runs,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(document, indent=2) + '\n')
    print()
    print(table(runs))
    print(f'\nwrote {args.output}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
