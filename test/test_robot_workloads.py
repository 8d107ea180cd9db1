"""The workloads robots run (issue 52's scenarios: the size sweep, robot_mix,
mixed_criticality, nodes_<N>, two_hosts_*), through the harness for real: a smoke run of
every one for every executor installed, the join of robot_mix's two processes, and the
bounded two_hosts run over a link that delays and loses packets."""

import json
import subprocess
import sys

import pytest

from conftest import HARNESS, smoke_run

sys.path.insert(0, str(HARNESS))

from scenarios import ROBOT_SCENARIOS, SCENARIOS  # noqa: E402


def test_a_smoke_run_of_every_robot_workload_is_well_formed_and_sane(tmp_path):
    smoke_run(tmp_path, ROBOT_SCENARIOS)


def test_every_scenario_is_listed_in_help():
    proc = subprocess.run([sys.executable, str(HARNESS / 'bench.py'), '--help'],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    listed = set(proc.stdout.split('scenarios (--scenarios')[1].replace(',', ' ').split())
    missing = [name for name in SCENARIOS if name not in listed]
    assert not missing, missing


def test_robot_mix_streams_are_joined_with_what_the_drivers_sent():
    from bench import join_streams
    heard = {'workload': 'robot_mix', 'received': 14, 'streams': {
        'imu': {'received': 10, 'latency_p99_us': 80.0},
        'control': {'received': 4, 'latency_p99_us': 60.0}}}
    driven = {'sent': 16, 'streams': {
        'imu': {'sent': 10, 'publish_failed': 0},
        'control': {'sent': 6, 'publish_failed': 1},
        # Calls are answered in the drivers' process: their counts come from there.
        'service': {'sent': 5, 'received': 4, 'latency_p99_us': 300.0}}}
    joined = join_streams(heard, driven)
    assert joined['streams']['imu']['lost'] == 0
    assert joined['streams']['control'] == {'received': 4, 'latency_p99_us': 60.0, 'sent': 6,
                                            'publish_failed': 1, 'lost': 2}
    assert joined['streams']['service']['lost'] == 1
    assert (joined['lost'], joined['dropped'], joined['sent']) == (3, 3, 21)


def test_two_hosts_lose_nothing_over_a_lossy_link_and_leave_no_namespace(tmp_path):
    """The bounded two_hosts run: the 1 kHz stream from one network namespace to another,
    over a plain veth pair and over the link with 1 ms delay and 1 % loss each way. Fast
    DDS must deliver over UDP only (the subscriber's receive threads are UDP ones, none
    is a shared-memory one), reliable delivery must lose nothing, and the harness must
    remove its namespaces afterwards."""
    import two_hosts
    why = two_hosts.unavailable()
    if why:
        pytest.skip(why)
    harness = subprocess.Popen(
        [sys.executable, str(HARNESS / 'bench.py'), '--scenarios',
         'two_hosts_latency_1kHz,two_hosts_netem_latency_1kHz', '--executors', 'rclrs_tokio',
         '--reps', '1', '--seconds', '2', '--warmup', '0.5', '--no-plots',
         '--output-dir', str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = harness.communicate(timeout=300)
    runs = json.loads((tmp_path / 'latest.json').read_text())['runs']
    refused = [r['absent'] for r in runs if 'cannot make' in (r.get('absent') or '')]
    if refused:
        pytest.skip(f'network namespaces cannot be made here: {refused[0]}')
    assert harness.returncode == 0, stderr[-2000:]
    listed = subprocess.run(['ip', 'netns', 'list'], capture_output=True, text=True).stdout
    assert f'rclrs_bench_{harness.pid}_' not in listed, listed
    for run in runs:
        m = run['metrics']
        assert m, run
        assert m['dropped'] == 0 and m['sent_per_s'] > 500, run
        assert 900 <= m['received_per_s'] <= 1100, run
        # What the subscriber's threads used: Fast DDS's UDP receive threads, no
        # shared-memory listener.
        threads = m['thread_cpu_pct']
        assert any(name.startswith('dds.udp') for name in threads), run
        assert not any(name.startswith('dds.shm') for name in threads), run
    kinds = {run['scenario']: run['metrics']['link'] for run in runs}
    assert kinds['two_hosts_latency_1kHz'] == 'veth', kinds
    assert 'loss 1%' in kinds['two_hosts_netem_latency_1kHz'], kinds
