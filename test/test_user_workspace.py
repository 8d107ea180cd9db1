"""A user's own workspace builds against the installed overlay the ordinary ROS way.

What the README's "Use it from your own workspace" section says, done in a fresh
temporary workspace: source the overlay's `install/setup.bash` (which chains the ROS
prefix and the patched rclrs, as an install built on /opt/ros chains /opt/ros), run
plain `colcon build` there, and run the package it built. The workspace holds an
interface package of its own (`my_interfaces`), whose Rust crate comes from
`rosidl_generate_interfaces()` with the overlay's generator, and the Rust package that
publishes and hears that message type on the Tokio executor. The shell starts as a user's
would: with none of the ROS, colcon or cargo variables `make` sets, and without the
venv on PATH. The other documented way (`.ros/<flavour>/env.sh`, then `install/setup.sh`) is
checked too.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import INSTALL_BASE, ROOT, STATE

TEMPLATES = ROOT / 'test' / 'user_workspace'
PACKAGE = 'my_tokio_listener'
INTERFACES = 'my_interfaces'


# How a user's shell sets up the overlay.
SOURCING = {
    'setup.bash alone': f'source {INSTALL_BASE}/setup.bash',
    'env.sh then setup.sh': f'source {STATE}/env.sh; source {INSTALL_BASE}/setup.sh',
}
# What `make` (or a shell that sourced the overlay) sets and a fresh shell has not.
SET_BY_SOURCING = {'AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH', 'ROS_DISTRO', 'PYTHONPATH',
                   'LD_LIBRARY_PATH', 'RUSTFLAGS', 'ROS_AUTOMATIC_DISCOVERY_RANGE'}


def fresh_shell_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in SET_BY_SOURCING and not k.startswith(('COLCON', 'RCLRS_TOKIO'))}
    venv_bin = str(STATE / 'venv' / 'bin')
    env['PATH'] = os.pathsep.join(p for p in env.get('PATH', '').split(os.pathsep)
                                  if p and p != venv_bin)
    return env


def run_in_user_shell(script: str, cwd: Path, timeout: float,
                      sourcing: str = 'setup.bash alone') -> subprocess.CompletedProcess:
    prologue = f'set -eo pipefail; {SOURCING[sourcing]}; '
    return subprocess.run(['bash', '-c', prologue + script], cwd=cwd, env=fresh_shell_env(),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope='module')
def workspace(tmp_path_factory) -> Path:
    if not (INSTALL_BASE / 'rclrs_tokio_executor').is_dir():
        pytest.fail('the overlay is not installed; run `make build` first')
    ws = tmp_path_factory.mktemp('user_ws')
    for package in (INTERFACES, PACKAGE):
        shutil.copytree(TEMPLATES / package, ws / 'src' / package)
    return ws


@pytest.mark.parametrize('sourcing', sorted(SOURCING))
def test_sourcing_the_overlay_leaves_colcon_to_the_users_workspace(workspace, sourcing):
    listed = run_in_user_shell('colcon list --names-only', workspace, 120, sourcing)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [INTERFACES, PACKAGE], listed.stdout


def test_a_users_package_builds_against_the_overlay_and_runs(workspace):
    built = run_in_user_shell('colcon build --event-handlers console_cohesion+',
                              workspace, 840)
    assert built.returncode == 0, f'{built.stdout[-4000:]}\n{built.stderr[-4000:]}'
    assert sorted(p.name for p in (workspace / 'install').iterdir()
                  if p.is_dir()) == [INTERFACES, PACKAGE], \
        'colcon built more than the workspace holds'
    # The interface package's Rust crate, where ros-env finds it.
    crate = workspace / 'install' / INTERFACES / 'share' / INTERFACES / 'rust'
    assert (crate / 'Cargo.toml').is_file() and (crate / 'src' / 'msg.rs').is_file(), \
        'rosidl_generate_interfaces() wrote no Rust crate'
    # The patched rclrs from the overlay, not an unpatched copy from crates.io.
    config = (workspace / '.cargo' / 'config.toml').read_text()
    assert str(STATE / 'rclrs') in config, config

    for sourcing in SOURCING:
        ran = run_in_user_shell(
            f'source install/setup.bash && install/{PACKAGE}/lib/{PACKAGE}/{PACKAGE} 20',
            workspace, 60, sourcing)
        assert ran.returncode == 0, f'{sourcing}: {ran.stdout}\n{ran.stderr}'
        summary = json.loads(ran.stdout.strip().splitlines()[-1])
        assert summary == {'sent': 20, 'heard': 20}, sourcing
