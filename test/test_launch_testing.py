"""Every comparison launch file passes its launch_testing test
(`test/launch_tests/comparison_launch_test.py`, run with the `launch_test` command: the
launch_testing pytest plugin does not load under pytest 9), and a node that fails makes
that test fail, where `ros2 launch` would still exit 0. Skipped, with the reason, where
launch_testing is not installed (no registry carries it)."""

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

TEST_FILE = Path(__file__).resolve().parent / 'launch_tests' / 'comparison_launch_test.py'
SHORT = ['seconds:=0.5', 'warmup:=0.2']
CASES = {
    'executor_comparison': ['executor:=rclrs_tokio', *SHORT],
    # Both processes run to their own end: a launch that shuts itself down when the
    # subscriber exits would end before the test could see it.
    'xproc_comparison': ['executor:=rclrs_tokio', 'rate_hz:=1000', 'end_with_subscriber:=false',
                         *SHORT],
    'service_comparison': ['executor:=rclrs_tokio', *SHORT],
    # The same launch file with the action workload (the case's name after the colon).
    'service_comparison:action': ['executor:=rclrs_tokio', 'workload:=action', *SHORT],
    'scaling_comparison': ['executor:=rclrs_tokio', 'subscriptions:=10', *SHORT],
    'workers_parallel': ['executor:=rclrs_tokio', 'workers:=2', *SHORT],
    'timer_comparison': ['executor:=rclrs_tokio', 'seconds:=0.5'],
}


def launch_test(comparison: str, arguments: list[str]) -> subprocess.CompletedProcess:
    if importlib.util.find_spec('launch_testing') is None or shutil.which('launch_test') is None:
        pytest.skip('launch_testing is not installed (no registry carries it; build launch, '
                    'launch_ros and launch_testing from source to run these)')
    launch_file = comparison.split(':')[0] + '_launch.py'
    return subprocess.run(['launch_test', str(TEST_FILE), f'comparison:={launch_file}',
                           *arguments], capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize('comparison', sorted(CASES))
def test_the_comparison_passes_its_launch_test(comparison):
    ran = launch_test(comparison, CASES[comparison])
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]


def test_a_node_that_fails_fails_the_launch_test():
    # A flag value the Rust node refuses: it exits with status 2 at once.
    ran = launch_test('executor_comparison', ['executor:=rclrs_tokio', 'callback:=sideways',
                                              *SHORT])
    assert ran.returncode != 0, ran.stdout[-3000:]
    assert 'test_every_node_under_test_exited_with_status_0' in ran.stdout + ran.stderr
