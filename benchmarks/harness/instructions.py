#!/usr/bin/env python3
"""Instructions per message: a stream scenario under callgrind, for every executor.

    instructions.py [--scenarios cpu_10kHz] [--executors x,y] [--rate-hz 500]
                    [--window 10] [--warmup 15] [--output-dir DIR]

Why: time per message moves with the host. The same nodes gave 1.76x Events' throughput
on an Intel Xeon and 0.96-1.01x on an AMD EPYC, and a 10 kHz CPU ratio spreads by 15 %
from one repetition to the next. The instructions a message costs in user space do not
depend on the host, the load or the scheduler, so they say where an executor spends
its time in a way any machine can reproduce, and which part of a gap the code can
still win. They leave out what time adds: the kernel (futex waits, wake-ups), cache
misses and the CPU's speed. Use them beside the harness's timed rows, never instead.

Method: each executor's node runs the scenario (a `message` one, in one process) under
`valgrind --tool=callgrind --fair-sched=yes --separate-threads=yes`, at a low rate so
that valgrind keeps up (500 Hz by default: under callgrind a message costs about fifty
times as long).
valgrind's start-up (loading and instrumenting the middleware) takes seconds and varies
with the machine's load and page cache, so the harness first dumps once a second until
a dump shows the node publishing. After the warm-up from there it zeroes the counts
(`callgrind_control -z`), and after the window it dumps them (`callgrind_control -d`),
one file per thread. The messages of the window are the calls to `rcl_publish` counted
in the dump (to rclcpp's intra-process publish where a publisher never reaches rcl),
and each count is divided by them:
- `process`: every thread of the process;
- `publishing_thread`: the thread that publishes, which in one process also delivers
  the message to the reader and runs the push callback (or Events' enqueue, or the
  guard condition a wait set wakes on);
- `receive_side`: every other thread: the executor's threads, and the middleware's
  own, which stay idle in one process.
valgrind runs one thread at a time, so these counts hold whatever the core count. The
node runs with `ROS_AUTOMATIC_DISCOVERY_RANGE=OFF`: its subscriptions still match its
own publisher, and no other ROS process on the machine can add its discovery traffic to
the receive side (a first count beside the test suite, whose stress tests create
thousands of entities, put up to 19,000 more instructions a message there). The node's
own JSON line (received, drops) is kept beside them. Needs valgrind; without it
the run says so and exits 2.

Clock reads: beside the instructions, the calls to `clock_gettime` per message, on the
publishing thread and on the receive side. A read through the vDSO is about thirty
instructions, so the instruction counts barely see it, but on a VM it takes as long as
a few hundred (30 ns on the 2-core AMD EPYC host, measured with a loop of
`Instant::now()`; a mutex lock and unlock took 5 ns there, a histogram record 4 to 7 ns).
Counting the reads makes that part of a message's time visible too.

Writes instructions.json and instructions.md into the output directory.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import machine  # noqa: E402
from scenarios import (  # noqa: E402
    DEFAULT_EXECUTORS, EXECUTORS, SCENARIOS, applicable, arguments, executor_arguments,
    node_for,
)

ROOT = Path(__file__).resolve().parents[2]


def with_rate(args: list[str], rate_hz: int) -> list[str]:
    """The scenario's arguments with `--rate-hz` set to `rate_hz`."""
    out = list(args)
    if '--rate-hz' in out:
        out[out.index('--rate-hz') + 1] = str(rate_hz)
    else:
        out += ['--rate-hz', str(rate_hz)]
    return out


# What a publish calls once per message: rcl_publish, or, for rclcpp's intra-process
# communication (which never reaches rcl when every subscription is in the process), the
# intra-process manager.
RCL_PUBLISH = 'rcl_publish'
IPC_PUBLISH = 'rclcpp::experimental::IntraProcessManager::do_intra_process_publish<'
# glibc's clock read (which enters the vDSO); calls to it from inside it do not count.
CLOCK_READ = 'clock_gettime'


