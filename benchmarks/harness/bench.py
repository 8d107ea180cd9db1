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
# Timer scenarios run `timer_node` instead (steady-clock rate, and sim time via /clock).
TIMER_SCENARIOS = {
    'timer_1kHz': ['--rate-hz', '1000'],
    'timer_10kHz': ['--rate-hz', '10000'],
    'simtime_10x': ['--sim-speed', '10', '--period-s', '1'],
    'simtime_1x': ['--sim-speed', '1', '--period-s', '0.1'],
    'simtime_0_1x': ['--sim-speed', '0.1', '--period-s', '0.01'],
    'simtime_paused': ['--sim-speed', '0', '--period-s', '0.1'],
}
TIMER_EXECUTORS = ['rclrs_tokio', 'rclrs_basic']
QUICK = ['throughput_0B', 'throughput_64KB', 'latency_1kHz', 'cpu_10kHz',
         'throughput_0B_worker', 'cpu_10kHz_worker', *TIMER_SCENARIOS]
RUST_EXECUTORS = ['rclrs_tokio', 'rclrs_basic', 'raw_rcl']
METRICS = ['received_per_s', 'sent_per_s', 'dropped', 'drop_pct', 'cpu_process_pct',
           'cpu_executor_pct', 'latency_p50_us', 'latency_p99_us', 'latency_p999_us',
           'latency_max_us', 'timer_rate_hz', 'timer_jitter_p50_us', 'timer_jitter_p99_us',
           'timer_jitter_max_us', 'fires', 'expected_fires']
# What the console table shows per scenario, and whether higher is better.
HEADLINE = {}
for _name in SCENARIOS:
    if _name.startswith('throughput'):
        HEADLINE[_name] = ('received_per_s', True)
    elif _name.startswith('latency'):
        HEADLINE[_name] = ('latency_p99_us', False)
    elif _name.startswith('cpu'):
        HEADLINE[_name] = ('cpu_executor_pct', False)
for _name in TIMER_SCENARIOS:
    HEADLINE[_name] = ('timer_rate_hz', True) if _name.startswith('timer') else ('fires', True)


def find_installed(name: str) -> Path:
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        candidate = Path(prefix) / 'lib' / 'rclrs_tokio_benchmarks' / name
        if candidate.is_file():
            return candidate
    sys.exit(f'bench: {name} is not installed; run `make bench` (it builds first)')


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


def run_one(scenario: str, executor: str, seconds: float, warmup: float) -> dict:
    if scenario in TIMER_SCENARIOS:
        cmd = [str(find_installed('timer_node')), '--executor', executor,
               *TIMER_SCENARIOS[scenario], '--seconds', str(seconds)]
    else:
        cmd = [str(find_installed('bench_node')), '--executor', executor, *SCENARIOS[scenario],
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
        if scenario.startswith('simtime') or scenario.startswith('timer'):
            extra = 'expected_fires' if scenario.startswith('simtime') else 'timer_jitter_p99_us'
            vals = [by.get((scenario, e), {}).get('metrics', {}).get(extra) for e in executors]
            lines.append(f'{"":<18} {extra:<18}' + ''.join(
                f'{v:>22.1f}' if v is not None else f'{"absent":>22}' for v in vals))
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
    chosen = args.scenarios or ','.join(
        [*SCENARIOS, *TIMER_SCENARIOS] if args.full else QUICK)
    scenarios = [s for s in chosen.split(',') if s]
    executors = [e for e in args.executors.split(',') if e]
    unknown = [s for s in scenarios if s not in SCENARIOS and s not in TIMER_SCENARIOS]
    if unknown:
        parser.error(f'unknown scenarios: {unknown}; '
                     f'known: {list(SCENARIOS) + list(TIMER_SCENARIOS)}')

    samples: dict[tuple[str, str], list[dict]] = {}
    def executors_for(scenario: str) -> list[str]:
        if scenario in TIMER_SCENARIOS:
            return [e for e in executors if e in TIMER_EXECUTORS]
        return executors

    total = reps * sum(len(executors_for(s)) for s in scenarios)
    done = 0
    started = time.monotonic()
    for rep in range(reps):
        for scenario in scenarios:
            chosen_executors = executors_for(scenario)
            shift = rep % len(chosen_executors)
            order = chosen_executors[shift:] + chosen_executors[:shift]
            for executor in order:
                load = load_average()
                result = run_one(scenario, executor, seconds, args.warmup)
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
