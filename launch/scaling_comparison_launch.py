"""One scaling benchmark run for one executor (the scaling workload): `subscriptions`
subscriptions, each on its own topic, in one process; the process CPU over an idle window
(idle_cpu_pct), then one publisher on the first topic only (per_message_us = executor
CPU per received message); prints one JSON line.

    ros2 launch rclrs_tokio scaling_comparison_launch.py executor:=rclcpp_events subscriptions:=100
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

RUST = {'rclrs_tokio', 'rclrs_basic', 'raw_rcl', 'raw_push'}
ARGUMENTS = [
    ('executor', 'rclrs_tokio',
     'Executor under test: rclrs_tokio, rclrs_basic, raw_rcl or raw_push (no executor: a '
     'wait-set loop, or push callbacks waking one take loop, the floor), '
     'rclcpp_single, rclcpp_multi, rclcpp_events or rclcpp_events_cbg'),
    ('subscriptions', '10', 'Number of subscriptions, each on its own topic <topic>_<i>'),
    ('rate_hz', '1000',
     'Publishing rate on the first topic in Hz; 0 publishes as fast as possible'),
    ('seconds', '3', 'Length of the idle window and of the measured window, in seconds'),
    ('warmup', '1', 'Warm-up before the measured window, in seconds'),
    ('reliability', 'reliable', 'QoS reliability: reliable or best_effort'),
    ('depth', '1000', 'QoS history depth (keep last)'),
    ('callback', 'node', 'Rust only: node-level (node) or Worker (worker) subscriptions'),
]


def _node(context):
    get = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    executor = get['executor']
    package, executable = (('rclrs_tokio_benchmarks', 'bench_node') if executor in RUST
                           else ('rclcpp_events_bridge', 'bench_node_cpp'))
    arguments = ['--workload', 'scaling', '--executor', executor,
                 '--subscriptions', get['subscriptions'], '--rate-hz', get['rate_hz'],
                 '--seconds', get['seconds'], '--warmup-s', get['warmup'],
                 '--reliability', get['reliability'], '--depth', get['depth'],
                 '--callback', get['callback']]
    return [Node(package=package, executable=executable, name=f'bench_scaling_{executor}',
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=description)
         for name, default, description in ARGUMENTS]
        + [OpaqueFunction(function=_node)])