def parse_thread_dump(path: Path) -> dict:
    """One thread's dump: its total instructions, its clock reads and its publishes
    (calls to `rcl_publish`, else to rclcpp's intra-process publish). The publishing
    thread is the one that made some: in one process nothing else publishes, and a
    stripped node has no other name to tell it by."""
    names: dict[str, str] = {}
    total = 0
    publishes = 0
    ipc_publishes = 0
    clock_reads = 0
    caller = ''
    callee = None
    for line in path.read_text(errors='replace').splitlines():
        if line.startswith(('fn=', 'cfn=')):
            # Name compression: "(id) name" defines an id, "(id)" reuses it.
            match = re.match(r'c?fn=\((\d+)\)(?: (.*))?$', line)
            if not match:
                continue
            ident, name = match.groups()
            if name is not None:
                names[ident] = name
            name = names.get(ident, '')
            if line.startswith('cfn='):
                callee = name
            else:
                caller = name
        elif line.startswith('calls='):
            calls = int(line.split('=', 1)[1].split()[0])
            if callee == RCL_PUBLISH:
                publishes += calls
            elif callee is not None and IPC_PUBLISH in callee:
                ipc_publishes += calls
            elif (callee is not None and callee.startswith(CLOCK_READ)
                  and not caller.startswith(CLOCK_READ)):
                clock_reads += calls
            callee = None
        elif line.startswith(('summary:', 'totals:')):
            total = max(total, int(line.split(':', 1)[1].split()[0]))
    publishes = publishes or ipc_publishes
    return {'instructions': total, 'clock_reads': clock_reads, 'publishes': publishes,
            'publisher': publishes > 0}


# How long valgrind may take to start a node until it publishes (about 5 s on an idle
# 2-core machine).
START_LIMIT_S = 120


def control(proc: subprocess.Popen, vgdb_prefix: str, command: str):
    """`callgrind_control <command>` for the node `proc` (`-z` zeroes, `-d` dumps)."""
    return subprocess.run(['callgrind_control', vgdb_prefix, command, str(proc.pid)],
                          capture_output=True, text=True, timeout=60)


def publishing_dump(proc: subprocess.Popen, vgdb_prefix: str, work: Path) -> int:
    """Dump the counts once a second until a dump shows `proc` publishing; returns how
    many dumps that took."""
    dumps = 0
    deadline = time.monotonic() + START_LIMIT_S
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(1)
        if control(proc, vgdb_prefix, '-d').returncode != 0:
            continue
        dumps += 1
        dump = work.glob(f'cg.{proc.pid}.{dumps}-*')
        if any(parse_thread_dump(path)['publishes'] for path in dump):
            return dumps
    raise RuntimeError(f'the node did not publish within {START_LIMIT_S} s under callgrind '
                       f'(exit {proc.poll()})')


