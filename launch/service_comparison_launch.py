"""One service round-trip benchmark run for one executor (the service workload): a
BenchEcho server and a client in one process, both served by the executor under test,
with a driver thread making closed-loop calls; prints one JSON line (received_per_s =
completed calls per second, latency_* = round-trip times). raw_rcl has no service
workload.

    ros2 launch rclrs_tokio service_comparison_launch.py executor:=rclcpp_events payload:=1024
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
    ('payload', '0', 'Payload size of each request (echoed in the response), in bytes'),
    ('seconds', '3', 'Length of the measured window, in seconds'),
    ('warmup', '1', 'Warm-up before the measured window, in seconds'),
]


def _node(context):
    get = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    executor = get['executor']
    package, executable = (('rclrs_tokio_benchmarks', 'bench_node') if executor in RUST
                           else ('rclcpp_events_bridge', 'bench_node_cpp'))
    arguments = ['--workload', 'service', '--executor', executor, '--payload', get['payload'],
                 '--seconds', get['seconds'], '--warmup-s', get['warmup']]
    return [Node(package=package, executable=executable, name=f'bench_service_{executor}',
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=description)
         for name, default, description in ARGUMENTS]
        + [OpaqueFunction(function=_node)])
