"""The executor's ros2_tracing events in a real LTTng session.

A session records `ros2:*` (with the thread id) while `trace_node` runs one entity of
each traced kind with the executor's tracing switched on; babeltrace2 reads the trace
back. Every callback must have exactly one `callback_start` and one `callback_end`,
properly nested on its thread, and be linked to its entity the way tracetools_analysis
links them: a subscription's callback through `rclcpp_subscription_callback_added` and
`rclcpp_subscription_init` to the handle of rcl's own `rcl_subscription_init` (with the
topic), a service's and a timer's through `rclcpp_*_callback_added` to rcl's
`rcl_service_init` / `rcl_timer_init`, and every callback to a registered name. A
second run with the switch off must emit no callback event at all.

rcl's own events are the check that the node reached the session at all: where the
node's lttng-ust cannot talk to the session daemon (see wheel_quirks.lttng_ust_preload),
the test skips and says so, as it does where LTTng is not installed.
"""

import json
import os
import re
import shutil
import subprocess
import uuid
from collections import defaultdict

import pytest

from conftest import installed_executable

EVENT = re.compile(r"ros2:(\w+): \{ cpu_id = \d+ \}, \{ vtid = (\d+) \}, \{ (.*) \}$")
FIELD = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|[^,]+)')


def lttng(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(['lttng', *args], capture_output=True, text=True, timeout=60)


def parse(line: str):
    """(event name, thread id, fields) of one babeltrace2 line, or None."""
    match = EVENT.search(line)
    if match is None:
        return None
    fields = {k: v.strip().strip('"') for k, v in FIELD.findall(match.group(3))}
    return match.group(1), int(match.group(2)), fields


def record(tmp_path, node, trace: bool) -> tuple[dict, list]:
    """Run `trace_node` in a fresh LTTng session; its summary and the parsed events."""
    session = f'rclrs_tokio_{uuid.uuid4().hex[:8]}'
    out = tmp_path / session
    created = lttng('create', session, f'--output={out}')
    if created.returncode != 0:
        pytest.skip(f'cannot create an LTTng session: {created.stderr.strip()}')
    try:
        for args in (('enable-event', '-u', 'ros2:*'), ('add-context', '-u', '-t', 'vtid'),
                     ('start',)):
            done = lttng(*args)
            assert done.returncode == 0, done.stderr
        env = {k: v for k, v in os.environ.items() if k != 'RCLRS_TOKIO_ROS2_TRACING'}
        preload = os.environ.get('RCLRS_TOKIO_LTTNG_PRELOAD')
        if preload:
            env['LD_PRELOAD'] = preload
        name = f'trace_{uuid.uuid4().hex[:8]}'
        cmd = [str(node), '--name', name, '--count', '20'] + (['--trace'] if trace else [])
        ran = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        summary = json.loads(ran.stdout.strip().splitlines()[-1])
    finally:
        lttng('stop', session)
        lttng('destroy', session)
    read = subprocess.run(['babeltrace2', str(out)], capture_output=True, text=True,
                          timeout=300)
    events = [e for e in map(parse, read.stdout.splitlines()) if e]
    if not any(name == 'rcl_node_init' for name, _, _ in events):
        bundled = 'the wheels\' lttng-ust 2.8' if not preload else 'the preloaded lttng-ust'
        pytest.skip(f'the node never reached the LTTng session daemon ({bundled} and this '
                    'lttng-sessiond speak different protocols; make setup, as root, '
                    'prepares a stand-in: wheel_quirks.lttng_ust_preload)')
    return summary, events


@pytest.fixture
def node():
    for tool in ('lttng', 'babeltrace2'):
        if shutil.which(tool) is None:
            pytest.skip(f'{tool} is not installed (make setup installs lttng-tools and '
                        'babeltrace2 from Debian when run as root)')
    return installed_executable('rclrs_tokio_benchmarks', 'trace_node')


def test_every_callback_has_one_start_and_one_end_linked_to_its_entity(node, tmp_path):
    summary, events = record(tmp_path, node, trace=True)
    by_name = defaultdict(list)
    for name, _, fields in events:
        by_name[name].append(fields)

    # Starts and ends: one each per execution, nested on each thread.
    open_on = defaultdict(list)
    runs = defaultdict(int)
    for name, vtid, fields in events:
        if name == 'callback_start':
            open_on[vtid].append(fields['callback'])
        elif name == 'callback_end':
            assert open_on[vtid], f'callback_end of {fields["callback"]} without a start'
            assert open_on[vtid].pop() == fields['callback'], 'callback_end out of order'
            runs[fields['callback']] += 1
    assert not any(open_on.values()), f'callbacks never ended: {dict(open_on)}'

    # Every callback is registered under a name; every entity of the node is there.
    names = {f['callback']: f['symbol'] for f in by_name['rclcpp_callback_register']}
    unnamed = set(runs) - set(names)
    assert not unnamed, f'callbacks without rclcpp_callback_register: {unnamed}'
    callbacks = defaultdict(list)
    for callback, symbol in names.items():
        callbacks[symbol].append(callback)
    topic, service = summary['topic'], summary['service']

    # Subscriptions: callback -> subscription object -> rcl handle -> topic.
    subscription_of = {f['callback']: f['subscription']
                       for f in by_name['rclcpp_subscription_callback_added']}
    handle_of = {f['subscription']: f['subscription_handle']
                 for f in by_name['rclcpp_subscription_init']}
    topic_of = {f['subscription_handle']: f['topic_name']
                for f in by_name['rcl_subscription_init']}
    subscriptions = callbacks[f'subscription {topic}']
    # The node's, the Worker's and the fan-out's own.
    assert len(subscriptions) == 3, names
    for callback in subscriptions:
        assert topic_of[handle_of[subscription_of[callback]]] == topic
    assert sum(runs[c] for c in subscriptions) >= 3 * summary['published']

    # The service: callback -> rcl handle -> service name.
    service_handle = {f['callback']: f['service_handle']
                      for f in by_name['rclcpp_service_callback_added']}
    service_name = {f['service_handle']: f['service_name']
                    for f in by_name['rcl_service_init']}
    [service_callback] = callbacks[f'service {service}']
    assert service_name[service_handle[service_callback]] == service
    assert runs[service_callback] >= summary['requests']

    # The timer: callback -> rcl handle -> rcl_timer_init with its 10 ms period.
    timer_handle = {f['callback']: f['timer_handle']
                    for f in by_name['rclcpp_timer_callback_added']}
    period_of = {f['timer_handle']: int(f['period']) for f in by_name['rcl_timer_init']}
    [timer_callback] = callbacks['timer, period 10000000 ns']
    assert period_of[timer_handle[timer_callback]] == 10_000_000
    assert runs[timer_callback] >= summary['published']

    # The client and the fan-out's two callbacks: by name.
    [client_callback] = callbacks[f'client {service}']
    assert runs[client_callback] >= summary['replies']
    # Named after the topic as the fan-out was given it (relative here).
    fanout = callbacks[f'fan-out callback {topic.lstrip("/")}']
    assert len(fanout) == 2, names
    assert all(runs[c] >= summary['published'] for c in fanout), runs


def test_with_the_switch_off_the_executor_emits_no_callback_event(node, tmp_path):
    _, events = record(tmp_path, node, trace=False)
    emitted = {name for name, _, _ in events}
    assert not emitted & {'callback_start', 'callback_end', 'rclcpp_callback_register',
                          'rclcpp_subscription_init'}, emitted
