"""The launch files compile everywhere, and wherever `launch` and `launch_ros` are
importable they load, every argument has a description, and their OpaqueFunction, performed
with the default arguments (and with a few overrides) in a LaunchContext, yields Node
actions whose command lines keep to the nodes' flags; no process is started."""

import importlib.util
import py_compile
from pathlib import Path

import pytest

LAUNCH_DIR = Path(__file__).resolve().parents[1] / 'launch'
LAUNCH_FILES = sorted(LAUNCH_DIR.glob('*_launch.py'))

# The workload each bench_node launch file runs (None: timer_node, no --workload flag).
WORKLOADS = {
    'executor_comparison_launch.py': 'stream',
    'xproc_comparison_launch.py': 'stream',
    'service_comparison_launch.py': 'service',
    'scaling_comparison_launch.py': 'scaling',
    'workers_parallel_launch.py': 'parallel',
    'timer_comparison_launch.py': None,
}
RUST_BENCH = ('rclrs_tokio_benchmarks', 'bench_node')
CPP_BENCH = ('rclcpp_events_bridge', 'bench_node_cpp')
RUST_TIMER = ('rclrs_tokio_benchmarks', 'timer_node')
CPP_TIMER = ('rclcpp_events_bridge', 'timer_node_cpp')
# The node CLI contract (benchmarks/src/workload/config.rs, timer_node.rs and their C++
# twins): a launch file passes no other flag.
BENCH_FLAGS = {'--executor', '--workload', '--role', '--topic', '--payload', '--reliability',
               '--depth', '--rate-hz', '--seconds', '--warmup-s', '--latency', '--callback',
               '--threads', '--subscriptions', '--workers', '--work-us', '--idle-exit-s',
               '--shared-subscription', '--intra-process'}
TIMER_FLAGS = {'--executor', '--seconds', '--rate-hz', '--sim-speed', '--period-s', '--clock-hz'}
BARE_FLAGS = {'--latency', '--shared-subscription', '--intra-process'}


