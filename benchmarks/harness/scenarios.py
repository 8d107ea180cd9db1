"""What the harness runs: scenarios (workload arguments) and executors (which binary)."""

from __future__ import annotations

import os
from pathlib import Path

# Node-level callbacks (`node.create_subscription`, as in the rclcpp anchors) for the
# plain scenarios; the `_worker` variants use a Worker's subscription (Rust only; the C++
# nodes ignore `--callback`).
_RELIABLE_1000 = ['--reliability', 'reliable', '--depth', '1000']
MESSAGE_SCENARIOS = {
    'throughput_0B': ['--payload', '0', *_RELIABLE_1000, '--rate-hz', '0'],
    'throughput_64KB': ['--payload', '65536', *_RELIABLE_1000, '--rate-hz', '0'],
    'throughput_0B_be': ['--payload', '0', '--reliability', 'best_effort', '--depth', '10',
                         '--rate-hz', '0'],
    'latency_1kHz': ['--payload', '0', *_RELIABLE_1000, '--rate-hz', '1000', '--latency'],
    'cpu_10kHz': ['--payload', '0', *_RELIABLE_1000, '--rate-hz', '10000'],
}
for _name in list(MESSAGE_SCENARIOS):
    MESSAGE_SCENARIOS[f'{_name}_worker'] = [*MESSAGE_SCENARIOS[_name], '--callback', 'worker']
    MESSAGE_SCENARIOS[_name] = [*MESSAGE_SCENARIOS[_name], '--callback', 'node']

# Timer scenarios run the timer nodes: steady-clock rate, and sim time via /clock.
TIMER_SCENARIOS = {
    'timer_1kHz': ['--rate-hz', '1000'],
    'timer_10kHz': ['--rate-hz', '10000'],
    'simtime_10x': ['--sim-speed', '10', '--period-s', '1'],
    'simtime_1x': ['--sim-speed', '1', '--period-s', '0.1'],
    'simtime_0_1x': ['--sim-speed', '0.1', '--period-s', '0.01'],
    'simtime_paused': ['--sim-speed', '0', '--period-s', '0.1'],
}

QUICK = ['throughput_0B', 'throughput_64KB', 'throughput_0B_be', 'latency_1kHz', 'cpu_10kHz',
         'throughput_0B_worker', 'cpu_10kHz_worker', *TIMER_SCENARIOS]
FULL = [*MESSAGE_SCENARIOS, *TIMER_SCENARIOS]

# executor -> (package, message node, timer node); None: not applicable.
EXECUTORS = {
    'rclrs_tokio': ('rclrs_tokio_benchmarks', 'bench_node', 'timer_node'),
    'rclrs_basic': ('rclrs_tokio_benchmarks', 'bench_node', 'timer_node'),
    'raw_rcl': ('rclrs_tokio_benchmarks', 'bench_node', None),
    'rclcpp_single': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp'),
    'rclcpp_multi': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp'),
    'rclcpp_events': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp'),
    'rclcpp_events_cbg': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp'),
}
# A node exits with this code when the executor is not in the installed library
# (EventsCBGExecutor in an older rclcpp): the harness reports the row as absent.
EXIT_NOT_AVAILABLE = 3

# What the console table shows per scenario, and whether higher is better.
def headline(scenario: str) -> tuple[str, bool]:
    if scenario.startswith('throughput'):
        return 'received_per_s', True
    if scenario.startswith('latency'):
        return 'latency_p99_us', False
    if scenario.startswith('cpu'):
        return 'cpu_executor_pct', False
    if scenario.startswith('timer'):
        return 'timer_rate_hz', True
    return 'fires', True


def find_installed(package: str, name: str) -> Path | None:
    """`<prefix>/lib/<package>/<name>` from AMENT_PREFIX_PATH, or None."""
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            candidate = Path(prefix) / 'lib' / package / name
            if candidate.is_file():
                return candidate
    return None


def node_for(scenario: str, executor: str) -> tuple[Path | None, str | None]:
    """The binary running `scenario` for `executor`, or (None, why it is absent)."""
    package, message_node, timer_node = EXECUTORS[executor]
    node = timer_node if scenario in TIMER_SCENARIOS else message_node
    if node is None:
        return None, f'{executor} has no {"timer" if scenario in TIMER_SCENARIOS else "message"} workload'
    path = find_installed(package, node)
    if path is None:
        if package == 'rclcpp_events_bridge':
            return None, 'rclcpp is not installed (rclcpp_events_bridge built no nodes)'
        return None, f'{package}/{node} is not installed'
    return path, None


def arguments(scenario: str) -> list[str]:
    return MESSAGE_SCENARIOS.get(scenario) or TIMER_SCENARIOS[scenario]