def measure(node: Path, scenario: str, executor: str, rate_hz: int, warmup: float,
            window: float, work: Path) -> dict:
    """One executor's counts for `scenario` (see the module docs)."""
    for old in [*work.glob('cg.*'), *work.glob('vgdb*')]:
        old.unlink()
    # The node's schedule starts with its first publish, as the warm-up here does.
    cmd = [str(node), *executor_arguments(executor), *with_rate(arguments(scenario), rate_hz),
           '--seconds', str(warmup + window + 5), '--warmup-s', '1']
    # The gdbserver pipes callgrind_control talks through go in `work` too, away from
    # those that valgrind runs killed earlier left in /tmp.
    vgdb_prefix = f'--vgdb-prefix={work}/vgdb'
    # valgrind runs one thread at a time. With its default lock a thread that keeps
    # running (a Fast DDS flow-controller thread resending the first samples) can hold
    # it for minutes while the main thread still creates the node's entities: seen in
    # about one start in five on a 2-core AMD host. The fair scheduler hands it round.
    valgrind = ['valgrind', '--tool=callgrind', '--fair-sched=yes', '--separate-threads=yes',
                '--dump-instr=no', vgdb_prefix, f'--callgrind-out-file={work}/cg.%p']
    # Discovery off: the node's own subscriptions still match its publisher, and no other
    # ROS process on the machine (a test suite, another count) adds its discovery traffic
    # to the middleware's threads, that is to the receive side.
    env = {**os.environ, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'OFF'}
    proc = subprocess.Popen(valgrind + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        window_dump = publishing_dump(proc, vgdb_prefix, work) + 1
        time.sleep(warmup)
        zeroed = control(proc, vgdb_prefix, '-z')
        time.sleep(window)
        dumped = control(proc, vgdb_prefix, '-d')
        out, err = proc.communicate(timeout=warmup + window + 120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        raise RuntimeError(f'{scenario} {executor}: the node did not end under callgrind '
                           f'within {warmup + window + 120:.0f} s: {err.strip()[-300:]}')
    except RuntimeError as error:
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        raise RuntimeError(f'{scenario} {executor}: {error}: {err.strip()[-300:]}') from None
    if zeroed.returncode != 0 or dumped.returncode != 0:
        raise RuntimeError(f'{scenario} {executor}: callgrind_control failed: '
                           f'{(zeroed.stderr + dumped.stderr).strip()[-300:]}')
    lines = [line for line in out.splitlines() if line.startswith('{')]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f'{scenario} {executor}: the node failed ({proc.returncode}): '
                           f'{err.strip()[-300:]}')
    # The dump at the end of the window: "cg.<pid>.<n>-<thread>", after the n - 1 dumps
    # that watched for the first publish (the final dump at exit has no number).
    threads = [parse_thread_dump(p)
               for p in sorted(work.glob(f'cg.{proc.pid}.{window_dump}-*'))]
    messages = sum(t['publishes'] for t in threads)
    node_report = json.loads(lines[-1])
    if not threads or messages == 0:
        raise RuntimeError(f'{scenario} {executor}: no message published in the window '
                           f'({len(threads)} thread dumps; the node received '
                           f'{node_report.get("received")} in its own window): '
                           f'{err.strip()[-300:]}')
    publishing = sum(t['instructions'] for t in threads if t['publisher'])
    process = sum(t['instructions'] for t in threads)
    clocks_publishing = sum(t['clock_reads'] for t in threads if t['publisher'])
    clocks = sum(t['clock_reads'] for t in threads)
    return {
        'scenario': scenario, 'executor': executor, 'messages': messages,
        'threads': len(threads),
        'per_message': {'process': round(process / messages),
                        'publishing_thread': round(publishing / messages),
                        'receive_side': round((process - publishing) / messages)},
        'clock_reads_per_message': {
            'publishing_thread': round(clocks_publishing / messages, 2),
            'receive_side': round((clocks - clocks_publishing) / messages, 2)},
        'node': {k: node_report.get(k) for k in ('received', 'drop_pct', 'received_per_s')},
        'command': ' '.join(shlex.quote(a) for a in valgrind + cmd),
    }


def markdown(document: dict) -> str:
    m = document['machine']
    lines = [
        '# Instructions per message (callgrind)', '',
        f'{m["cpu"]}, {m["cores"]} cores, kernel {m["kernel"]}; {document["rmw"]}; '
        f'commit {m["commit"]}; {document["date"]}.', '',
        f'Command: `{document["command"]}`', '',
        f'Rate {document["method"]["rate_hz"]} Hz, window {document["method"]["window_s"]} s '
        f'after {document["method"]["warmup_s"]} s from the first publish. User-space '
        'instructions only (no kernel, no cache misses): see '
        '`benchmarks/harness/instructions.py`.', '',
        '| scenario | executor | messages | process | publishing thread | receive side '
        '| clock reads: publishing thread | clock reads: receive side |',
        '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ]
    for run in document['runs']:
        if 'per_message' not in run:
            why = ' '.join(str(run.get('absent') or run.get('failed')).split())
            lines.append(f'| {run["scenario"]} | {run["executor"]} | '
                         f'{why[:160].replace("|", "/")} | | | | | |')
            continue
        p = run['per_message']
        c = run['clock_reads_per_message']
        lines.append(f'| {run["scenario"]} | {run["executor"]} | {run["messages"]} | '
                     f'{p["process"]:,} | {p["publishing_thread"]:,} | {p["receive_side"]:,} '
                     f'| {c["publishing_thread"]:.2f} | {c["receive_side"]:.2f} |')
    return '\n'.join(lines) + '\n'


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--scenarios', default='cpu_10kHz',
                        help='comma-separated message scenarios (default cpu_10kHz)')
    parser.add_argument('--executors', default=','.join(DEFAULT_EXECUTORS),
                        help='comma-separated; missing ones are reported absent')
    parser.add_argument('--rate-hz', type=int, default=500,
                        help='the publisher\'s rate under callgrind (default 500)')
    parser.add_argument('--warmup', type=float, default=15.0,
                        help='seconds from the first publish until the counts are '
                             'zeroed (default 15)')
    parser.add_argument('--window', type=float, default=10.0,
                        help='seconds counted (default 10)')
    parser.add_argument('--output-dir', type=Path, required=True)
    args = parser.parse_args(argv)
    scenarios = [s for s in args.scenarios.split(',') if s]
    executors = [e for e in args.executors.split(',') if e]
    unknown = [s for s in scenarios if SCENARIOS.get(s) is None or SCENARIOS[s].kind !=
               'message'] + [e for e in executors if e not in EXECUTORS]
    if unknown:
        parser.error(f'unknown executors, or scenarios that are not one-process streams: '
                     f'{unknown}')
    if args.rate_hz <= 0:
        parser.error('--rate-hz must be positive: an unthrottled stream under callgrind '
                     'measures valgrind, not the executor')
    if shutil.which('valgrind') is None or shutil.which('callgrind_control') is None:
        print('instructions.py needs valgrind (callgrind and callgrind_control)',
              file=sys.stderr)
        return 2
    runs, failures = [], []
    with tempfile.TemporaryDirectory(prefix='instructions_') as tmp:
        for scenario in scenarios:
            for executor in executors:
                if not applicable(scenario, executor):
                    continue
                node, why = node_for(scenario, executor)
                if node is None:
                    runs.append({'scenario': scenario, 'executor': executor, 'absent': why})
                    continue
                try:
                    run = measure(node, scenario, executor, args.rate_hz, args.warmup,
                                  args.window, Path(tmp))
                except (RuntimeError, OSError, json.JSONDecodeError) as error:
                    failures.append(str(error))
                    runs.append({'scenario': scenario, 'executor': executor,
                                 'failed': str(error)})
                    print(f'{scenario:<20} {executor:<18} FAILED: {error}', flush=True)
                    continue
                runs.append(run)
                p, c = run['per_message'], run['clock_reads_per_message']
                print(f'{scenario:<20} {executor:<18} process {p["process"]:>7,} '
                      f'publishing {p["publishing_thread"]:>7,} receive side '
                      f'{p["receive_side"]:>7,} instructions/message, clock reads '
                      f'{c["publishing_thread"]:.2f} and {c["receive_side"]:.2f} '
                      f'({run["messages"]} messages)', flush=True)
    document = {
        'machine': machine(),
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
        'command': ' '.join(shlex.quote(a) for a in
                            ['benchmarks/harness/instructions.py', *(argv or sys.argv[1:])]),
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'method': {'tool': 'valgrind --tool=callgrind --fair-sched=yes --separate-threads=yes',
                   'environment': 'ROS_AUTOMATIC_DISCOVERY_RANGE=OFF',
                   'rate_hz': args.rate_hz, 'warmup_s': args.warmup,
                   'window_s': args.window,
                   'per_message': 'instructions in the window / rcl_publish calls in it'},
        'runs': runs,
        'failures': failures,
    }
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / 'instructions.json').write_text(json.dumps(document, indent=2) + '\n')
    (out / 'instructions.md').write_text(markdown(document))
    print(f'\nwrote {out}/instructions.json and instructions.md')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
