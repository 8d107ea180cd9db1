"""What the comparison launch files share (not a launch file itself).

Each `*_launch.py` beside it declares its arguments as `(name, default, description)`
rows, taking the rows every benchmark has from `shared_arguments` and the executor row
from `executor_argument`, and describes its nodes in one OpaqueFunction that reads the
arguments' values with `values`. `bench_node` says which package and executable serve an
executor: the Rust node for the executors in the file's `rust` set, the C++ twin for
every rclcpp one.

The launch files import it by their own directory, which is where CMake installs it
(share/rclrs_tokio/launch/).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

RCLCPP_EXECUTORS = 'rclcpp_single, rclcpp_multi, rclcpp_events or rclcpp_events_cbg'
# The Rust rows that are not executors, as the executor argument describes them.
FLOORS = ('raw_rcl or raw_push (no executor: a wait-set loop, or push callbacks waking one '
          'take loop, the floor)')

# Arguments with the same meaning in every file that has them; a file may reword the
# description where its workload gives them a narrower sense.
SHARED = {
    'payload': ('0', 'Payload size of each BenchMessage, in bytes'),
    'reliability': ('reliable', 'QoS reliability: reliable or best_effort'),
    'depth': ('1000', 'QoS history depth (keep last)'),
    'rate_hz': ('0', 'Publishing rate in Hz; 0 publishes as fast as possible'),
    'seconds': ('3', 'Length of the measured window, in seconds'),
    'warmup': ('1', 'Warm-up before the measured window, in seconds'),
    'callback': ('node', 'Rust only: node-level (node) or Worker (worker) subscriptions'),
    'workers': ('1', 'Groups the subscriptions are spread over round-robin: Rust Workers or '
                'rclcpp MutuallyExclusive callback groups (raw_rcl: always one Worker)'),
}


def shared_arguments(*names):
    """The shared rows for `names`, in that order."""
    return [(name, *SHARED[name]) for name in names]


def executor_argument(with_floors, where='Executor under test'):
    """The `executor` row: rclrs_tokio, rclrs_basic, the floors if `with_floors`, and
    every rclcpp executor."""
    rust = 'rclrs_tokio, rclrs_basic, ' + (f'{FLOORS}, ' if with_floors else '')
    return ('executor', 'rclrs_tokio', f'{where}: {rust}{RCLCPP_EXECUTORS}')


def values(context, arguments):
    """{name: value} of every argument row, performed in `context`."""
    return {name: LaunchConfiguration(name).perform(context) for name, _, _ in arguments}


def is_true(value):
    """A boolean launch argument's value (`true`, in any case, is true)."""
    return value.lower() == 'true'


def bench_node(executor, rust, rust_executable='bench_node', cpp_executable='bench_node_cpp'):
    """(package, executable) of the node that runs `executor`: the Rust benchmark node for
    the executors in `rust`, the C++ twin for the others."""
    if executor in rust:
        return 'rclrs_tokio_benchmarks', rust_executable
    return 'rclcpp_events_bridge', cpp_executable


def describe(arguments, nodes):
    """The launch description: every argument row declared, then `nodes(context)` as an
    OpaqueFunction."""
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=description)
         for name, default, description in arguments]
        + [OpaqueFunction(function=nodes)])