def require_launch():
    if importlib.util.find_spec('launch') is None or importlib.util.find_spec('launch_ros') is None:
        pytest.skip('launch and launch_ros are not installed (no registry carries them)')


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def perform(path, overrides=None):
    """Visit the description's actions in a fresh LaunchContext with the given launch
    arguments (the rest take their defaults), as `ros2 launch` would, without starting
    anything. Returns (context, the actions the OpaqueFunctions returned)."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    context = LaunchContext()
    context.launch_configurations.update(overrides or {})
    produced = []
    for entity in load(path).generate_launch_description().entities:
        if isinstance(entity, DeclareLaunchArgument):
            entity.visit(context)  # sets the default where no override is given
        elif isinstance(entity, OpaqueFunction):
            produced += list(entity.visit(context) or [])
    return context, produced


def node_arguments(node, context):
    """The node's own command-line arguments: everything between the executable and the
    `--ros-args` that launch_ros appends."""
    from launch.utilities import perform_substitutions

    words = []
    for part in node.cmd[1:]:
        word = perform_substitutions(context, part)
        if word == '--ros-args':  # what follows needs the node's execution (its name)
            break
        words.append(word)
    return words


def flag_values(words):
    """{flag: value} of `--flag value` pairs; bare flags map to True."""
    flags, i = {}, 0
    while i < len(words):
        flag = words[i]
        assert flag.startswith('--'), f'{flag!r} is not a flag in {words}'
        assert flag not in flags, f'{flag} given twice in {words}'
        if flag in BARE_FLAGS:
            flags[flag], i = True, i + 1
        else:
            assert i + 1 < len(words), f'{flag} has no value in {words}'
            flags[flag], i = words[i + 1], i + 2
    return flags


def nodes_of(path, overrides=None):
    from launch_ros.actions import Node

    context, produced = perform(path, overrides)
    nodes = [action for action in produced if isinstance(action, Node)]
    assert nodes, f'{path.name}: the OpaqueFunction yields no Node action'
    described = []
    for node in nodes:
        flags = flag_values(node_arguments(node, context))
        allowed = {None: TIMER_FLAGS}.get(WORKLOADS.get(path.name, ''), BENCH_FLAGS)
        assert set(flags) <= allowed, f'{path.name}: unknown flags {set(flags) - allowed}'
        described.append(((node.node_package, node.node_executable), flags))
    return context, produced, described


def test_there_are_launch_files():
    assert {p.name for p in LAUNCH_FILES} >= set(WORKLOADS)


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_compiles(path):
    py_compile.compile(str(path), doraise=True)


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_arguments_have_descriptions(path):
    require_launch()
    from launch.actions import DeclareLaunchArgument

    description = load(path).generate_launch_description()
    arguments = [e for e in description.entities if isinstance(e, DeclareLaunchArgument)]
    assert arguments, 'no launch arguments'
    for argument in arguments:
        assert argument.description and argument.description != 'no description given', \
            argument.name
        assert argument.default_value is not None, f'{argument.name} has no default'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_default_arguments_yield_nodes(path):
    require_launch()
    _, _, nodes = nodes_of(path)
    if path.name not in WORKLOADS:
        return  # a launch file this test does not know yet: yielding nodes is enough
    workload = WORKLOADS[path.name]
    for executable, flags in nodes:
        assert flags['--executor'] == 'rclrs_tokio', flags
        if workload is None:
            assert executable == RUST_TIMER
        else:
            assert executable == RUST_BENCH
            assert flags['--workload'] == workload, flags


@pytest.mark.parametrize('path', [p for p in LAUNCH_FILES if p.name in WORKLOADS],
                         ids=lambda p: p.name)
def test_rclcpp_executor_runs_the_cpp_node(path):
    require_launch()
    _, _, nodes = nodes_of(path, {'executor': 'rclcpp_events'})
    expected = CPP_TIMER if WORKLOADS[path.name] is None else CPP_BENCH
    under_test = [(exe, flags) for exe, flags in nodes if flags['--executor'] == 'rclcpp_events']
    assert [exe for exe, _ in under_test] == [expected]


def test_executor_comparison_fanout_arguments():
    require_launch()
    _, _, nodes = nodes_of(LAUNCH_DIR / 'executor_comparison_launch.py',
                           {'subscriptions': '8', 'workers': '2', 'latency': 'true'})
    [(_, flags)] = nodes
    assert (flags['--subscriptions'], flags['--workers'], flags['--latency']) == ('8', '2', True)
    assert flags.get('--role', 'both') == 'both'


def test_executor_comparison_shared_subscription_and_intra_process():
    require_launch()
    path = LAUNCH_DIR / 'executor_comparison_launch.py'
    _, _, [(_, flags)] = nodes_of(path, {'subscriptions': '8', 'workers': '2',
                                         'callback': 'worker', 'shared_subscription': 'true'})
    assert flags['--shared-subscription'] is True and '--intra-process' not in flags
    _, _, [(node, flags)] = nodes_of(path, {'executor': 'rclcpp_events',
                                            'intra_process': 'true'})
    assert node == CPP_BENCH and flags['--intra-process'] is True
    # Asking an executor for what it does not have is an error, not a silent no-op.
    for overrides in [{'executor': 'rclcpp_events', 'shared_subscription': 'true'},
                      {'executor': 'raw_push', 'shared_subscription': 'true'},
                      {'executor': 'rclrs_tokio', 'intra_process': 'true'}]:
        with pytest.raises(RuntimeError):
            perform(path, overrides)


def test_xproc_two_processes_one_topic_and_shutdown_on_subscriber_exit():
    require_launch()
    from launch.actions import RegisterEventHandler, Shutdown
    from launch.event_handlers import OnProcessExit
    from launch.events.process import ProcessExited
    from launch_ros.actions import Node

    path = LAUNCH_DIR / 'xproc_comparison_launch.py'
    context, produced, nodes = nodes_of(path, {'executor': 'rclcpp_events',
                                               'subscriptions': '8', 'workers': '2'})
    by_role = {flags['--role']: (exe, flags) for exe, flags in nodes}
    assert set(by_role) == {'sub', 'pub'}
    (sub_exe, sub), (pub_exe, pub) = by_role['sub'], by_role['pub']
    assert sub_exe == CPP_BENCH and sub['--executor'] == 'rclcpp_events'
    # The publisher is always the Rust node on rclrs_tokio, whatever is under test.
    assert pub_exe == RUST_BENCH and pub['--executor'] == 'rclrs_tokio'
    assert sub['--topic'] == pub['--topic'] and sub['--topic']
    assert sub['--subscriptions'] == pub['--subscriptions'] == '8'
    assert sub['--workers'] == '2' and '--idle-exit-s' in sub
    for flag in ('--payload', '--reliability', '--depth', '--rate-hz', '--seconds', '--warmup-s'):
        assert sub[flag] == pub[flag], flag

    # The subscriber's exit shuts the launch down; the publisher's does not.
    node_actions = [a for a in produced if isinstance(a, Node)]
    subscriber = next(a for a, (_, flags) in zip(node_actions, nodes) if flags['--role'] == 'sub')
    publisher = next(a for a in node_actions if a is not subscriber)
    handlers = [a.event_handler for a in produced if isinstance(a, RegisterEventHandler)]
    assert all(isinstance(h, OnProcessExit) for h in handlers) and handlers

    def on_exit(action, returncode):
        event = ProcessExited(action=action, name='x', cmd=[], cwd=None, env=None, pid=1,
                              returncode=returncode)
        entities = []
        for handler in handlers:
            if handler.matches(event):
                entities += list(handler.handle(event, context) or [])
        return entities

    assert any(isinstance(e, Shutdown) for e in on_exit(subscriber, 0))
    assert any(isinstance(e, Shutdown) for e in on_exit(subscriber, 2))
    assert not any(isinstance(e, Shutdown) for e in on_exit(publisher, 0))
    assert not any(isinstance(e, Shutdown) for e in on_exit(publisher, 2))


def test_xproc_topic_argument_and_unique_default():
    require_launch()
    path = LAUNCH_DIR / 'xproc_comparison_launch.py'
    _, _, nodes = nodes_of(path, {'topic': 'bench_xproc_given'})
    assert {flags['--topic'] for _, flags in nodes} == {'bench_xproc_given'}
    _, _, nodes = nodes_of(path)
    [default] = {flags['--topic'] for _, flags in nodes}
    assert default.startswith('bench_xproc_') and default != 'bench_xproc_'


def test_parallel_and_scaling_arguments():
    require_launch()
    _, _, [(_, flags)] = nodes_of(LAUNCH_DIR / 'workers_parallel_launch.py',
                                  {'workers': '2', 'work_us': '50', 'rate_hz': '100'})
    assert (flags['--workers'], flags['--work-us'], flags['--rate-hz']) == ('2', '50', '100')
    _, _, [(_, flags)] = nodes_of(LAUNCH_DIR / 'scaling_comparison_launch.py',
                                  {'subscriptions': '1000', 'executor': 'raw_rcl'})
    assert flags['--subscriptions'] == '1000' and flags['--executor'] == 'raw_rcl'


def test_timer_sim_time_flags():
    require_launch()
    path = LAUNCH_DIR / 'timer_comparison_launch.py'
    _, _, [(_, flags)] = nodes_of(path, {'sim_speed': '10', 'period': '0.1'})
    assert (flags['--sim-speed'], flags['--period-s']) == ('10', '0.1')
    assert '--rate-hz' not in flags
    _, _, [(_, flags)] = nodes_of(path)
    assert '--sim-speed' not in flags and flags['--rate-hz'] == '1000'
    assert flags['--timers'] == '1'
    _, _, [(_, flags)] = nodes_of(path, {'timers': '1000', 'rate_hz': '10'})
    assert (flags['--timers'], flags['--rate-hz']) == ('1000', '10')


def test_service_comparison_runs_the_action_workload_too():
    require_launch()
    path = LAUNCH_DIR / 'service_comparison_launch.py'
    _, _, described = nodes_of(path, {'workload': 'action', 'executor': 'rclcpp_events'})
    [(node, flags)] = described
    assert node == CPP_BENCH
    assert flags['--workload'] == 'action' and '--payload' not in flags
    with pytest.raises(RuntimeError, match='workload:=sideways'):
        perform(path, {'workload': 'sideways'})
