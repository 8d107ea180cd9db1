"""One scaling benchmark run for one executor (the scaling workload): `subscriptions`
subscriptions, each on its own topic, in one process; the process CPU over an idle window
(idle_cpu_pct), then one publisher on the first topic only (per_message_us = executor
CPU per received message); prints one JSON line.

    ros2 launch rclrs_tokio scaling_comparison_launch.py executor:=rclcpp_events subscriptions:=100
"""

import sys
from pathlib import Path

from launch_ros.actions import Node

sys.path.insert(0, str(Path(__file__).resolve().parent))

from comparison_common import (  # noqa: E402 (found through sys.path above)
    bench_node, describe, executor_argument, shared_arguments, values)

RUST = {'rclrs_tokio', 'rclrs_basic', 'raw_rcl', 'raw_push'}
ARGUMENTS = [
    executor_argument(with_floors=True),
    ('subscriptions', '10', 'Number of subscriptions, each on its own topic <topic>_<i>'),
    ('rate_hz', '1000',
     'Publishing rate on the first topic in Hz; 0 publishes as fast as possible'),
    ('seconds', '3', 'Length of the idle window and of the measured window, in seconds'),
    *shared_arguments('warmup', 'reliability', 'depth', 'callback'),
]


def _node(context):
    get = values(context, ARGUMENTS)
    executor = get['executor']
    package, executable = bench_node(executor, RUST)
    arguments = ['--workload', 'scaling', '--executor', executor,
                 '--subscriptions', get['subscriptions'], '--rate-hz', get['rate_hz'],
                 '--seconds', get['seconds'], '--warmup-s', get['warmup'],
                 '--reliability', get['reliability'], '--depth', get['depth'],
                 '--callback', get['callback']]
    return [Node(package=package, executable=executable, name=f'bench_scaling_{executor}',
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return describe(ARGUMENTS, _node)
