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

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

# raw_rcl goes to the Rust node too, which says why it has no such workload (exit 2).
RUST = {'rclrs_tokio', 'rclrs_basic', 'raw_rcl'}
ARGUMENTS = [
    ('executor', 'rclrs_tokio',
     'Executor under test: rclrs_tokio, rclrs_basic, rclcpp_single, rclcpp_multi, '
     'rclcpp_events or rclcpp_events_cbg'),
    ('workload', 'service',
     'Round trips to measure: service (BenchEcho calls) or action (BenchCount goals, after '
     'an idle window)'),
    ('payload', '0', 'Payload size of each service request (echoed in the response), in '
     'bytes; service only'),
    ('seconds', '3', 'Length of the measured window, in seconds'),
    ('warmup', '1', 'Warm-up before the measured window, in seconds'),
]


def _node(context):
    get = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    executor = get['executor']
    package, executable = (('rclrs_tokio_benchmarks', 'bench_node') if executor in RUST
                           else ('rclcpp_events_bridge', 'bench_node_cpp'))
    workload = get['workload']
    if workload not in ('service', 'action'):
        raise RuntimeError(f'workload:={workload}: use service or action')
    payload = ['--payload', get['payload']] if workload == 'service' else []
    arguments = ['--workload', workload, '--executor', executor, *payload,
                 '--seconds', get['seconds'], '--warmup-s', get['warmup']]
    return [Node(package=package, executable=executable, name=f'bench_{workload}_{executor}',
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=description)
         for name, default, description in ARGUMENTS]
        + [OpaqueFunction(function=_node)])
