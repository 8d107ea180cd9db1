"""The reliability suite, bounded: every case against the Tokio executor, and against the
basic executor where it applies and runs in reasonable time, plus R2 under valgrind.

The full suite (`make stress`) writes benchmarks/results/stress/; see README.md.
"""

import json
import re
import shutil
import subprocess

import pytest

from conftest import installed_executable, thread_stacks

VALGRIND_ROUNDS = 500


def stress(case, executor, *extra, prefix=(), timeout=180, vgdb_prefix=None):
    """Run one case. Each takes seconds (R7, the longest, 30 s); one still running after
    `timeout` is stuck, and fails its test with every thread's stack, well inside the
    900 s that CTest gives this whole file."""
    binary = installed_executable('rclrs_tokio_benchmarks', 'stress')
    cmd = [*prefix, str(binary), case, '--executor', executor, *extra]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as running:
        try:
            out, err = running.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stacks = thread_stacks(running.pid, vgdb_prefix, binary)
            running.kill()
            out, err = running.communicate()
            pytest.fail(f'{cmd} was still running after {timeout} s\n'
                        f'stderr (end):\n{err[-3000:]}\nstacks:\n{stacks[-30000:]}')
    proc = subprocess.CompletedProcess(cmd, running.returncode, out, err)
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{')]
    assert lines, f'{cmd} printed no result (exit {proc.returncode})\n{proc.stderr[-3000:]}'
    return json.loads(lines[-1]), proc


# Every case of the suite, in its bounded form.
ALL_CASES = ['r1-start-stop', 'r2-churn', 'r3-panic-storm', 'r4-shutdown', 'r5-bad-input',
             'r6-sim-clock', 'r7-soak']


def assert_passed(result, proc):
    assert result['passed'], (
        f"{result['case']} on {result['executor']} failed: {result['failures']}\n"
        f"figures: {result['figures']}\n{proc.stderr[-2000:]}")
    assert proc.returncode == 0


@pytest.mark.parametrize('case', ALL_CASES)
def test_the_tokio_executor_passes(case):
    assert_passed(*stress(case, 'tokio'))


@pytest.mark.parametrize('case', ALL_CASES)
def test_the_tokio_executor_with_dedicated_workers_passes(case):
    # Every Worker on a thread of its own: its own parking, and its own timer scheduler.
    assert_passed(*stress(case, 'tokio_dedicated'))


@pytest.mark.parametrize('case', ['r1-start-stop', 'r4-shutdown', 'r5-bad-input', 'r6-sim-clock'])
def test_the_basic_executor_passes_what_applies_to_it(case):
    # R2 takes the basic executor minutes, R3 does not apply (it does not contain panics)
    # and R7 fails on its thread count by design; the full suite reports all three.
    result, proc = stress(case, 'basic')
    # The reference executor's own known fault (README, "Reliability"):
    # on a busy 2-core machine its node-level subscription can fall more than R1's depth
    # behind the stream, and the oldest messages go; beside two other builds it did so in
    # two runs in a row (a fresh-clone run, 2026-12-02). Up to two more runs tell that
    # from a new fault; the Tokio executor gets no second run.
    for _ in range(2):
        if not (case == 'r1-start-stop' and basic_node_subscription_fell_behind(result)):
            break
        result, proc = stress(case, 'basic')
    assert_passed(result, proc)


def basic_node_subscription_fell_behind(result):
    """Whether R1 failed only because the node-level subscription lost messages: the
    Worker subscription got them all, nothing came twice or out of order, and no spin
    reported an error."""
    figures = result['figures']
    return (not result['passed']
            and len(result['failures']) == 1
            and figures['worker_lost'] == 0 and figures['spin_errors'] == 0
            and figures['node_duplicated'] == 0 and figures['node_reordered'] == 0
            and figures['node_lost'] > 0)


def test_sim_clock_timers_fire_as_with_the_basic_executor():
    tokio, _ = stress('r6-sim-clock', 'tokio')
    basic, _ = stress('r6-sim-clock', 'basic')
    for phase, fires in basic['figures'].items():
        # Within 2 fires, or 10% on a loaded machine, where a late wake-up makes rcl skip
        # the periods it missed (the basic executor was seen firing 45 of 50).
        theirs = tokio['figures'][phase]
        assert abs(theirs - fires) <= max(2, round(0.1 * max(theirs, fires))), (
            f'{phase}: tokio {theirs}, basic {fires}')


def test_churn_is_clean_under_valgrind(tmp_path):
    if shutil.which('valgrind') is None:
        pytest.fail('valgrind is required (apt-get install valgrind)')
    # About 25 s under valgrind on a 2-core machine; its gdbserver gives the stacks if not.
    vgdb_prefix = str(tmp_path / 'vgdb')
    result, proc = stress('r2-churn', 'tokio', '--rounds', str(VALGRIND_ROUNDS), '--gentle',
                          prefix=['valgrind', '--fair-sched=yes', '--error-exitcode=97',
                                  '--leak-check=no', '--vgdb=yes',
                                  f'--vgdb-prefix={vgdb_prefix}'],
                          timeout=420, vgdb_prefix=vgdb_prefix)
    summary = re.search(r'ERROR SUMMARY: (\d+) errors', proc.stderr)
    assert summary, f'no valgrind summary\n{proc.stderr[-3000:]}'
    assert summary.group(1) == '0', proc.stderr[-6000:]
    assert_passed(result, proc)
