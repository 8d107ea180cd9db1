#!/usr/bin/env python3
"""The benchmark harness: the same workloads for every executor, side by side, in one run.

    bench.py [--quick | --full] [--reps N] [--seconds S] [--warmup S]
             [--scenarios a,b] [--executors x,y] [--output-dir benchmarks/results/latest]

Method:
- every (scenario, executor) pair runs in its own process (the Rust `bench_node` /
  `timer_node`, or the C++ `bench_node_cpp` / `timer_node_cpp` for rclcpp), with a
  warm-up before the measured window; an `_xproc` scenario runs the executor under test
  in a subscriber process (`--role sub`) and the same Rust publisher process
  (`bench_node --role pub`) for every executor, and joins their reports (robot_mix's
  per stream); a `two_hosts_*` scenario puts the two processes in two network namespaces
  joined by a link the harness makes and removes (two_hosts.py, root only);
- repetitions are interleaved: each repetition runs every executor of a scenario, in an
  order rotated per repetition, so slow drift of the machine hits every executor alike;
- each metric is the median over repetitions, with min and max; each executor's
  headline is also divided by the reference's in the same repetition, and those paired
  ratios are reported with their spread (a ratio of medians hides how often it held);
- the load average before each run is recorded as a foreign-load indicator;
- executors whose nodes are not installed (rclcpp where no ROS install provides it) are
  reported as absent, with the reason. Nothing is ever estimated in their place.

Writes latest.json (machine, rmw, command, method, runs), latest.csv, latest.md and PNG
plots into the output directory (by default benchmarks/results/latest/, which git
ignores: a run becomes a host's curated set only when it is copied to
benchmarks/results/<host>/), and prints a table of ratios against rclcpp_events (or
rclrs_basic when rclcpp is absent).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import json
import os
import platform
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import report  # noqa: E402
import two_hosts  # noqa: E402
from scenarios import (  # noqa: E402
    DEFAULT_EXECUTORS, EXECUTORS, EXIT_NOT_AVAILABLE, FULL, NEEDS_ROOT, QUICK, SCENARIOS,
    XPROC_PUBLISHER,
    applicable, arguments, environment, executor_arguments, find_installed, headline,
    node_for,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / 'benchmarks' / 'results' / 'latest'
METRICS = ['received_per_s', 'sent_per_s', 'dropped', 'drop_pct', 'queued_at_close',
           'cpu_process_pct',
           'cpu_executor_pct', 'latency_p50_us', 'latency_p99_us', 'latency_p999_us',
           'latency_max_us', 'timer_rate_hz', 'timer_jitter_p50_us', 'timer_jitter_p99_us',
           'timer_jitter_max_us', 'fires', 'expected_fires', 'idle_cpu_pct',
           'idle_process_cpu_pct', 'per_message_us',
           'receive_cpu_pct', 'receive_cpu_per_msg_us', 'context_switches_per_msg',
           'fanout_taken', 'fanout_dropped', 'lost', 'control_latency_p50_us',
           'control_latency_p99_us', 'control_latency_p999_us', 'control_latency_max_us',
           'burn_rate_hz', 'burn_offered_hz', 'idle_threads', 'threads']
# The figures of each stream of a run with several (robot_mix's `streams`).
STREAM_METRICS = ['sent', 'received', 'lost', 'received_per_s', 'latency_p50_us',
                  'latency_p99_us', 'latency_p999_us', 'latency_max_us']


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
    commit = source_commit()
    return {
        'cpu': cpu,
        'cores': os.cpu_count(),
        'memory_gib': round(mem_kib / 2**20, 1),
        'kernel': platform.release(),
        'ros_distro': os.environ.get('ROS_DISTRO', ''),
        'python': platform.python_version(),
        'commit': commit,
        # The harness never pins on its own (two cores leave none to spare for keeping the
        # publisher, the executor and the middleware apart; runs are interleaved instead),
        # but a run started under `taskset` says so: its nodes inherit the CPUs allowed.
        'cpus_allowed': sorted(os.sched_getaffinity(0)),
        'pinned_cpus': len(os.sched_getaffinity(0)) < (os.cpu_count() or 1),
    }


def source_commit() -> str:
    """The checkout's short commit, or the one a benchmark bundle was made from (its
    COMMIT file); 'unknown' without either, which never stops results from being saved."""
    recorded = Path(__file__).resolve().parent / 'COMMIT'
    if recorded.is_file():
        return recorded.read_text().strip() or 'unknown'
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                              capture_output=True, text=True, timeout=10).stdout.strip() \
            or 'unknown'
    except (OSError, subprocess.SubprocessError):
        return 'unknown'


def load_average() -> float:
    try:
        return float(Path('/proc/loadavg').read_text().split()[0])
    except OSError:
        return -1.0


def _result(proc, cmd) -> dict:
    """The node's JSON line, or the reason it has none."""
    if proc.returncode == EXIT_NOT_AVAILABLE:
        raise NotAvailable(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip()
                           else 'not available in the installed library')
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{')]
    # Fast DDS colours its log, on stderr (Fast DDS 3) or stdout (Fast DDS 2).
    plain = re.sub(r'\x1b\[[0-9;]*m', '', f'{proc.stdout}\n{proc.stderr}')
    refused = [line for line in plain.splitlines() if 'XMLPARSER Error' in line]
    if refused:
        # Fast DDS goes on with its defaults, so the row would measure something else.
        raise RuntimeError(f'{" ".join(map(str, cmd))}: Fast DDS refused the scenario\'s '
                           f'XML profile: {refused[0].strip()}')
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f'{" ".join(map(str, cmd))} failed ({proc.returncode}): '
                           f'{proc.stderr.strip()[-400:]}')
    return json.loads(lines[-1])


