"""A user's own workspace builds against the installed overlay the ordinary ROS way.

What the README's "Use it from your own workspace" section says, done in a fresh
temporary workspace: source the overlay (`.ros/env.sh`, then `install/setup.sh`), run
plain `colcon build` there, and run the package it built. The shell starts without the
colcon defaults `make` sets for the overlay's own builds, as a user's shell would.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / 'test' / 'user_workspace' / 'my_tokio_listener'
PACKAGE = 'my_tokio_listener'


def run_in_user_shell(script: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith('COLCON')}
    prologue = (f'set -eo pipefail; source {ROOT}/.ros/env.sh; '
                f'source {ROOT}/install/setup.sh; ')
    return subprocess.run(['bash', '-c', prologue + script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope='module')
def workspace(tmp_path_factory) -> Path:
    if not (ROOT / 'install' / 'rclrs_tokio_executor').is_dir():
        pytest.fail('the overlay is not installed; run `make build` first')
    ws = tmp_path_factory.mktemp('user_ws')
    shutil.copytree(TEMPLATE, ws / 'src' / PACKAGE)
    return ws


def test_sourcing_the_overlay_leaves_colcon_to_the_users_workspace(workspace):
    listed = run_in_user_shell('colcon list --names-only', workspace, 120)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [PACKAGE], listed.stdout


def test_a_users_package_builds_against_the_overlay_and_runs(workspace):
    built = run_in_user_shell('colcon build --event-handlers console_cohesion+',
                              workspace, 840)
    assert built.returncode == 0, f'{built.stdout[-4000:]}\n{built.stderr[-4000:]}'
    assert sorted(p.name for p in (workspace / 'install').iterdir()
                  if p.is_dir()) == [PACKAGE], 'colcon built more than the workspace holds'
    # The patched rclrs from the overlay, not an unpatched copy from crates.io.
    config = (workspace / '.cargo' / 'config.toml').read_text()
    assert str(ROOT / '.ros' / 'rclrs') in config, config

    ran = run_in_user_shell(
        f'source install/setup.sh && install/{PACKAGE}/lib/{PACKAGE}/{PACKAGE} 20',
        workspace, 60)
    assert ran.returncode == 0, f'{ran.stdout}\n{ran.stderr}'
    summary = json.loads(ran.stdout.strip().splitlines()[-1])
    assert summary == {'sent': 20, 'heard': 20}
