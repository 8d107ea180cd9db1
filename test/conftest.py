"""Shared helpers of the system tests: find installed executables, run processes."""

import csv
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _flavour_dir(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else default


# The directories of the flavour under test (embedded kilted, embedded jazzy, or a
# sourced install; see tools/ros_prefix/setup.py), from its env.sh, which make sources.
STATE = _flavour_dir('RCLRS_TOKIO_STATE', ROOT / '.ros' / 'kilted')
BUILD_BASE = _flavour_dir('RCLRS_TOKIO_BUILD_BASE', ROOT / 'build')
INSTALL_BASE = _flavour_dir('RCLRS_TOKIO_INSTALL_BASE', ROOT / 'install')
HARNESS = ROOT / 'benchmarks' / 'harness'


def installed_executable(package: str, name: str) -> Path:
    """`<prefix>/lib/<package>/<name>` from the first AMENT_PREFIX_PATH entry that has it."""
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        candidate = Path(prefix) / 'lib' / package / name
        if candidate.is_file():
            return candidate
    pytest.fail(f'{package}/{name} is not installed; run `make build` first')


def unique_topic(stem: str) -> str:
    return f'{stem}_{uuid.uuid4().hex[:8]}'


def start(cmd, **kw) -> subprocess.Popen:
    return subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def finish(proc: subprocess.Popen, timeout: float = 60.0) -> dict:
    """Wait for `proc`, require exit 0, return its last stdout line as JSON."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f'{proc.args} timed out\nstdout:{out}\nstderr:{err}')
    assert proc.returncode == 0, f'{proc.args} exited {proc.returncode}\nstdout:{out}\nstderr:{err}'
    lines = [line for line in out.splitlines() if line.startswith('{')]
    assert lines, f'{proc.args} printed no JSON summary\nstdout:{out}\nstderr:{err}'
    return json.loads(lines[-1])


def thread_stacks(pid: int, vgdb_prefix: str | None = None, program=None) -> str:
    """Every thread's backtrace in the running process `pid`, through gdb (through
    valgrind's gdbserver for `program` run under valgrind with `vgdb_prefix`), so that a
    test can say where a process it gives up on was stuck."""
    if shutil.which('gdb') is None:
        return '(no gdb on this machine: no stacks)'
    if vgdb_prefix is None:
        target = ['-p', str(pid)]
    else:
        target = [str(program), '-ex',
                  f'target remote | vgdb --vgdb-prefix={vgdb_prefix} --pid={pid}']
    try:
        proc = subprocess.run(['gdb', '-batch', '-nx', *target, '-ex', 'thread apply all bt'],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return '(gdb did not finish within 120 s: no stacks)'
    return proc.stdout + proc.stderr


@pytest.fixture
def rust_node():
    return installed_executable('rclrs_tokio_benchmarks', 'interop_node')


@pytest.fixture
def rclpy_node():
    return [sys.executable, HERE / 'interop_rclpy.py']


def smoke_run(tmp_path: Path, scenarios: list[str]) -> None:
    """bench.py for real with tiny windows: `scenarios` for every executor whose nodes are
    installed. The numbers must be sane, the outputs well-formed, and executors that
    cannot run (rclcpp without a ROS install) absent with a reason rather than made up."""
    if str(HARNESS) not in sys.path:
        sys.path.insert(0, str(HARNESS))
    from scenarios import SCENARIOS, TIMER_SCENARIOS, applicable
    proc = subprocess.run(
        [sys.executable, str(HARNESS / 'bench.py'), '--scenarios', ','.join(scenarios),
         '--reps', '1', '--seconds', '0.4', '--warmup', '0.1', '--output-dir', str(tmp_path)],
        capture_output=True, text=True, timeout=840)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'ratios against' in proc.stdout

    document = json.loads((tmp_path / 'latest.json').read_text())
    assert document['machine']['cores'] >= 1
    assert document['rmw'] and document['command']
    runs = document['runs']
    seen = {(r['scenario'], r['executor']) for r in runs}
    for scenario in scenarios:
        for executor in ['rclrs_tokio', 'rclrs_basic', 'raw_rcl', 'raw_push']:
            assert ((scenario, executor) in seen) == applicable(scenario, executor), \
                (scenario, executor)
    assert document['failures'] == []

    for run in runs:
        if run.get('absent'):
            assert run['metrics'] is None and run['reps'] == 0
            continue
        m = run['metrics']
        assert run['reps'] == 1
        # The repetition's headline, kept for the paired ratios.
        assert list(run['headline_by_rep']) == ['1'], run
        assert m['cpu_process_pct'] is not None and m['cpu_process_pct'] >= 0
        if run['scenario'] in TIMER_SCENARIOS:
            if run['scenario'].startswith('timer'):
                assert m['fires'] > 0 and m['timer_rate_hz'] > 0
                # One histogram count per interval between two fires of one timer.
                args = SCENARIOS[run['scenario']].args
                timers = int(args[args.index('--timers') + 1]) if '--timers' in args else 1
                if timers == 1:
                    assert sum(m['timer_jitter_hist']) == m['fires'] - 1, run
                else:
                    assert m['fires'] - timers <= sum(m['timer_jitter_hist']) < m['fires'], run
            elif run['scenario'] != 'simtime_paused':
                assert m['expected_fires'] > 0
            else:
                assert m['fires'] == 0
        else:
            assert m['received_per_s'] > 0, run
            assert m['cpu_executor_pct'] >= 0
            assert 0 <= m['drop_pct'] <= 100
            if (run['scenario'].startswith('latency')
                    or run['scenario'] in ('service_rtt', 'action_rtt')):
                assert 0 < m['latency_p50_us'] <= m['latency_p99_us'] <= m['latency_max_us']
            if run['scenario'].startswith('scaling'):
                assert m['idle_cpu_pct'] >= 0 and m['per_message_us'] > 0, run
            if run['scenario'] == 'action_idle':
                assert 0 <= m['idle_cpu_pct'] <= m['idle_process_cpu_pct'], run
            if SCENARIOS[run['scenario']].kind == 'xproc' and run['scenario'] != 'robot_mix':
                # Joined from the two processes' reports.
                assert m['sent_per_s'] > 0, run
            if '--workload' not in SCENARIOS[run['scenario']].args:
                # A stream row counts the wake-ups it cost.
                assert m['context_switches_per_msg'] > 0, run
            if run['scenario'] == 'robot_mix':
                streams = m['streams']
                assert set(streams) == {'imu', 'odometry', 'tf_0', 'tf_1', 'tf_2', 'tf_3',
                                        'lidar', 'camera', 'control', 'service',
                                        'parameters'}, run
                for name, stream in streams.items():
                    assert stream['sent'] > 0 and stream['lost'] >= 0, (name, run)
                assert m['lost'] == sum(s['lost'] for s in streams.values()), run
                assert 0 < m['control_latency_p99_us'] <= m['control_latency_max_us'], run
            if run['scenario'].startswith('mixed_criticality'):
                assert 0 < m['control_latency_p99_us'] <= m['control_latency_max_us'], run
                assert m['burn_rate_hz'] > 0, run
            if run['scenario'].startswith('nodes_'):
                assert m['idle_cpu_pct'] >= 0 and m['threads'] >= m['idle_threads'] > 0, run

    rows = list(csv.DictReader((tmp_path / 'latest.csv').open()))
    assert len(rows) == len(runs)
    markdown = (tmp_path / 'latest.md').read_text()
    assert '# Executor comparison' in markdown
    assert '## Context switches per delivery' in markdown
    assert '## Paired ratios (per repetition)' in markdown
