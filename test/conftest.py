"""Shared helpers of the system tests: find installed executables, run processes."""

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _flavour_dir(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else default


# The directories of the flavour under test (embedded kilted, embedded jazzy, or a
# sourced install; see tools/ros_prefix/setup.py), from its env.sh, which make sources.
STATE = _flavour_dir('RCLRS_TOKIO_STATE', ROOT / '.ros' / 'kilted')
BUILD_BASE = _flavour_dir('RCLRS_TOKIO_BUILD_BASE', ROOT / 'build')
INSTALL_BASE = _flavour_dir('RCLRS_TOKIO_INSTALL_BASE', ROOT / 'install')


def installed_executable(package: str, name: str) -> Path:
    """`<prefix>/lib/<package>/<name>` from the first AMENT_PREFIX_PATH entry that has it."""
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        candidate = Path(prefix) / 'lib' / package / name
        if candidate.is_file():
            return candidate
    pytest.fail(f'{package}/{name} is not installed; run `make build` first')


def unique_topic(stem: str) -> str:
    return f'{stem}_{uuid.uuid4().hex[:8]}'


def start(cmd, **kw) -> subprocess.Popen:
    return subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def finish(proc: subprocess.Popen, timeout: float = 60.0) -> dict:
    """Wait for `proc`, require exit 0, return its last stdout line as JSON."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f'{proc.args} timed out\nstdout:{out}\nstderr:{err}')
    assert proc.returncode == 0, f'{proc.args} exited {proc.returncode}\nstdout:{out}\nstderr:{err}'
    lines = [line for line in out.splitlines() if line.startswith('{')]
    assert lines, f'{proc.args} printed no JSON summary\nstdout:{out}\nstderr:{err}'
    return json.loads(lines[-1])


def thread_stacks(pid: int, vgdb_prefix: str | None = None, program=None) -> str:
    """Every thread's backtrace in the running process `pid`, through gdb (through
    valgrind's gdbserver for `program` run under valgrind with `vgdb_prefix`), so that a
    test can say where a process it gives up on was stuck."""
    if shutil.which('gdb') is None:
        return '(no gdb on this machine: no stacks)'
    if vgdb_prefix is None:
        target = ['-p', str(pid)]
    else:
        target = [str(program), '-ex',
                  f'target remote | vgdb --vgdb-prefix={vgdb_prefix} --pid={pid}']
    try:
        proc = subprocess.run(['gdb', '-batch', '-nx', *target, '-ex', 'thread apply all bt'],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return '(gdb did not finish within 120 s: no stacks)'
    return proc.stdout + proc.stderr


@pytest.fixture
def rust_node():
    return installed_executable('rclrs_tokio_benchmarks', 'interop_node')


@pytest.fixture
def rclpy_node():
    return [sys.executable, HERE / 'interop_rclpy.py']
