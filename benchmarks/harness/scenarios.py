"""What the harness runs: scenarios (a workload and its arguments) and executors (which
binary runs them). The node command line is shared by the Rust `bench_node` and the C++
`bench_node_cpp`; see benchmarks/src/workload.rs."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Scenario:
    """One workload with fixed arguments.

    kind: 'message' (bench_node in one process), 'xproc' (bench_node --role sub for the
    executor under test, plus the Rust publisher process) or 'timer' (timer_node).
    metric: the headline column; higher_is_better says which way is good.
    extra: a second row in the console table.
    """

    kind: str
    args: tuple[str, ...]
    metric: str
    higher_is_better: bool
    extra: str | None = None
    # Executors that have no such workload (not absent: not applicable).
    not_for: frozenset = field(default_factory=frozenset)
    # Run beside a CPU burner: one busy process per core, started before the node and
    # stopped after it (jitter under contention).
    contended: bool = False
    # Extra flags for the rclrs_tokio rows (and its variants): the executor's best mode
    # where a scenario asks for it (robot_mix's dedicated control Worker).
    tokio_args: tuple[str, ...] = ()
    # A Fast DDS XML profile (a file beside this one) for every process of the row, as
    # FASTDDS_DEFAULT_PROFILES_FILE (Fast DDS 2: FASTRTPS_...); None: the middleware's
    # defaults.
    fastdds_profile: str | None = None
    # An 'xproc' scenario whose two processes sit in two network namespaces joined by a
    # link the harness makes (two_hosts.py): 'veth' (a plain veth pair) or 'netem' (1 ms
    # delay and 1 % loss each way). None: both processes on this host's network.
    link: str | None = None


_RELIABLE_1000 = ('--reliability', 'reliable', '--depth', '1000')
_STREAMS = {
    'throughput_0B': (('--payload', '0', *_RELIABLE_1000, '--rate-hz', '0'),
                      'received_per_s', True, 'drop_pct'),
    'throughput_64KB': (('--payload', '65536', *_RELIABLE_1000, '--rate-hz', '0'),
                        'received_per_s', True, 'drop_pct'),
    'throughput_0B_be': (('--payload', '0', '--reliability', 'best_effort', '--depth', '10',
                          '--rate-hz', '0'), 'received_per_s', True, 'drop_pct'),
    'latency_1kHz': (('--payload', '0', *_RELIABLE_1000, '--rate-hz', '1000', '--latency'),
                     'latency_p99_us', False, 'latency_p50_us'),
    'cpu_10kHz': (('--payload', '0', *_RELIABLE_1000, '--rate-hz', '10000'),
                  'cpu_executor_pct', False, 'cpu_process_pct'),
}
_NO_RAW = frozenset({'raw_rcl', 'raw_push'})

SCENARIOS: dict[str, Scenario] = {}
# Node-level callbacks (`node.create_subscription`, as in the rclcpp anchors) for the
# plain scenarios; `_worker` uses a Worker's subscription; `_xproc` puts the publisher
# in another process.
for _name, (_args, _metric, _higher, _extra) in _STREAMS.items():
    SCENARIOS[_name] = Scenario('message', (*_args, '--callback', 'node'), _metric, _higher,
                                _extra)
    SCENARIOS[f'{_name}_xproc'] = Scenario('xproc', (*_args, '--callback', 'node'), _metric,
                                           _higher, _extra)
# The size sweep: one reliable stream at 100 Hz for each size from an IMU sample to a
# camera frame, and the saturating stream at the sizes of a point cloud and an image.
# Depth 100 (not 1000): a backlog of 1,000 frames of 4 MB would be 4 GB per history.
# Across processes Fast DDS gets shared-memory segments that hold a 4 MB frame
# (fastdds_large_segments.xml: with the default 512 KB ones every executor's 4 MB p50
# was 0.4 to 0.7 s, the middleware's fragment repairs).
SIZES = {'256B': 256, '4KB': 4096, '64KB': 65536, '1MB': 1 << 20, '4MB': 4 << 20}
LARGE_SEGMENTS = 'fastdds_large_segments.xml'
# The distros whose Fast DDS is 2.x (fastrtps); every later one has Fast DDS 3, whose
# XML profiles (the files beside this one) name some elements anew: new name -> old.
FAST_DDS_2_DISTROS = frozenset({'humble', 'jazzy'})
FAST_DDS_3_RENAMED = {'heartbeat_period': 'heartbeatPeriod'}
_RELIABLE_100 = ('--reliability', 'reliable', '--depth', '100')
for _label, _size in SIZES.items():
    _args = ('--payload', str(_size), *_RELIABLE_100, '--rate-hz', '100', '--latency',
             '--callback', 'node')
    SCENARIOS[f'latency_100Hz_{_label}'] = Scenario('message', _args, 'latency_p99_us', False,
                                                    'latency_p50_us')
    SCENARIOS[f'latency_100Hz_{_label}_xproc'] = Scenario(
        'xproc', _args, 'latency_p99_us', False, 'latency_p50_us',
        fastdds_profile=LARGE_SEGMENTS)
for _label in ('1MB', '4MB'):
    _args = ('--payload', str(SIZES[_label]), *_RELIABLE_100, '--rate-hz', '0',
             '--callback', 'node')
    SCENARIOS[f'throughput_{_label}'] = Scenario('message', _args, 'received_per_s', True,
                                                 'drop_pct')
    SCENARIOS[f'throughput_{_label}_xproc'] = Scenario(
        'xproc', _args, 'received_per_s', True, 'drop_pct', fastdds_profile=LARGE_SEGMENTS)
# rclcpp has one kind of subscription callback: the `_worker` rows are Rust only.
_RCLCPP = frozenset({'rclcpp_single', 'rclcpp_multi', 'rclcpp_events', 'rclcpp_events_cbg'})
for _name, (_args, _metric, _higher, _extra) in _STREAMS.items():
    SCENARIOS[f'{_name}_worker'] = Scenario('message', (*_args, '--callback', 'worker'),
                                            _metric, _higher, _extra, not_for=_RCLCPP)

# Jitter under contention: the latency stream beside one busy process per core.
SCENARIOS['latency_1kHz_contended'] = Scenario(
    'message', (*_STREAMS['latency_1kHz'][0], '--callback', 'node'), 'latency_p99_us', False,
    'latency_max_us', contended=True)

# Fan-out: one publisher, 8 callbacks over 2 Workers (rclcpp: 2 MutuallyExclusive
# callback groups). `fanout*` has 8 subscriptions; `fanout_shared*` has one fan-out
# subscription (`FanoutSubscription`, each message taken once) with 8 callbacks, for the
# Rust executors that have it; `fanout_shared_on_worker*` creates that fan-out on the
# first Worker, which takes and runs its own 4 callbacks in the take (no hub Worker).
# `rclcpp_events_ipc` runs the in-process `fanout*` rows with
# rclcpp's intra-process communication on.
_FANOUT_SHAPE = ('--subscriptions', '8', '--workers', '2', '--callback', 'worker')
_FANOUTS = {
    'fanout': (('--payload', '0', *_RELIABLE_1000, '--rate-hz', '0'), 'received_per_s',
               True, 'drop_pct'),
    'fanout_64KB': (('--payload', '65536', *_RELIABLE_1000, '--rate-hz', '0'),
                    'received_per_s', True, 'drop_pct'),
    'fanout_1kHz': (('--payload', '0', *_RELIABLE_1000, '--rate-hz', '1000'),
                    'cpu_executor_pct', False, 'cpu_process_pct'),
}
_NO_FANOUT_SUBSCRIPTION = frozenset(
    {'raw_rcl', 'raw_push', 'rclcpp_single', 'rclcpp_multi', 'rclcpp_events',
     'rclcpp_events_cbg'})
# Each `fanout*` row has its one-fan-out variants: name prefix and extra flags.
_FANOUT_VARIANTS = {'fanout': (),
                    'fanout_shared': ('--shared-subscription',),
                    'fanout_shared_on_worker': ('--shared-subscription', '--fanout-on-worker')}
_FANOUTS['fanout_xproc'] = (_FANOUTS['fanout'][0], 'received_per_s', True, 'drop_pct')
for _name, (_args, _metric, _higher, _extra) in _FANOUTS.items():
    _kind = 'xproc' if _name.endswith('_xproc') else 'message'
    for _variant, _flags in _FANOUT_VARIANTS.items():
        SCENARIOS[_name.replace('fanout', _variant, 1)] = Scenario(
            _kind, (*_args, *_FANOUT_SHAPE, *_flags), _metric, _higher, _extra,
            not_for=_NO_FANOUT_SUBSCRIPTION if _flags else frozenset())
# The 1 kHz fan-out's stream with a single subscription on a single Worker: what one
# message a millisecond costs with one take and one callback, the floor under a shared
# fan-out of it (which also takes once and wakes once a message).
SCENARIOS['fanout_1kHz_single'] = Scenario(
    'message', (*_FANOUTS['fanout_1kHz'][0], '--subscriptions', '1', '--workers', '1',
                '--callback', 'worker'), 'cpu_executor_pct', False, 'cpu_process_pct')
for _n in (1, 10, 100, 1000):
    SCENARIOS[f'scaling_{_n}'] = Scenario(
        'message', ('--workload', 'scaling', '--subscriptions', str(_n), '--rate-hz', '1000',
                    '--callback', 'node'),
        'per_message_us', False, 'idle_cpu_pct')
SCENARIOS['service_rtt'] = Scenario(
    'message', ('--workload', 'service', '--payload', '0'), 'latency_p99_us', False,
    'received_per_s', not_for=_NO_RAW)
# Actions: a BenchCount server and client in one node. `action_rtt` is closed-loop goals
# (goal request to result); `action_idle` is the CPU of everything but the driver thread
# while the two only exist (the same run's idle phase; give it --seconds 10).
SCENARIOS['action_rtt'] = Scenario(
    'message', ('--workload', 'action'), 'latency_p99_us', False, 'received_per_s',
    not_for=_NO_RAW)
SCENARIOS['action_idle'] = Scenario(
    'message', ('--workload', 'action'), 'idle_cpu_pct', False, 'idle_process_cpu_pct',
    not_for=_NO_RAW)
for _m in (1, 2):
    SCENARIOS[f'workers_parallel_{_m}'] = Scenario(
        'message', ('--workload', 'parallel', '--workers', str(_m), '--work-us', '200',
                    '--rate-hz', '3000'),
        'received_per_s', True, 'drop_pct', not_for=_NO_RAW)

# Timer scenarios run the timer nodes: steady-clock rate, and sim time via /clock.
_NO_TIMER = frozenset({'raw_rcl', 'raw_push', 'rclrs_tokio_traced', 'rclrs_tokio_stats',
                       'rclrs_tokio_linger', 'rclrs_tokio_1thread',
                       'rclrs_tokio_follow_load'})
for _name, _args, _metric, _extra in [
        ('timer_1kHz', ('--rate-hz', '1000'), 'timer_rate_hz', 'timer_jitter_p99_us'),
        ('timer_10kHz', ('--rate-hz', '10000'), 'timer_rate_hz', 'timer_jitter_p99_us'),
        ('simtime_10x', ('--sim-speed', '10', '--period-s', '1'), 'fires', 'expected_fires'),
        ('simtime_1x', ('--sim-speed', '1', '--period-s', '0.1'), 'fires', 'expected_fires'),
        ('simtime_0_1x', ('--sim-speed', '0.1', '--period-s', '0.01'), 'fires',
         'expected_fires'),
        ('simtime_paused', ('--sim-speed', '0', '--period-s', '0.1'), 'fires',
         'expected_fires')]:
    SCENARIOS[_name] = Scenario('timer', _args, _metric, True, _extra, not_for=_NO_TIMER)
# A thousand timers at 10 Hz on one node (10,000 fires a second, their phases spread over
# the period): what the executor's timer handling costs per timer, as process CPU.
SCENARIOS['timers_1000'] = Scenario('timer', ('--rate-hz', '10', '--timers', '1000'),
                                    'cpu_process_pct', False, 'timer_rate_hz',
                                    not_for=_NO_TIMER)
# One 1 kHz timer beside one busy process per core: how many ticks each executor keeps
# and how late they come when the timer's threads compete with load at normal priority.
SCENARIOS['timer_1kHz_contended'] = Scenario('timer', ('--rate-hz', '1000'),
                                             'timer_jitter_p99_us', False, 'timer_rate_hz',
                                             not_for=_NO_TIMER, contended=True)

# Dedicated-thread Workers (the Tokio executor's sync mode): the same workloads with every
# Worker on an OS thread of its own, for rclrs_tokio only (compare with the other
# executors' rows of the plain scenario). The `_contended_dedicated` variants also put
# those threads under SCHED_FIFO (priority 80), which needs root or CAP_SYS_NICE: the
# harness says when it is not root, and the row's `dedicated` object says what applied.
_ONLY_TOKIO = _RCLCPP | {'rclrs_tokio_traced', 'rclrs_tokio_stats', 'rclrs_tokio_linger',
                         'rclrs_tokio_1thread', 'rclrs_tokio_follow_load', 'rclrs_basic',
                         'raw_rcl', 'raw_push'}
for _name, _extra_args in [('cpu_10kHz', ()), ('latency_1kHz', ()), ('latency_1kHz_xproc', ()),
                           ('latency_1kHz_contended', ('--fifo-priority', '80')),
                           ('timer_1kHz_contended', ('--fifo-priority', '80'))]:
    _base = SCENARIOS[_name]
    SCENARIOS[f'{_name}_dedicated'] = Scenario(
        _base.kind, (*_base.args, '--dedicated-workers', *_extra_args), _base.metric,
        _base.higher_is_better, _base.extra, not_for=frozenset(_ONLY_TOKIO),
        contended=_base.contended)

# The workloads a robot runs (benchmarks/src/workload/robot_mix.rs, criticality.rs,
# composed.rs: the shapes, which the C++ twin builds alike). None has a raw take loop
# (_NO_RAW): each needs several Workers or nodes, services or timers.
# robot_mix: a process of several nodes hearing sensor streams, a 1 kHz control stream,
# a service and a parameter query from a second (Rust) process. rclrs_tokio runs the
# control loop's Worker on a dedicated thread (its best mode; rclcpp gives it a callback
# group of its own, the Rust basic executor a Worker). Fast DDS gets shared-memory
# segments that hold a 1 MB frame (fastdds_large_segments.xml says why).
SCENARIOS['robot_mix'] = Scenario(
    'xproc', ('--workload', 'robot_mix'), 'control_latency_p99_us', False, 'cpu_process_pct',
    not_for=_NO_RAW, tokio_args=('--dedicated-workers', 'control_loop'),
    fastdds_profile=LARGE_SEGMENTS)
# mixed_criticality: in one process, a Worker (rclcpp: a callback group) whose callbacks
# burn 4 ms of CPU every 5 ms, beside a 1 kHz control stream on another. Executors that
# run one callback at a time (rclcpp's single-threaded ones) have nothing to show here.
_MIXED = ('--workload', 'mixed_criticality', '--rate-hz', '1000', '--burn-rate-hz', '200',
          '--work-us', '4000', '--latency')
_NOT_MIXED = _NO_RAW | {'rclcpp_single', 'rclcpp_events'}
for _name, _extra_args, _not_for, _contended in [
        ('mixed_criticality', (), _NOT_MIXED, False),
        ('mixed_criticality_dedicated',
         ('--dedicated-workers', 'control_loop', '--fifo-priority', '80'), _ONLY_TOKIO, False),
        ('mixed_criticality_dedicated_normal_priority', ('--dedicated-workers', 'control_loop'),
         _ONLY_TOKIO, False),
        ('mixed_criticality_contended', (), _NOT_MIXED, True),
        ('mixed_criticality_contended_dedicated',
         ('--dedicated-workers', 'control_loop', '--fifo-priority', '80'), _ONLY_TOKIO, True)]:
    SCENARIOS[_name] = Scenario('message', (*_MIXED, *_extra_args), 'control_latency_p99_us',
                                False, 'control_latency_max_us', not_for=frozenset(_not_for),
                                contended=_contended)
# nodes_<N>: N composed nodes in one process, each with a subscription hearing 100 Hz and
# a 10 Hz timer: idle CPU, CPU under that load, threads.
for _n in (1, 10, 100):
    SCENARIOS[f'nodes_{_n}'] = Scenario(
        'message', ('--workload', 'nodes', '--nodes', str(_n), '--rate-hz', '100',
                    '--timer-hz', '10'),
        'idle_cpu_pct', False, 'cpu_process_pct', not_for=_NO_RAW)
# two_hosts_*: publisher and subscriber in two network namespaces joined by a veth pair,
# Fast DDS on UDP only (no shared memory), discovery over the link; `two_hosts_netem_*`
# adds 1 ms of delay and 1 % loss each way (two_hosts.py). fastdds_two_hosts.xml makes
# UDPv4 the only transport and has writers send heartbeats every 10 ms (it says why).
_TWO_HOSTS = {
    'throughput_0B': _STREAMS['throughput_0B'],
    'latency_1kHz': _STREAMS['latency_1kHz'],
    '1MB_30Hz': (('--payload', str(SIZES['1MB']), *_RELIABLE_100, '--rate-hz', '30',
                  '--latency'), 'latency_p99_us', False, 'dropped'),
}
for _link, _prefix in (('veth', 'two_hosts'), ('netem', 'two_hosts_netem')):
    for _name, (_args, _metric, _higher, _extra) in _TWO_HOSTS.items():
        SCENARIOS[f'{_prefix}_{_name}'] = Scenario(
            'xproc', (*_args, '--callback', 'node'), _metric, _higher, _extra, link=_link,
            fastdds_profile='fastdds_two_hosts.xml')
# The workloads robots run (the size sweep, robot_mix, mixed_criticality, nodes_<N>,
# two_hosts_*), as one group: their own smoke test (test/test_robot_workloads.py).
ROBOT_SCENARIOS = [name for name in SCENARIOS if name.startswith(
    ('latency_100Hz_', 'throughput_1MB', 'throughput_4MB', 'robot_mix', 'mixed_criticality',
     'nodes_', 'two_hosts'))]
NEEDS_ROOT = {name for name, s in SCENARIOS.items() if '--fifo-priority' in s.args}
TIMER_SCENARIOS = {name for name, s in SCENARIOS.items() if s.kind == 'timer'}

# The quick set (`make bench`) fits in 10 minutes on a 2-core machine with all seven
# executors; the full set is every scenario.
QUICK = ['throughput_0B', 'throughput_64KB', 'throughput_0B_be', 'latency_1kHz', 'cpu_10kHz',
         'throughput_0B_xproc', 'latency_1kHz_xproc', 'fanout', 'service_rtt',
         'workers_parallel_2', 'scaling_1000', 'timer_1kHz', 'simtime_1x']
FULL = list(SCENARIOS)

# executor -> (package, message node, timer node).
EXECUTORS = {
    'rclrs_tokio': ('rclrs_tokio_benchmarks', 'bench_node', 'timer_node'),
    # The same executor with stage tracing on: its rows carry the stage breakdown, and
    # set beside rclrs_tokio's in one interleaved run they measure what tracing costs.
    'rclrs_tokio_traced': ('rclrs_tokio_benchmarks', 'bench_node', None),
    # The same executor publishing its introspection (`ExecutorStats::publish_on`) ten
    # times a second: beside rclrs_tokio's rows, what an operator watching it costs.
    'rclrs_tokio_stats': ('rclrs_tokio_benchmarks', 'bench_node', None),
    # The same executor with a 30 µs linger (the `linger` option, off by default): whether
    # watching the mailbox before parking pays depends on the host.
    'rclrs_tokio_linger': ('rclrs_tokio_benchmarks', 'bench_node', None),
    # The same executor with one pool thread (`worker_threads(1)`) instead of one per
    # core: on two cores an in-process publisher takes a core of its own.
    'rclrs_tokio_1thread': ('rclrs_tokio_benchmarks', 'bench_node', None),
    # The same executor with `follow_load`: Worker tasks move between the pool threads as
    # their load says (light ones gather on one thread, a saturated thread sheds one).
    'rclrs_tokio_follow_load': ('rclrs_tokio_benchmarks', 'bench_node', None),
    'rclrs_basic': ('rclrs_tokio_benchmarks', 'bench_node', 'timer_node'),
    'raw_rcl': ('rclrs_tokio_benchmarks', 'bench_node', None),
    # The push-driven floor: rcl push callbacks unpark one thread that takes until empty.
    'raw_push': ('rclrs_tokio_benchmarks', 'bench_node', None),
    'rclcpp_single': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp'),
    'rclcpp_multi': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp'),
    'rclcpp_events': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp'),
    'rclcpp_events_cbg': ('rclcpp_events_bridge', 'bench_node_cpp', 'timer_node_cpp'),
    # rclcpp_events with intra-process communication (the fan-out rows only).
    'rclcpp_events_ipc': ('rclcpp_events_bridge', 'bench_node_cpp', None),
}
# Executors that run another one's node with extra flags: name -> (--executor, flags).
VARIANTS = {'rclrs_tokio_traced': ('rclrs_tokio', ('--stage-tracing',)),
            'rclrs_tokio_stats': ('rclrs_tokio', ('--stats-period-ms', '100')),
            'rclrs_tokio_linger': ('rclrs_tokio', ('--linger-us', '30')),
            'rclrs_tokio_1thread': ('rclrs_tokio', ('--threads', '1')),
            'rclrs_tokio_follow_load': ('rclrs_tokio', ('--follow-load',)),
            'rclcpp_events_ipc': ('rclcpp_events', ('--intra-process',))}
# Executors that apply to a few scenarios only: name -> those scenarios.
ONLY_IN = {'rclcpp_events_ipc': frozenset({'fanout', 'fanout_64KB', 'fanout_1kHz'})}
# What runs when --executors is not given: every executor but the variants, and the
# executors that only apply to a few scenarios (in those).
DEFAULT_EXECUTORS = [e for e in EXECUTORS if e not in VARIANTS or e in ONLY_IN]
# The publisher process of every `_xproc` row: the same for every executor under test.
XPROC_PUBLISHER = ('rclrs_tokio_benchmarks', 'bench_node')
# A node exits with this code when the executor is not in the installed library
# (EventsCBGExecutor in an older rclcpp): the harness reports the row as absent.
EXIT_NOT_AVAILABLE = 3


def headline(scenario: str) -> tuple[str, bool]:
    """The console table's metric for `scenario`, and whether higher is better."""
    s = SCENARIOS[scenario]
    return s.metric, s.higher_is_better