def _death_signal_setter():
    """A function that, called in a child between fork and exec, has the kernel kill the
    child when the harness dies, however it dies (a `finally` block does not run when the
    harness is killed); `None` off Linux. Looked up here, in the parent, so the child
    only makes the one call."""
    if not sys.platform.startswith('linux'):
        return None
    prctl = ctypes.CDLL(None).prctl
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL)


_DIE_WITH_PARENT = _death_signal_setter()


@contextlib.contextmanager
def cpu_burners(count: int):
    """`count` processes that each keep one core busy, at normal priority, for as long
    as the block runs, or the harness does: a harness killed during a contended row
    (SIGTERM, SIGKILL) used to leave them burning both cores."""
    burners = [subprocess.Popen([sys.executable, '-c', 'while True: pass'],
                                preexec_fn=_DIE_WITH_PARENT)
               for _ in range(count)]
    try:
        yield burners
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()


# The two-namespace links of this run (two_hosts.py), made when a row first needs one.
LINKS = two_hosts.Links(_DIE_WITH_PARENT)


def run_one(node: Path, scenario: str, executor: str, seconds: float, warmup: float) -> dict:
    if SCENARIOS[scenario].contended:
        with cpu_burners(os.cpu_count() or 1):
            return run_uncontended(node, scenario, executor, seconds, warmup)
    return run_uncontended(node, scenario, executor, seconds, warmup)


def run_uncontended(node: Path, scenario: str, executor: str, seconds: float,
                    warmup: float) -> dict:
    if SCENARIOS[scenario].kind == 'xproc':
        return run_xproc(node, scenario, executor, seconds, warmup)
    cmd = [str(node), *executor_arguments(executor), *arguments(scenario, executor),
           '--seconds', str(seconds)]
    if SCENARIOS[scenario].kind != 'timer':
        cmd += ['--warmup-s', str(warmup)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + warmup + 120,
                          env=environment(scenario))
    return _result(proc, cmd)


_topics = iter(range(1_000_000))


