"""One message-passing benchmark run across two processes (the stream workload): a
subscriber process (`--role sub`) served by the executor under test, and a publisher
process, always the Rust `bench_node --role pub --executor rclrs_tokio`, so every executor
is fed by the same publisher. Both share one `--topic`. Each prints one JSON line: the
subscriber's has received_per_s, CPU and latency (sent and dropped are null), the
publisher's has sent and sent_per_s (benchmarks/harness/bench.py merges the two). The
launch shuts down when the subscriber exits (a publisher still running gets SIGINT),
unless `end_with_subscriber:=false`.

    ros2 launch rclrs_tokio xproc_comparison_launch.py executor:=rclcpp_events payload:=65536
    ros2 launch rclrs_tokio xproc_comparison_launch.py subscriptions:=8 workers:=2
"""

import os
import sys
from pathlib import Path

from launch.actions import RegisterEventHandler, Shutdown
from launch.event_handlers import OnProcessExit
from launch_ros.actions import Node

sys.path.insert(0, str(Path(__file__).resolve().parent))

from comparison_common import (  # noqa: E402 (found through sys.path above)
    bench_node, describe, executor_argument, is_true, shared_arguments, values)

RUST = {'rclrs_tokio', 'rclrs_basic', 'raw_rcl', 'raw_push'}
ARGUMENTS = [
    executor_argument(with_floors=True, where='Executor under test in the subscriber process'),
    *shared_arguments('payload', 'reliability', 'depth', 'rate_hz'),
    ('seconds', '3',
     'Length of the measured window, in seconds (it starts at the first message + warmup)'),
    *shared_arguments('warmup'),
    ('latency', 'false', 'Record per-message latency in the subscriber (true or false)'),
    *shared_arguments('callback'),
    ('subscriptions', '1',
     'Subscriptions on the one topic in the subscriber process (fanout); the publisher '
     'waits for this many matches'),
    *shared_arguments('workers'),
    ('idle_exit', '1.0',
     'The subscriber exits after this many seconds without a message, after the window'),
    ('topic', '',
     'Topic both processes share; empty: bench_xproc_<pid of ros2 launch>'),
    ('end_with_subscriber', 'true',
     'true: the launch shuts down when the subscriber exits (a publisher still running gets '
     'SIGINT); false: both processes run to their own end (launch_testing uses this)'),
]


def _nodes(context):
    get = values(context, ARGUMENTS)
    executor = get['executor']
    topic = get['topic'] or f'bench_xproc_{os.getpid()}'
    package, executable = bench_node(executor, RUST)
    common = ['--workload', 'stream', '--topic', topic, '--payload', get['payload'],
              '--reliability', get['reliability'], '--depth', get['depth'],
              '--rate-hz', get['rate_hz'], '--seconds', get['seconds'],
              '--warmup-s', get['warmup'], '--subscriptions', get['subscriptions']]
    sub_arguments = ['--role', 'sub', '--executor', executor, *common,
                     '--callback', get['callback'], '--workers', get['workers'],
                     '--idle-exit-s', get['idle_exit']]
    if is_true(get['latency']):
        sub_arguments.append('--latency')
    subscriber = Node(package=package, executable=executable, name=f'bench_sub_{executor}',
                      exec_name='sub', arguments=sub_arguments, output='screen')
    publisher = Node(package='rclrs_tokio_benchmarks', executable='bench_node',
                     name='bench_pub_rclrs_tokio', exec_name='pub',
                     arguments=['--role', 'pub', '--executor', 'rclrs_tokio', *common],
                     output='screen')
    # The subscriber decides when the run is over: it exits idle_exit seconds after the
    # last message, or with exit 2 when no message came (30 s) or the publisher stopped
    # before the window ended. A publisher that failed late does not cut its result short.
    if not is_true(get['end_with_subscriber']):
        return [subscriber, publisher]
    return [
        RegisterEventHandler(OnProcessExit(
            target_action=subscriber,
            on_exit=[Shutdown(reason='the subscriber process exited')])),
        subscriber,
        publisher,
    ]


def generate_launch_description():
    return describe(ARGUMENTS, _nodes)
