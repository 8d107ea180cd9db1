"""Setup that cannot proceed stops with one clear line, never a stack trace, and exits 2."""

import os
import subprocess
import sys
from pathlib import Path

SETUP = Path(__file__).resolve().parents[1] / 'setup.py'
ROOT = SETUP.parents[2]


def run_setup(tmp_path, **env_overrides):
    env = {k: v for k, v in os.environ.items()
           if k not in ('ROS_DISTRO', 'AMENT_PREFIX_PATH', 'RUSTFLAGS', 'EMBEDDED_DISTRO')}
    env['RCLRS_TOKIO_STATE_DIR'] = str(tmp_path / 'state')
    env.update(env_overrides)
    return subprocess.run([sys.executable, str(SETUP)], env=env, capture_output=True,
                          text=True, timeout=300)


def assert_one_clear_line(proc, *expected):
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith('setup: error: '), lines[0]
    assert 'Traceback' not in proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]


def test_unsupported_ros_distro(tmp_path):
    proc = run_setup(tmp_path, ROS_DISTRO='foxy', AMENT_PREFIX_PATH=str(tmp_path))
    assert_one_clear_line(proc, 'ROS_DISTRO=foxy is not supported', 'kilted')


def test_unsupported_embedded_distro(tmp_path):
    proc = run_setup(tmp_path, EMBEDDED_DISTRO='humble')
    assert_one_clear_line(proc, 'EMBEDDED_DISTRO=humble is not supported', 'jazzy or kilted')


def test_make_refuses_an_unsupported_embedded_distro_in_one_line():
    # As a user's shell has it: no ROS sourced, not inside another make.
    env = {k: v for k, v in os.environ.items()
           if k not in ('ROS_DISTRO', 'AMENT_PREFIX_PATH', 'MAKEFLAGS', 'MFLAGS', 'MAKELEVEL')}
    proc = subprocess.run(['make', '-C', str(ROOT), '-n', 'build', 'EMBEDDED_DISTRO=rolling'],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if not line.startswith('make: ')]
    assert len(lines) == 1, proc.stderr
    assert 'EMBEDDED_DISTRO=rolling is not supported' in lines[0], lines[0]
    assert 'jazzy or kilted' in lines[0], lines[0]


def test_embedded_distro_beside_a_sourced_install(tmp_path):
    proc = run_setup(tmp_path, EMBEDDED_DISTRO='jazzy', ROS_DISTRO='kilted',
                     AMENT_PREFIX_PATH=str(tmp_path))
    assert_one_clear_line(proc, 'EMBEDDED_DISTRO=jazzy asks for the embedded prefix')


def test_distro_without_prefix(tmp_path):
    proc = run_setup(tmp_path, ROS_DISTRO='kilted')
    assert_one_clear_line(proc, 'AMENT_PREFIX_PATH is empty')


def test_prefix_without_distro(tmp_path):
    proc = run_setup(tmp_path, AMENT_PREFIX_PATH=str(tmp_path))
    assert_one_clear_line(proc, 'ROS_DISTRO is not')


def test_sourced_install_without_rcl(tmp_path):
    proc = run_setup(tmp_path, ROS_DISTRO='kilted', AMENT_PREFIX_PATH=str(tmp_path))
    assert_one_clear_line(proc, 'no librcl.so')


def test_a_sourced_install_inside_the_state_folder_is_still_a_sourced_install(tmp_path):
    # Only the flavours' own prefixes (.ros/<flavour>/) are the overlay's; an install laid
    # out elsewhere under .ros/ (CI's Jazzy leg uses .ros/ci/) is the user's, so setup
    # checks it as a sourced install and does not quietly build the embedded prefix.
    install = ROOT / '.ros' / 'ci' / f'not-a-ros-install-{os.getpid()}'
    install.mkdir(parents=True)
    try:
        proc = run_setup(tmp_path, ROS_DISTRO='jazzy', AMENT_PREFIX_PATH=str(install))
    finally:
        install.rmdir()
    assert_one_clear_line(proc, 'no librcl.so')


def test_unreachable_registry_then_half_written_cache(tmp_path):
    unreachable = {'PIP_INDEX_URL': 'http://127.0.0.1:9/simple', 'PIP_RETRIES': '0',
                   'PIP_TIMEOUT': '2', 'PIP_NO_CACHE_DIR': '1', 'PIP_FIND_LINKS': ''}
    proc = run_setup(tmp_path, **unreachable)
    assert_one_clear_line(proc, 'installing packages from PyPI failed', 'rerun `make setup`')
    # The venv exists but holds no wheels and no stamp: a half-written cache. A rerun
    # resumes it (here it fails the same clear way, since the registry is still down).
    assert (tmp_path / 'state' / 'venv' / 'bin' / 'python3').exists()
    assert not (tmp_path / 'state' / 'stamps' / 'venv').exists()
    # Break the venv the way an interrupted creation leaves it.
    (tmp_path / 'state' / 'venv' / 'bin' / 'python3').unlink()
    proc = run_setup(tmp_path, **unreachable)
    assert_one_clear_line(proc, 'installing packages from PyPI failed')
    assert (tmp_path / 'state' / 'venv' / 'bin' / 'python3').exists(), 'the venv was rebuilt'