def run_xproc(node: Path, scenario: str, executor: str, seconds: float, warmup: float) -> dict:
    """The executor under test in a subscriber process, and the same Rust publisher
    process for every executor; their two reports joined into one. With a link
    (two_hosts_*), each process in a network namespace of its own."""
    topic = f'bench_xproc_{os.getpid()}_{next(_topics)}'
    common = ['--topic', topic, '--seconds', str(seconds), '--warmup-s', str(warmup)]
    # Over the lossy link a 1 MB stream can be held back by repairs for a second or more:
    # the subscriber waits longer before it takes the stream for ended, and the publisher
    # goes on longer after its window.
    lossy = SCENARIOS[scenario].link == 'netem'
    sub_cmd = [str(node), *executor_arguments(executor), *arguments(scenario, executor),
               *common, '--role', 'sub', '--idle-exit-s', '3' if lossy else '0.5']
    pub_cmd = [str(find_installed(*XPROC_PUBLISHER)), '--executor', 'rclrs_tokio',
               *arguments(scenario), *common, '--role', 'pub',
               '--publish-tail-s', '3' if lossy else '1']
    sub_env = pub_env = environment(scenario)
    link_kind = SCENARIOS[scenario].link
    if link_kind:
        try:
            link = LINKS.get(link_kind)
        except OSError as why:
            raise NotAvailable(str(why)) from why
        sub_cmd, pub_cmd = link.command('sub', sub_cmd), link.command('pub', pub_cmd)
        sub_env, pub_env = link.environment('sub', sub_env), link.environment('pub', pub_env)
    timeout = seconds + warmup + 120
    with subprocess.Popen(sub_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=sub_env) as sub:
        try:
            sub.wait(timeout=0.2)  # an executor this rclcpp lacks exits at once
        except subprocess.TimeoutExpired:
            pass
        pub = None
        if sub.returncode is None:
            pub = subprocess.run(pub_cmd, capture_output=True, text=True, timeout=timeout,
                                 env=pub_env)
        try:
            out, err = sub.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            sub.kill()
            out, err = sub.communicate()
    received = _result(subprocess.CompletedProcess(sub_cmd, sub.returncode, out, err), sub_cmd)
    if pub is None:
        raise RuntimeError(f'{" ".join(sub_cmd)} ended before the publisher started')
    sent = _result(pub, pub_cmd)
    if link_kind:
        received['link'] = link.kind
    if received.get('workload') == 'robot_mix':
        return join_streams(received, sent)
    expected = sent['sent'] * received.get('subscriptions', 1)
    dropped = max(0, expected - received['received'])
    received.update(sent=expected, dropped=dropped, sent_per_s=sent['sent_per_s'],
                    drop_pct=round(100.0 * dropped / max(expected, 1), 2))
    return received


def join_streams(received: dict, sent: dict) -> dict:
    """robot_mix: the subscriber's `streams` (what arrived) joined with the drivers'
    (what was sent, and the calls they made): each stream's `lost` (sent and never
    arrived; for a call, never answered), and the run's `lost`, `dropped` and `drop_pct`
    over every stream."""
    streams = {}
    for name, driven in sent['streams'].items():
        heard = received['streams'].get(name, {})
        # A call's answers are counted where the call is made, in the drivers' process.
        stream = {**heard, **driven}
        stream['lost'] = max(0, stream['sent'] - stream.get('received', 0))
        streams[name] = stream
    lost = sum(s['lost'] for s in streams.values())
    expected = sum(s['sent'] for s in streams.values())
    received.update(streams=streams, lost=lost, dropped=lost, sent=expected,
                    drop_pct=round(100.0 * lost / max(expected, 1), 2))
    return received


def _rounded(value: float) -> float:
    """Two decimals, or three significant digits below 1 (idle CPU is a few 0.01 %)."""
    return round(value, 2) if abs(value) >= 1 else float(f'{value:.3g}')


def summarise(samples: list[dict]) -> tuple[dict, dict]:
    metrics, spread = {}, {}
    for key in METRICS:
        values = [s[key] for s in samples if s.get(key) is not None]
        if values:
            metrics[key] = _rounded(statistics.median(values))
            spread[key] = [_rounded(min(values)), _rounded(max(values))]
        else:
            metrics[key] = None
    # Histograms: the counts of every repetition added up.
    histograms = [s['timer_jitter_hist'] for s in samples if s.get('timer_jitter_hist')]
    if histograms:
        metrics['timer_jitter_hist'] = [sum(column) for column in zip(*histograms)]
    # Several streams (robot_mix): each stream's figures, the median over repetitions.
    mixed = [s['streams'] for s in samples if s.get('streams')]
    if mixed:
        metrics['streams'] = {
            name: {key: _rounded(statistics.median(m[name][key] for m in mixed))
                   for key in STREAM_METRICS
                   if all(m.get(name, {}).get(key) is not None for m in mixed)}
            for name in mixed[0]}
    # Two namespaces: the link the rows ran over, as the first repetition reported it.
    links = [s['link'] for s in samples if s.get('link')]
    if links:
        metrics['link'] = links[0]
    # A subscriber process's CPU per thread name, as the first repetition reported it
    # (which of the middleware's threads received: UDP, shared memory).
    threads = [s['thread_cpu_pct'] for s in samples if s.get('thread_cpu_pct')]
    if threads:
        metrics['thread_cpu_pct'] = threads[0]
    # Dedicated Workers: what their threads got (affinity, SCHED_FIFO), as the first
    # repetition reported it.
    placed = [s['dedicated'] for s in samples if s.get('dedicated')]
    if placed:
        metrics['dedicated'] = placed[0]
    # Stage tracing: each stage's quantiles, the median over repetitions.
    traced = [s['stages'] for s in samples if s.get('stages')]
    if traced:
        metrics['stages'] = {
            stage: {q: round(statistics.median(t[stage][q] for t in traced), 2)
                    for q in ('p50_us', 'p99_us', 'p999_us', 'max_us')}
            for stage in traced[0]}
    return metrics, spread


