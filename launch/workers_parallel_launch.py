"""One parallel-callbacks benchmark run for one executor (the parallel workload): two
subscriptions on two topics whose callbacks each burn `work_us` of CPU, both in one
Worker / MutuallyExclusive callback group (workers:=1) or one each (workers:=2), fed by
one publisher thread alternating between the topics; prints one JSON line
(received_per_s = completed callbacks per second). raw_rcl has no parallel workload.

    ros2 launch rclrs_tokio workers_parallel_launch.py executor:=rclcpp_events_cbg workers:=2
"""

import sys
from pathlib import Path

from launch_ros.actions import Node

sys.path.insert(0, str(Path(__file__).resolve().parent))

from comparison_common import (  # noqa: E402 (found through sys.path above)
    bench_node, describe, executor_argument, shared_arguments, values)

# raw_rcl goes to the Rust node too, which says why it has no such workload (exit 2).
RUST = {'rclrs_tokio', 'rclrs_basic', 'raw_rcl'}
ARGUMENTS = [
    executor_argument(with_floors=False),
    ('workers', '1',
     '1: both subscriptions in one Worker (rclcpp: one MutuallyExclusive group); '
     '2: one Worker (group) each'),
    ('work_us', '200', 'CPU time each callback burns, in microseconds of thread CPU time'),
    ('rate_hz', '3000', 'Publishing rate per topic in Hz; 0 publishes as fast as possible'),
    *shared_arguments('seconds', 'warmup', 'reliability', 'depth'),
    ('threads', '0',
     'Thread pool size of rclrs_tokio, rclcpp_multi and rclcpp_events_cbg; '
     '0 = the executor default (2)'),
]


def _node(context):
    get = values(context, ARGUMENTS)
    executor = get['executor']
    package, executable = bench_node(executor, RUST)
    arguments = ['--workload', 'parallel', '--executor', executor,
                 '--workers', get['workers'], '--work-us', get['work_us'],
                 '--rate-hz', get['rate_hz'], '--seconds', get['seconds'],
                 '--warmup-s', get['warmup'], '--reliability', get['reliability'],
                 '--depth', get['depth'], '--threads', get['threads']]
    return [Node(package=package, executable=executable, name=f'bench_parallel_{executor}',
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return describe(ARGUMENTS, _node)
