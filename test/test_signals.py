"""SIGINT and SIGTERM as ROS users expect of the benchmark nodes: the window stops, the
node prints what it measured up to then marked "interrupted", and exits with 128 + the
signal's number. The same checks run against the C++ twins where rclcpp is installed."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import installed_executable, unique_topic

NODES = {
    'rust': ('rclrs_tokio_benchmarks', 'bench_node', 'timer_node', 'rclrs_tokio'),
    'cpp': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp', 'rclcpp_events'),
}


def installed(package: str, name: str) -> bool:
    return any((Path(prefix) / 'lib' / package / name).is_file()
               for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if prefix)


def node(kind: str, which: int):
    package, *names, _ = NODES[kind]
    if kind == 'cpp' and not installed(package, names[which]):
        pytest.skip('rclcpp is not installed (rclcpp_events_bridge built no nodes)')
    return installed_executable(package, names[which])


# When the signal comes: after a 0.5 s warm-up and well inside a 10 s window, with room
# for a slow start (Fast DDS cleaning up the shared-memory segments of killed processes
# has taken 2 s).
SIGNAL_AFTER_S = 3.5


def interrupt_after(cmd, seconds: float, signum: int) -> tuple[int, dict, float]:
    """Start `cmd`, send `signum` after `seconds`; its exit code, JSON line and how long
    it took to exit after the signal."""
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f'{cmd[0]} did not end within 15 s of the signal\n{out}\n{err}')
    took = time.monotonic() - sent
    lines = [line for line in out.splitlines() if line.startswith('{')]
    assert lines, f'{cmd[0]} printed no JSON after the signal (exit {proc.returncode})\n{err}'
    return proc.returncode, json.loads(lines[-1]), took


@pytest.mark.parametrize('kind', ['rust', 'cpp'])
@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_stream_run_stops_reports_and_says_it_was_interrupted(kind, signum):
    executor = NODES[kind][3]
    code, report, took = interrupt_after(
        [node(kind, 0), '--executor', executor, '--rate-hz', '1000', '--seconds', '10',
         '--warmup-s', '0.5', '--latency', '--topic', unique_topic('sig')], SIGNAL_AFTER_S,
        signum)
    assert code == 128 + signum, report
    assert report['interrupted'] is True
    assert took < 5, f'exited {took:.1f} s after the signal'
    # The window ended at the signal, and nothing was counted as sent after it.
    assert 0.5 < report['window_s'] < SIGNAL_AFTER_S, report
    assert report['sent'] < 4000, report
    assert report['drop_pct'] < 5, report
    assert report['latency_samples'] > 0, report


@pytest.mark.parametrize('kind', ['rust', 'cpp'])
def test_a_timer_run_stops_reports_and_says_it_was_interrupted(kind):
    executor = NODES[kind][3]
    code, report, _ = interrupt_after(
        [node(kind, 1), '--executor', executor, '--rate-hz', '1000', '--seconds', '10',
         '--warmup-s', '0.5'], SIGNAL_AFTER_S, signal.SIGINT)
    assert code == 130, report
    assert report['interrupted'] is True
    assert 0.5 < report['window_s'] < SIGNAL_AFTER_S, report
    # The fires counted are those of the shortened window (not a rate check: a loaded
    # machine may miss some).
    assert 0.5 * report['expected_fires'] < report['fires'] <= report['expected_fires'] + 2


def test_a_subscriber_process_stops_on_sigint_while_the_publisher_runs():
    bench = node('rust', 0)
    topic = unique_topic('sig_xproc')
    common = ['--rate-hz', '1000', '--seconds', '10', '--warmup-s', '0.5', '--topic', topic]
    publisher = subprocess.Popen([str(bench), '--executor', 'rclrs_tokio', *common,
                                  '--role', 'pub'], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    try:
        code, report, took = interrupt_after(
            [bench, '--executor', 'rclrs_tokio', *common, '--role', 'sub'], 3.0,
            signal.SIGINT)
    finally:
        publisher.send_signal(signal.SIGINT)
        publisher.communicate(timeout=15)
    assert code == 130, report
    assert report['interrupted'] is True and report['received'] > 0, report
    assert took < 5