def scenario_list() -> str:
    """Every scenario's name, wrapped, for --help."""
    import textwrap
    return 'scenarios (--scenarios; --full runs them all):\n' + textwrap.fill(
        ', '.join(SCENARIOS), width=88, initial_indent='  ', subsequent_indent='  ',
        break_on_hyphens=False)


def main(argv=None) -> int:
    try:
        return run_harness(argv)
    finally:
        LINKS.close()


def run_harness(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, epilog=scenario_list(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='the default set (make bench)')
    parser.add_argument('--full', action='store_true',
                        help='every scenario, 3 s windows after 1 s of warm-up')
    parser.add_argument('--reps', type=int, default=3, help='repetitions (default 3)')
    parser.add_argument('--seconds', type=float,
                        help='measured window (default 1, --full 3)')
    parser.add_argument('--warmup', type=float,
                        help='warm-up before the window (default 0.5, --full 1)')
    parser.add_argument('--scenarios', help='comma-separated (default: the quick set)')
    parser.add_argument('--executors', default=','.join(DEFAULT_EXECUTORS),
                        help='comma-separated (default: all but the variants, such as '
                             'rclrs_tokio_traced; missing ones are reported absent)')
    parser.add_argument('--output-dir', type=Path, default=RESULTS)
    parser.add_argument('--no-plots', action='store_true')
    parser.add_argument('--update', action='store_true',
                        help='replace only these scenarios\' rows in the existing latest.json '
                             'of the output directory (the run is recorded under "updates")')
    args = parser.parse_args(argv)
    reps = args.reps
    seconds = args.seconds or (3.0 if args.full else 1.0)
    warmup = args.warmup if args.warmup is not None else (1.0 if args.full else 0.5)
    scenarios = [s for s in (args.scenarios or ','.join(FULL if args.full else QUICK)).split(',')
                 if s]
    executors = [e for e in args.executors.split(',') if e]
    unknown = [s for s in scenarios if s not in FULL] + [e for e in executors if e not in EXECUTORS]
    if unknown:
        parser.error(f'unknown scenarios or executors: {unknown}')

    if NEEDS_ROOT.intersection(scenarios) and os.geteuid() != 0:
        print('note: ' + ', '.join(sorted(NEEDS_ROOT.intersection(scenarios))) + ' asks for '
              'SCHED_FIFO, which needs root (or CAP_SYS_NICE): not root, so those rows run at '
              'normal priority (their "dedicated" object says "refused")', file=sys.stderr)

    # Which pairs can run, and why the others cannot.
    plan: dict[str, list[tuple[str, Path]]] = {}
    absent: dict[tuple[str, str], str] = {}
    no_namespaces = two_hosts.unavailable()
    for scenario in scenarios:
        plan[scenario] = []
        for executor in executors:
            if not applicable(scenario, executor):
                continue
            node, why = node_for(scenario, executor)
            if node is not None and SCENARIOS[scenario].link and no_namespaces:
                node, why = None, no_namespaces
            if node is not None:
                plan[scenario].append((executor, node))
            else:
                absent[(scenario, executor)] = why

    samples: dict[tuple[str, str], list[dict]] = {}
    failures: list[str] = []
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
                    result = run_one(node, scenario, executor, seconds, warmup)
                except NotAvailable as why:
                    absent[(scenario, executor)] = str(why)
                    continue
                except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
                    # One failed run does not end the others; it is reported, and the
                    # harness exits non-zero.
                    failures.append(f'{scenario} {executor} rep {rep + 1}: {error}')
                    print(f'[{done:>3}/{total}] rep {rep + 1} {scenario:<20} {executor:<18} '
                          f'FAILED: {str(error)[-300:]}', flush=True)
                    continue
                result['load_before'] = load
                result['rep'] = rep + 1
                samples.setdefault((scenario, executor), []).append(result)
                metric, _ = headline(scenario)
                print(f'[{done:>3}/{total}] rep {rep + 1} {scenario:<20} {executor:<18} '
                      f'{metric}={result.get(metric)} load={load:.2f} '
                      f'({time.monotonic() - started:.0f}s)', flush=True)

    runs = []
    for (scenario, executor), group in samples.items():
        metrics, spread = summarise(group)
        metric, _ = headline(scenario)
        runs.append({'scenario': scenario, 'executor': executor, 'reps': len(group),
                     'metrics': metrics, 'spread': spread,
                     'load_before': [g['load_before'] for g in group],
                     # For ratios taken repetition by repetition (report.paired_ratios).
                     'headline_by_rep': {str(g['rep']): g.get(metric) for g in group}})
    for (scenario, executor), why in absent.items():
        runs.append({'scenario': scenario, 'executor': executor, 'reps': 0,
                     'metrics': None, 'absent': why})
    for scenario, pairs in plan.items():
        for executor, _ in pairs:
            if (scenario, executor) not in samples and (scenario, executor) not in absent:
                why = next(f for f in failures if f.startswith(f'{scenario} {executor} '))
                runs.append({'scenario': scenario, 'executor': executor, 'reps': 0,
                             'metrics': None, 'failed': why})
    out = args.output_dir
    command = ' '.join(shlex.quote(a) for a in
                       ['benchmarks/harness/bench.py', *(argv or sys.argv[1:])])
    previous = None
    if args.update and (out / 'latest.json').is_file():
        previous = json.loads((out / 'latest.json').read_text())
        runs += [r for r in previous['runs'] if r['scenario'] not in scenarios]
    order = {s: i for i, s in enumerate(FULL)}
    executor_order = {e: i for i, e in enumerate(EXECUTORS)}
    runs.sort(key=lambda r: (order[r['scenario']], executor_order[r['executor']]))
    document = {
        'machine': machine(),
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
        'command': command,
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'method': {'reps': reps, 'window_s': seconds, 'warmup_s': warmup,
                   'interleaved': True,
                   'statistic': 'median, spread [min, max]; paired ratios per repetition',
                   'process': 'one process per run (publisher thread + executor threads); '
                              '_xproc: the executor under test in a subscriber process and '
                              'the same Rust publisher process for every executor'},
        'runs': runs,
        'failures': failures,
    }
    if previous is not None:
        # The original run's description stays; this one is recorded as an update.
        update = {k: document[k] for k in ('command', 'date', 'method', 'failures')}
        update.update(scenarios=scenarios, commit=document['machine']['commit'])
        document = {**previous, 'runs': runs,
                    'updates': [*previous.get('updates', []), update]}
    out.mkdir(parents=True, exist_ok=True)
    # The JSON first: a later step that fails (a plot, say) loses nothing measured.
    (out / 'latest.json').write_text(json.dumps(document, indent=2) + '\n')
    report.write_csv(runs, out / 'latest.csv')
    report.write_markdown(document, out / 'latest.md')
    if args.no_plots:
        plots, no_plots = [], ' (no plots: --no-plots)'
    elif not report.have_matplotlib():
        plots, no_plots = [], ' (no plots: matplotlib missing)'
    else:
        try:
            plots, no_plots = report.write_plots(runs, out), ' (no plots)'
        except Exception as error:  # noqa: BLE001 - the results are saved; say why not
            plots, no_plots = [], f' (plots failed: {error})'
            failures.append(f'plots: {error}')
    print()
    print(report.table(runs))
    print(f'\nwrote {out}/latest.json, latest.csv, latest.md'
          + (f' and {len(plots)} plots' if plots else no_plots))
    if failures:
        print(f'\n{len(failures)} run(s) failed:', *failures, sep='\n  ', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
