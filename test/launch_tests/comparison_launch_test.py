"""One comparison launch file under launch_testing: every benchmark node it starts ends
by itself, with status 0, after printing its JSON line. `ros2 launch` exits 0 even when
a node fails; this test does not.

    launch_test test/launch_tests/comparison_launch_test.py \\
        comparison:=executor_comparison_launch.py executor:=rclrs_tokio seconds:=0.5

Any other `name:=value` goes to the comparison's own arguments. `test/test_launch_testing.py`
runs it for every comparison wherever launch_testing is installed (the xproc comparison
with `end_with_subscriber:=false`, so that its launch does not shut itself down first).
The processes under test are every node but an xproc publisher (`--role pub`); they
must end by themselves, with status 0.
"""

import time
import unittest
from pathlib import Path

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import launch_testing.util
import pytest
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.events.process import ProcessExited
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution

LAUNCH_DIR = Path(__file__).resolve().parents[2] / 'launch'
PACKAGES = ('rclrs_tokio_benchmarks', 'rclcpp_events_bridge')
# A node's warm-up, window and settle take a few seconds; its start takes up to ten.
PATIENCE_S = 60.0


def is_node(event) -> bool:
    return any(package in event.cmd[0] for package in PACKAGES)


def under_test(event) -> bool:
    return is_node(event) and '--role pub' not in ' '.join(event.cmd)


@pytest.mark.launch_test
def generate_test_description():
    return LaunchDescription([
        DeclareLaunchArgument('comparison', description='A launch file of launch/, by name'),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(
            PathJoinSubstitution([str(LAUNCH_DIR), LaunchConfiguration('comparison')]))),
        # The nodes end by themselves; this keeps the launch up until the tests are done.
        launch_testing.util.KeepAliveProc(),
        launch_testing.actions.ReadyToTest(),
    ])


class TestTheComparisonRuns(unittest.TestCase):

    def test_every_node_under_test_ends_by_itself(self, proc_info):
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            events = [e for e in proc_info if under_test(e)]
            if events and all(isinstance(e, ProcessExited) for e in events):
                return
            time.sleep(0.1)
        self.fail(f'the nodes did not end within {PATIENCE_S:.0f} s: '
                  f'{[" ".join(e.cmd) for e in proc_info if under_test(e)]}')


@launch_testing.post_shutdown_test()
class TestTheComparisonEndedWell(unittest.TestCase):

    def test_every_node_under_test_exited_with_status_0(self, proc_info):
        nodes = [e for e in proc_info if under_test(e)]
        self.assertTrue(nodes, 'the comparison started no benchmark node')
        for exited in nodes:
            launch_testing.asserts.assertExitCodes(proc_info, process=exited.action)

    def test_every_node_printed_its_json_line(self, proc_output, proc_info):
        for exited in (e for e in proc_info if under_test(e)):
            launch_testing.asserts.assertInStdout(proc_output, '"executor"', exited.action)
