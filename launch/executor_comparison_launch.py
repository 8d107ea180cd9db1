"""One message-passing benchmark run for one executor: a publisher thread and
`subscriptions` subscriptions on one topic in one process (the stream workload, role both),
printing one JSON line (see benchmarks/harness/bench.py, which runs the same nodes side by
side without `ros2 launch`). With subscriptions > 1 it is the fanout scenario: the
subscriptions are spread round-robin over `workers` Rust Workers or rclcpp
MutuallyExclusive callback groups.

    ros2 launch rclrs_tokio executor_comparison_launch.py executor:=rclcpp_events payload:=65536
    ros2 launch rclrs_tokio executor_comparison_launch.py subscriptions:=8 workers:=2
    ros2 launch rclrs_tokio executor_comparison_launch.py subscriptions:=8 workers:=2 \
        callback:=worker shared_subscription:=true
    ros2 launch rclrs_tokio executor_comparison_launch.py executor:=rclcpp_events \
        subscriptions:=8 workers:=2 intra_process:=true
"""

import sys
from pathlib import Path

from launch_ros.actions import Node

sys.path.insert(0, str(Path(__file__).resolve().parent))

from comparison_common import (  # noqa: E402 (found through sys.path above)
    bench_node, describe, executor_argument, is_true, shared_arguments, values)

RUST = {'rclrs_tokio', 'rclrs_basic', 'raw_rcl', 'raw_push'}
FANOUT_SUBSCRIPTION = {'rclrs_tokio', 'rclrs_basic'}
ARGUMENTS = [
    executor_argument(with_floors=True),
    *shared_arguments('payload', 'reliability', 'depth', 'rate_hz', 'seconds', 'warmup'),
    ('latency', 'false', 'Record per-message latency (true or false)'),
    *shared_arguments('callback'),
    ('subscriptions', '1',
     'Subscriptions on the one topic (fanout); received counts deliveries summed over them'),
    *shared_arguments('workers'),
    ('shared_subscription', 'false',
     'rclrs_tokio and rclrs_basic only: one fan-out subscription (taken once) feeding '
     '`subscriptions` callbacks instead of that many subscriptions (true or false)'),
    ('intra_process', 'false',
     "rclcpp executors only: rclcpp's intra-process communication (true or false)"),
]


def _node(context):
    get = values(context, ARGUMENTS)
    executor = get['executor']
    package, executable = bench_node(executor, RUST)
    arguments = ['--workload', 'stream', '--executor', executor, '--payload', get['payload'],
                 '--reliability', get['reliability'], '--depth', get['depth'],
                 '--rate-hz', get['rate_hz'], '--seconds', get['seconds'],
                 '--warmup-s', get['warmup'], '--callback', get['callback'],
                 '--subscriptions', get['subscriptions'], '--workers', get['workers']]
    if is_true(get['shared_subscription']) and executor not in FANOUT_SUBSCRIPTION:
        raise RuntimeError(f'shared_subscription:=true: {executor} has no fan-out '
                           'subscription (rclrs_tokio and rclrs_basic have)')
    if is_true(get['intra_process']) and executor in RUST:
        raise RuntimeError(f'intra_process:=true: {executor} is not an rclcpp executor')
    for flag, argument in [('--latency', 'latency'),
                           ('--shared-subscription', 'shared_subscription'),
                           ('--intra-process', 'intra_process')]:
        if is_true(get[argument]):
            arguments.append(flag)
    return [Node(package=package, executable=executable, name=f'bench_{executor}',
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return describe(ARGUMENTS, _node)
