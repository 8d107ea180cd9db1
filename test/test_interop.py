"""A Rust node on the patched rclrs talks to Rust and rclpy nodes on the real rmw:
in one process, across two processes, and to and from rclpy, for std_msgs and for this
workspace's own message."""

import pytest

from conftest import finish, installed_executable, start, unique_topic

COUNT = 50


@pytest.mark.parametrize('kind', ['std', 'bench'])
def test_rust_to_rust_across_processes(rust_node, kind):
    topic = unique_topic(f'rr_{kind}')
    listener = start([rust_node, '--role', 'listener', '--type', kind, '--topic', topic,
                      '--count', COUNT])
    talker = start([rust_node, '--role', 'talker', '--type', kind, '--topic', topic,
                    '--count', COUNT])
    assert finish(talker)['published'] == COUNT
    got = finish(listener)
    assert got['received'] == COUNT
    first, last = ('hello 0', f'hello {COUNT - 1}') if kind == 'std' else ('0', f'{COUNT - 1}')
    assert (got['first'], got['last']) == (first, last)


@pytest.mark.parametrize('kind', ['std', 'bench'])
def test_rclpy_to_rust(rust_node, rclpy_node, kind):
    topic = unique_topic(f'pr_{kind}')
    listener = start([rust_node, '--role', 'listener', '--type', kind, '--topic', topic,
                      '--count', COUNT])
    talker = start([*rclpy_node, '--role', 'talker', '--type', kind, '--topic', topic,
                    '--count', COUNT])
    finish(talker)
    got = finish(listener)
    assert got['received'] == COUNT
    assert 'corrupt' not in got['last']


@pytest.mark.parametrize('kind', ['std', 'bench'])
def test_rust_to_rclpy(rust_node, rclpy_node, kind):
    topic = unique_topic(f'rp_{kind}')
    listener = start([*rclpy_node, '--role', 'listener', '--type', kind, '--topic', topic,
                      '--count', COUNT])
    talker = start([rust_node, '--role', 'talker', '--type', kind, '--topic', topic,
                    '--count', COUNT])
    finish(talker)
    got = finish(listener)
    assert got['received'] == COUNT
    assert 'corrupt' not in got['last']


def test_rust_pub_sub_in_one_process():
    demo = installed_executable('rclrs_tokio_benchmarks', 'demo')
    proc = start([demo, '--rate-hz', '500', '--seconds', '0.5', '--topic',
                  unique_topic('one_process')])
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert 'published 250 BenchMessage' in out, out
    assert 'received 250 (0 lost)' in out, out
