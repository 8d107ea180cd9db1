"""One round-trip benchmark run for one executor. workload:=service (the default): a
BenchEcho server and a client in one process, both served by the executor under test,
with a driver thread making closed-loop calls. workload:=action: a BenchCount action
server and client, an idle window first (idle_cpu_pct: CPU of every thread but the
driver's), then closed-loop goals, each from its request to its result. Prints one JSON
line (received_per_s = completed calls or goals per second, latency_* = round-trip
times). raw_rcl has neither workload; bench_node_cpp's action workload needs
rclcpp_action.

    ros2 launch rclrs_tokio service_comparison_launch.py executor:=rclcpp_events payload:=1024
    ros2 launch rclrs_tokio service_comparison_launch.py workload:=action executor:=rclrs_tokio
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
    ('workload', 'service',
     'Round trips to measure: service (BenchEcho calls) or action (BenchCount goals, after '
     'an idle window)'),
    ('payload', '0', 'Payload size of each service request (echoed in the response), in '
     'bytes; service only'),
    *shared_arguments('seconds', 'warmup'),
]


def _node(context):
    get = values(context, ARGUMENTS)
    executor = get['executor']
    package, executable = bench_node(executor, RUST)
    workload = get['workload']
    if workload not in ('service', 'action'):
        raise RuntimeError(f'workload:={workload}: use service or action')
    payload = ['--payload', get['payload']] if workload == 'service' else []
    arguments = ['--workload', workload, '--executor', executor, *payload,
                 '--seconds', get['seconds'], '--warmup-s', get['warmup']]
    return [Node(package=package, executable=executable, name=f'bench_{workload}_{executor}',
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return describe(ARGUMENTS, _node)
