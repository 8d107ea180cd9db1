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

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

RUST = {'rclrs_tokio', 'rclrs_basic', 'raw_rcl', 'raw_push'}
FANOUT_SUBSCRIPTION = {'rclrs_tokio', 'rclrs_basic'}
ARGUMENTS = [
    ('executor', 'rclrs_tokio',
     'Executor under test: rclrs_tokio, rclrs_basic, raw_rcl or raw_push (no executor: a '
     'wait-set loop, or push callbacks waking one take loop, the floor), '
     'rclcpp_single, rclcpp_multi, rclcpp_events or rclcpp_events_cbg'),
    ('payload', '0', 'Payload size of each BenchMessage, in bytes'),
    ('reliability', 'reliable', 'QoS reliability: reliable or best_effort'),
    ('depth', '1000', 'QoS history depth (keep last)'),
    ('rate_hz', '0', 'Publishing rate in Hz; 0 publishes as fast as possible'),
    ('seconds', '3', 'Length of the measured window, in seconds'),
    ('warmup', '1', 'Warm-up before the measured window, in seconds'),
    ('latency', 'false', 'Record per-message latency (true or false)'),
    ('callback', 'node', 'Rust only: node-level (node) or Worker (worker) subscription'),
    ('subscriptions', '1',
     'Subscriptions on the one topic (fanout); received counts deliveries summed over them'),
    ('workers', '1',
     'Groups the subscriptions are spread over round-robin: Rust Workers or rclcpp '
     'MutuallyExclusive callback groups (raw_rcl: always one Worker)'),
    ('shared_subscription', 'false',
     'rclrs_tokio and rclrs_basic only: one fan-out subscription (taken once) feeding '
     '`subscriptions` callbacks instead of that many subscriptions (true or false)'),
    ('intra_process', 'false',
     "rclcpp executors only: rclcpp's intra-process communication (true or false)"),
]


def _node(context):
    get = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    executor = get['executor']
    package, executable = (('rclrs_tokio_benchmarks', 'bench_node') if executor in RUST
                           else ('rclcpp_events_bridge', 'bench_node_cpp'))
    arguments = ['--workload', 'stream', '--executor', executor, '--payload', get['payload'],
                 '--reliability', get['reliability'], '--depth', get['depth'],
                 '--rate-hz', get['rate_hz'], '--seconds', get['seconds'],
                 '--warmup-s', get['warmup'], '--callback', get['callback'],
                 '--subscriptions', get['subscriptions'], '--workers', get['workers']]
    if get['shared_subscription'].lower() == 'true' and executor not in FANOUT_SUBSCRIPTION:
        raise RuntimeError(f'shared_subscription:=true: {executor} has no fan-out '
                           'subscription (rclrs_tokio and rclrs_basic have)')
    if get['intra_process'].lower() == 'true' and executor in RUST:
        raise RuntimeError(f'intra_process:=true: {executor} is not an rclcpp executor')
    for flag, argument in [('--latency', 'latency'),
                           ('--shared-subscription', 'shared_subscription'),
                           ('--intra-process', 'intra_process')]:
        if get[argument].lower() == 'true':
            arguments.append(flag)
    return [Node(package=package, executable=executable, name=f'bench_{executor}',
                 arguments=arguments, output='screen')]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=description)
         for name, default, description in ARGUMENTS]
        + [OpaqueFunction(function=_node)])