def applicable(scenario: str, executor: str) -> bool:
    if executor in ONLY_IN:
        return scenario in ONLY_IN[executor]
    return executor not in SCENARIOS[scenario].not_for


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
    node = timer_node if SCENARIOS[scenario].kind == 'timer' else message_node
    path = find_installed(package, node) if node else None
    if path is None:
        if package == 'rclcpp_events_bridge':
            return None, 'rclcpp is not installed (rclcpp_events_bridge built no nodes)'
        return None, f'{package}/{node} is not installed'
    if SCENARIOS[scenario].kind == 'xproc' and find_installed(*XPROC_PUBLISHER) is None:
        return None, 'the publisher process ({}/{}) is not installed'.format(*XPROC_PUBLISHER)
    return path, None


def arguments(scenario: str, executor: str | None = None) -> list[str]:
    """The scenario's flags, with its rclrs_tokio flags for an rclrs_tokio row."""
    s = SCENARIOS[scenario]
    base = VARIANTS.get(executor, (executor, ()))[0]
    return [*s.args, *(s.tokio_args if base == 'rclrs_tokio' else ())]


def environment(scenario: str) -> dict[str, str] | None:
    """The environment of the row's processes: this one, with the scenario's Fast DDS
    profile if it has one (None: this environment unchanged)."""
    profile = SCENARIOS[scenario].fastdds_profile
    if profile is None:
        return None
    return profile_environment(Path(__file__).with_name(profile))


