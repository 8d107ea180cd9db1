"""The workloads robots run (issue 52's scenarios: the size sweep, robot_mix,
mixed_criticality, nodes_<N>), through the harness for real: a smoke run of every one for
every executor installed, and the join of robot_mix's two processes."""

import subprocess
import sys

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

