"""Clippy over the workspace's two Rust crates (library, tests, examples and binaries),
with every warning an error. `colcon test` already runs `cargo fmt --check` for each
ament_cargo package; this adds the lints.

Each crate is checked in its own colcon build directory, so only the crates themselves
and their dependencies' metadata are checked again, not rebuilt. rclrs's own warnings
(a dependency) are shown by cargo but are not ours to deny.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD_BASE, ROOT

CRATES = {
    'rclrs_tokio_executor': ROOT / 'rclrs_tokio_executor',
    'rclrs_tokio_benchmarks': ROOT / 'benchmarks',
}


def clippy_available() -> bool:
    if shutil.which('cargo') is None:
        return False
    probe = subprocess.run(['cargo', 'clippy', '--version'], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not clippy_available(), reason='cargo clippy is not installed')
@pytest.mark.parametrize('package', sorted(CRATES))
def test_clippy_finds_nothing_to_warn_about(package):
    cmd = ['cargo', 'clippy', '--release', '--all-targets',
           '--target-dir', str(BUILD_BASE / package), '--', '-D', 'warnings']
    # From the crate's directory, so that cargo reads the workspace's .cargo/config.toml
    # (the patched rclrs and the installed executor crate).
    proc = subprocess.run(cmd, cwd=CRATES[package], capture_output=True, text=True,
                          timeout=840)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
