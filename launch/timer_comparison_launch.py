"""One timer benchmark run for one executor: a steady timer's rate and jitter, or a
node-time timer under simulated time driven by an in-process clock publisher (on a
topic private to the process, so the run neither moves nor follows anybody's /clock).

    ros2 launch rclrs_tokio timer_comparison_launch.py executor:=rclcpp_events rate_hz:=1000
    ros2 launch rclrs_tokio timer_comparison_launch.py timers:=1000 rate_hz:=10
    ros2 launch rclrs_tokio timer_comparison_launch.py sim_speed:=10 period:=1
"""

import sys
from pathlib import Path

from launch_ros.actions import Node

sys.path.insert(0, str(Path(__file__).resolve().parent))

from comparison_common import (  # noqa: E402 (found through sys.path above)
    bench_node, describe, executor_argument, values)

RUST = {'rclrs_tokio', 'rclrs_basic'}
ARGUMENTS = [
    executor_argument(with_floors=False),
    ('rate_hz', '1000', 'Steady-clock timer rate in Hz (ignored with sim_speed)'),
    ('timers', '1',
     'How many steady-clock timers, their phases spread over one period (ignored with '
     'sim_speed)'),
    ('sim_speed', '',
     'Run under use_sim_time with /clock at this multiple of real time (0 = paused); '
     'empty for a steady-clock timer'),
    ('period', '1', 'Sim-time timer period, in seconds of ROS time'),
    ('clock_hz', '100', 'How often the simulated clock is published, in Hz of wall time'),
    ('seconds', '3', 'Length of the measured window, in seconds of wall time'),
]


def _node(context):
    get = values(context, ARGUMENTS)
    executor = get['executor']
    package, executable = bench_node(executor, RUST, 'timer_node', 'timer_node_cpp')
    arguments = ['--executor', executor, '--seconds', get['seconds']]
    if get['sim_speed']:
        arguments += ['--sim-speed', get['sim_speed'], '--period-s', get['period'],
                      '--clock-hz', get['clock_hz']]
    else:
        arguments += ['--rate-hz', get['rate_hz'], '--timers', get['timers']]
    # Under sim time the process runs a second node (the clock publisher): a launch `name`
    # remaps every node of the process, so both would get the same name.
    name = None if get['sim_speed'] else f'timer_{executor}'
    return [Node(package=package, executable=executable, name=name,
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return describe(ARGUMENTS, _node)
