"""The benchmark harness, run for real with tiny windows: every scenario of the full set
for every executor whose nodes are installed (the workloads robots run in
test_robot_workloads.py). The numbers must be sane, the outputs well-formed, and
executors that cannot run (rclcpp without a ROS install) absent with a reason rather than
made up."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / 'benchmarks' / 'harness'
sys.path.insert(0, str(HARNESS))

from conftest import smoke_run  # noqa: E402
from scenarios import EXECUTORS, FULL, ROBOT_SCENARIOS, applicable, find_installed  # noqa: E402,E501


def test_a_smoke_run_of_every_scenario_is_well_formed_and_sane(tmp_path):
    # The workloads robots run have a smoke run of their own
    # (test_robot_workloads.py), so that each run fits its file's time limit.
    smoke_run(tmp_path, [name for name in FULL if name not in ROBOT_SCENARIOS])


def test_rclcpp_rows_are_absent_not_made_up_without_rclcpp(tmp_path):
    rclcpp_installed = find_installed('rclcpp_events_bridge', 'bench_node_cpp') is not None
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'harness' / 'bench.py'),
         '--scenarios', 'throughput_0B', '--executors', 'rclrs_basic,rclcpp_events',
         '--reps', '1', '--seconds', '0.3', '--warmup', '0.1', '--no-plots',
         '--output-dir', str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = json.loads((tmp_path / 'latest.json').read_text())['runs']
    rclcpp = [r for r in runs if r['executor'] == 'rclcpp_events']
    assert len(rclcpp) == 1
    if rclcpp_installed:
        assert rclcpp[0]['metrics']['received_per_s'] > 0
    else:
        assert rclcpp[0]['metrics'] is None
        assert 'rclcpp is not installed' in rclcpp[0]['absent']
        assert 'absent: rclcpp_events' in proc.stdout
    assert set(EXECUTORS) >= {r['executor'] for r in runs}


def test_update_replaces_only_the_scenarios_it_reruns(tmp_path):
    def bench(*args):
        proc = subprocess.run(
            [sys.executable, str(ROOT / 'benchmarks' / 'harness' / 'bench.py'),
             '--executors', 'rclrs_tokio', '--reps', '1', '--seconds', '0.3', '--warmup',
             '0.1', '--no-plots', '--output-dir', str(tmp_path), *args],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads((tmp_path / 'latest.json').read_text())

    first = bench('--scenarios', 'throughput_0B,timer_1kHz')
    second = bench('--scenarios', 'timer_1kHz', '--update')
    assert second['command'] == first['command']
    assert [u['scenarios'] for u in second['updates']] == [['timer_1kHz']]
    rows = {r['scenario']: r for r in second['runs']}
    assert set(rows) == {'throughput_0B', 'timer_1kHz'}
    assert rows['throughput_0B'] == next(r for r in first['runs']
                                         if r['scenario'] == 'throughput_0B')


def test_traced_rows_carry_the_stage_breakdown_and_plain_rows_do_not(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'harness' / 'bench.py'),
         '--scenarios', 'latency_1kHz,throughput_0B_xproc',
         '--executors', 'rclrs_tokio,rclrs_tokio_traced', '--reps', '1', '--seconds', '0.5',
         '--warmup', '0.2', '--no-plots', '--output-dir', str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '(no plots: --no-plots)' in proc.stdout
    runs = json.loads((tmp_path / 'latest.json').read_text())['runs']
    assert len(runs) == 4
    for run in runs:
        stages = run['metrics'].get('stages')
        if run['executor'] == 'rclrs_tokio':
            assert stages is None, run
            continue
        assert list(stages) == ['notify_to_wake', 'wake_to_take', 'take', 'callback',
                                'notify_to_callback_end'], run
        whole = stages['notify_to_callback_end']
        assert 0 < whole['p50_us'] <= whole['p99_us'] <= whole['max_us'], run
    assert '## Stage breakdown' in (tmp_path / 'latest.md').read_text()


def test_what_is_queued_when_the_window_closes_is_accounted_for():
    """Two 200 µs callbacks at 3 kHz each in one Worker: more than it can run. The
    window's rate shows the shortfall, the backlog at the close is reported, and what
    drains afterwards counts as received, not dropped."""
    node = find_installed('rclrs_tokio_benchmarks', 'bench_node')
    proc = subprocess.run(
        [str(node), '--executor', 'rclrs_tokio', '--workload', 'parallel', '--workers', '1',
         '--work-us', '200', '--rate-hz', '3000', '--seconds', '1', '--warmup-s', '0.5'],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    m = json.loads(proc.stdout.strip().splitlines()[-1])
    assert m['received_per_s'] < 0.95 * m['sent_per_s'], m
    assert m['queued_at_close'] > 0.02 * m['sent'], m
    assert m['received'] + m['dropped'] == m['sent'], m


def test_the_stats_variant_publishes_the_introspection_beside_the_stream():
    """`rclrs_tokio_stats` (`--stats-period-ms`) runs the publication's timer beside the
    stream: its callbacks are the stream's plus about one per period; the plain node's
    are the stream's alone. Other executors refuse the flag."""
    node = find_installed('rclrs_tokio_benchmarks', 'bench_node')
    assert 'rclrs_tokio_stats' in EXECUTORS

    def run(*extra):
        proc = subprocess.run(
            [str(node), '--executor', 'rclrs_tokio', '--workload', 'stream', '--rate-hz',
             '500', '--seconds', '1', '--warmup-s', '0.5', *extra],
            capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    plain, watched = run(), run('--stats-period-ms', '50')
    assert plain['executor_stats']['callbacks'] == plain['received'], plain
    extra = watched['executor_stats']['callbacks'] - watched['received']
    assert 15 <= extra <= 40, watched  # 1.5 s at 50 ms: about 30 publications
    refused = subprocess.run(
        [str(node), '--executor', 'rclrs_basic', '--stats-period-ms', '50'],
        capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert 'only rclrs_tokio publishes its stats' in refused.stderr


def test_fanout_rows_apply_where_the_workload_exists():
    # One fan-out subscription: only the Rust executors have FanoutSubscription.
    for scenario in ['fanout_shared', 'fanout_shared_on_worker_1kHz']:
        for executor in ['rclrs_tokio', 'rclrs_basic']:
            assert applicable(scenario, executor)
        for executor in ['raw_rcl', 'raw_push', 'rclcpp_events', 'rclcpp_events_ipc']:
            assert not applicable(scenario, executor), (scenario, executor)
    # Every executor has the 8-subscription rows at both sizes and at 1 kHz.
    for scenario in ['fanout', 'fanout_64KB', 'fanout_1kHz']:
        for executor in ['rclrs_tokio', 'rclrs_basic', 'raw_rcl', 'raw_push', 'rclcpp_single',
                         'rclcpp_events']:
            assert applicable(scenario, executor), (scenario, executor)
        assert applicable(scenario, 'rclcpp_events_ipc')
    # rclcpp's intra-process communication is a row of the in-process fan-out only.
    for scenario in ['throughput_0B', 'fanout_xproc', 'latency_1kHz', 'timer_1kHz']:
        assert not applicable(scenario, 'rclcpp_events_ipc'), scenario


def test_a_shared_fanout_row_is_compared_with_the_eight_subscription_row():
    from report import fanout_comparison
    runs = [
        {'scenario': 'fanout_shared_on_worker_1kHz', 'executor': 'rclrs_tokio',
         'metrics': {'cpu_executor_pct': 0.5}},
        {'scenario': 'fanout_1kHz', 'executor': 'rclcpp_events',
         'metrics': {'cpu_executor_pct': 1.5}},
    ]
    lines = fanout_comparison(runs)
    row = next(line for line in lines if 'fanout_1kHz rclcpp_events' in line)
    assert row.endswith('| 3.00x |'), row


def test_ratios_are_paired_by_repetition_and_reported_with_their_spread():
    from report import paired_ratio_table, paired_ratios
    runs = [
        {'scenario': 'throughput_0B', 'executor': 'rclrs_tokio',
         'metrics': {'received_per_s': 120.0},
         'headline_by_rep': {'1': 120.0, '2': 90.0, '3': 200.0, '4': 50.0}},
        # Repetition 4 of the reference failed: its ratio is left out, not guessed.
        {'scenario': 'throughput_0B', 'executor': 'rclcpp_events',
         'metrics': {'received_per_s': 100.0},
         'headline_by_rep': {'1': 100.0, '2': 100.0, '3': 100.0}},
        # A variant is paired with the reference's row of the scenario it is compared
        # with.
        {'scenario': 'fanout', 'executor': 'rclcpp_events',
         'metrics': {'received_per_s': 100.0}, 'headline_by_rep': {'1': 100.0}},
        {'scenario': 'fanout_shared', 'executor': 'rclrs_tokio',
         'metrics': {'received_per_s': 400.0}, 'headline_by_rep': {'1': 400.0}},
        # No reference row for the scenario it is compared with: no paired ratio.
        {'scenario': 'cpu_10kHz_dedicated', 'executor': 'rclrs_tokio',
         'metrics': {'cpu_executor_pct': 5.0}, 'headline_by_rep': {'1': 5.0}},
    ]
    # The medians (120 against 100) would say 1.20x; repetition by repetition it held in
    # two of three.
    assert paired_ratios(runs) == {('throughput_0B', 'rclrs_tokio'): [1.2, 0.9, 2.0],
                                   ('fanout_shared', 'rclrs_tokio'): [4.0]}
    # Against a floor, the executor's own rows only.
    floor = {'scenario': 'throughput_0B', 'executor': 'raw_push',
             'metrics': {'received_per_s': 240.0}, 'headline_by_rep': {'1': 240.0}}
    assert paired_ratios([*runs, floor], 'raw_push') == {
        ('throughput_0B', 'rclrs_tokio'): [0.5], ('throughput_0B', 'rclcpp_events'): [100 / 240]}
    lines = paired_ratio_table([*runs, floor])
    assert lines[0] == '## Paired ratios (per repetition)'
    rows = [line for line in lines if line.startswith('| throughput_0B |')]
    assert rows == [
        '| throughput_0B | rclrs_tokio | received_per_s | throughput_0B rclcpp_events | 1.20x | '
        '0.90x | 2.00x | 3 |',
        '| throughput_0B | raw_push | received_per_s | throughput_0B rclcpp_events | 2.40x | '
        '2.40x | 2.40x | 1 |',
        '| throughput_0B | rclrs_tokio | received_per_s | throughput_0B raw_push | 0.50x | '
        '0.50x | 0.50x | 1 |']


def test_a_variant_is_compared_with_the_scenario_it_varies():
    from report import compared_scenario
    assert compared_scenario('cpu_10kHz_dedicated') == 'cpu_10kHz'
    assert compared_scenario('latency_1kHz_contended_dedicated') == 'latency_1kHz_contended'
    assert compared_scenario('fanout_shared_64KB') == 'fanout_64KB'
    assert compared_scenario('fanout_shared_on_worker_1kHz') == 'fanout_1kHz'
    assert compared_scenario('throughput_0B_xproc') == 'throughput_0B_xproc'


def test_instructions_per_message_are_counted_under_callgrind(tmp_path):
    """instructions.py for real: two executors, a short window at a low rate. Every
    message costs the publishing thread and the receive side some thousands of
    instructions, and the window's messages are the publishes counted in the dump."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'harness' / 'instructions.py'),
         '--executors', 'rclrs_tokio,raw_push', '--rate-hz', '200', '--warmup', '3',
         '--window', '3', '--output-dir', str(tmp_path)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    document = json.loads((tmp_path / 'instructions.json').read_text())
    assert document['failures'] == [] and document['machine']['cpu']
    runs = {r['executor']: r for r in document['runs']}
    assert set(runs) == {'rclrs_tokio', 'raw_push'}
    for run in runs.values():
        # 200 Hz for 3 s, give or take what valgrind's start-up and the load shift.
        assert 200 <= run['messages'] <= 1200, run
        per = run['per_message']
        assert 2_000 < per['publishing_thread'] < 200_000, run
        assert 2_000 < per['receive_side'] < 200_000, run
        assert per['process'] == pytest.approx(
            per['publishing_thread'] + per['receive_side'], abs=2), run
        # Both publish paths read the clock (rmw stamps every message it sends).
        clocks = run['clock_reads_per_message']
        assert 0 < clocks['publishing_thread'] < 50, run
        assert 0 <= clocks['receive_side'] < 50, run
        assert run['node']['drop_pct'] == 0.0, run
    assert '| cpu_10kHz | rclrs_tokio |' in (tmp_path / 'instructions.md').read_text()


def test_a_callgrind_dump_is_read_per_thread(tmp_path):
    from instructions import parse_thread_dump, with_rate
    # Name compression: "(id) name" defines a name, "(id)" alone reuses it.
    dump = tmp_path / 'cg.1.1-02'
    dump.write_text('\n'.join([
        'events: Ir', 'fn=(1) 0x00000000002a8d10',
        '0 40', 'cfn=(2) rcl_publish', 'calls=30 0', '0 900', 'cfn=(3) clock_gettime',
        'calls=60 0', '0 100', 'cfn=(2)', 'calls=12 0', '0 300', 'summary: 1340', '']))
    assert parse_thread_dump(dump) == {'instructions': 1340, 'clock_reads': 60,
                                       'publishes': 42, 'publisher': True}
    # Clock reads: glibc's clock_gettime from anywhere but itself (its own call into
    # the vDSO is part of the same read).
    other = tmp_path / 'cg.1.1-03'
    other.write_text('events: Ir\nfn=(1) tokio::runtime::park\n0 77\n'
                     'cfn=(2) clock_gettime@@GLIBC_2.17\ncalls=5 0\n0 50\n'
                     'fn=(2)\n0 10\ncfn=(3) clock_gettime@@GLIBC_PRIVATE\ncalls=5 0\n0 20\n'
                     'totals: 157\n')
    assert parse_thread_dump(other) == {'instructions': 157, 'clock_reads': 5,
                                        'publishes': 0, 'publisher': False}
    # rclcpp's intra-process publish, where a publisher never calls rcl_publish.
    ipc = tmp_path / 'cg.1.1-04'
    ipc.write_text('events: Ir\nfn=(1) main\n0 5\ncfn=(2) void rclcpp::experimental::'
                   'IntraProcessManager::do_intra_process_publish<Msg>(unsigned long)\n'
                   'calls=7 0\n0 70\nsummary: 75\n')
    assert parse_thread_dump(ipc)['publishes'] == 7
    assert with_rate(['--payload', '0', '--rate-hz', '10000'], 500) == \
        ['--payload', '0', '--rate-hz', '500']


def test_instructions_refuses_what_it_cannot_count(tmp_path):
    script = str(ROOT / 'benchmarks' / 'harness' / 'instructions.py')
    for args in (['--scenarios', 'throughput_0B_xproc'], ['--rate-hz', '0'],
                 ['--executors', 'no_such_executor']):
        proc = subprocess.run([sys.executable, script, *args, '--output-dir', str(tmp_path)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (args, proc.stderr)
        assert 'error:' in proc.stderr, (args, proc.stderr)


def test_a_profile_that_fast_dds_refuses_fails_the_row(tmp_path):
    # Fast DDS goes on with its defaults when it refuses a profile, so the row would
    # measure the defaults under the scenario's name: it must fail instead. An element
    # that no Fast DDS knows stands for one that a distro's Fast DDS names otherwise.
    import bench
    from scenarios import arguments, profile_environment
    good = (HARNESS / 'fastdds_two_hosts.xml').read_text()
    broken = tmp_path / 'refused_by_fast_dds.xml'
    broken.write_text(good.replace('heartbeat_period>', 'no_such_element>'))
    assert broken.read_text() != good
    node = find_installed('rclrs_tokio_benchmarks', 'bench_node')
    cmd = [str(node), '--executor', 'rclrs_tokio', *arguments('throughput_0B'),
           '--seconds', '0.3', '--warmup-s', '0.1']
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env=profile_environment(broken))
    with pytest.raises(RuntimeError, match='Fast DDS refused the scenario.s XML profile'):
        bench._result(proc, cmd)


def test_the_cpu_burners_die_with_a_harness_that_is_killed():
    # A harness killed during a contended row (SIGKILL: no `finally` runs) must not leave
    # its burners keeping both cores busy.
    child = subprocess.Popen(
        [sys.executable, '-c',
         'import sys, time; sys.path.insert(0, sys.argv[1]); import bench\n'
         'with bench.cpu_burners(2) as burners:\n'
         '    print(" ".join(str(b.pid) for b in burners), flush=True)\n'
         '    time.sleep(60)\n',
         str(HARNESS)],
        stdout=subprocess.PIPE, text=True)
    pids = [int(pid) for pid in child.stdout.readline().split()]
    assert len(pids) == 2
    child.kill()
    child.wait()
    deadline = time.monotonic() + 5
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in pids if _running(pid)]
        time.sleep(0.05)
    assert not alive, f'burners {alive} outlived the harness'


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, killed and not yet reaped, is not)."""
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except OSError:
        return False
    return stat.rsplit(')', 1)[1].split()[0] != 'Z'