def profile_environment(profile: Path) -> dict[str, str]:
    """This process's environment with the Fast DDS XML profile `profile` (a Fast DDS 3
    profile, as the files beside this one are) for the installed distro's Fast DDS."""
    if os.environ.get('ROS_DISTRO', '') not in FAST_DDS_2_DISTROS:
        return {**os.environ, 'FASTDDS_DEFAULT_PROFILES_FILE': str(profile)}
    return {**os.environ, 'FASTRTPS_DEFAULT_PROFILES_FILE': str(fast_dds_2_profile(profile))}


def fast_dds_2_profile(profile: Path) -> Path:
    """`profile` as Fast DDS 2 (Humble, Jazzy) reads it: Fast DDS 2 takes it from
    FASTRTPS_DEFAULT_PROFILES_FILE (not FASTDDS_...), and refuses the whole profile at an
    element that Fast DDS 3 renamed (FAST_DDS_3_RENAMED). The copy is written to the
    temporary directory, atomically, so concurrent runs may share it."""
    text = profile.read_text()
    for new, old in FAST_DDS_3_RENAMED.items():
        text = text.replace(f'<{new}>', f'<{old}>').replace(f'</{new}>', f'</{old}>')
    out = Path(tempfile.gettempdir()) / f'rclrs_tokio_fastdds2_{os.getuid()}_{profile.name}'
    staged = out.with_suffix(f'.{os.getpid()}')
    staged.write_text(text)
    staged.replace(out)
    return out


def executor_arguments(executor: str) -> list[str]:
    """`--executor <name>` and the variant's flags, for the node's command line."""
    name, flags = VARIANTS.get(executor, (executor, ()))
    return ['--executor', name, *flags]
