"""The relocatable benchmark bundle (`make bench-bundle`) runs on its own.

The test makes a bundle from the installed overlay, unpacks it with `tar -xf` into a
temporary directory and:
- runs one node with `LD_DEBUG=libs` and an empty environment, and checks that every
  library it loads, the ones loaded at run time (rmw, typesupport) included, comes from
  the bundle or from the C library's own folders;
- runs the harness through the bundle's `run` with `env -i` and the build tree (the
  overlay's `.ros`, `install` and `build`, every AMENT_PREFIX_PATH prefix and the build
  Python's library folder) hidden under empty tmpfs mounts in a private mount namespace
  (`unshare -m`), and checks that it wrote the JSON, CSV and Markdown results; then,
  where valgrind is installed, `run instructions` the same way.
"""

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from conftest import BUILD_BASE, INSTALL_BASE, ROOT, STATE

NAME = 'rclrs_tokio_bench'
# Where a Linux keeps its C library; anything else must come from the bundle.
SYSTEM_DIRS = ('/lib/', '/lib64/', '/usr/lib/', '/usr/lib64/')


def overlay_shell(script: str, timeout: float) -> subprocess.CompletedProcess:
    prologue = f'set -eo pipefail; source {STATE}/env.sh; source {INSTALL_BASE}/setup.sh; '
    return subprocess.run(['bash', '-c', prologue + script], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope='module')
def bundle(tmp_path_factory) -> Path:
    if not (INSTALL_BASE / 'rclrs_tokio_benchmarks').is_dir():
        pytest.fail('the overlay is not installed; run `make build` first')
    out = tmp_path_factory.mktemp('bundle')
    archive = out / f'{NAME}.tar.xz'
    made = overlay_shell(f'python3 tools/bench_bundle/make_bundle.py --xz-level 0 '
                         f'--output {archive}', 600)
    assert made.returncode == 0, made.stdout + made.stderr
    assert archive.is_file()
    target = tmp_path_factory.mktemp('target')
    subprocess.run(['tar', '-xf', str(archive)], cwd=target, check=True)
    return target / NAME


def bundle_env(bundle: Path) -> dict:
    """What `run` exports, and nothing else."""
    return {'AMENT_PREFIX_PATH': str(bundle / 'prefix'),
            'LD_LIBRARY_PATH': str(bundle / 'prefix' / 'lib'),
            'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'ROS_LOG_DIR': str(bundle / 'log'),
            'PATH': '/usr/bin:/bin'}


def test_every_library_a_node_loads_comes_from_the_bundle(bundle):
    node = bundle / 'prefix' / 'lib' / 'rclrs_tokio_benchmarks' / 'bench_node'
    env = {**bundle_env(bundle), 'LD_DEBUG': 'libs'}
    ran = subprocess.run([str(node), '--executor', 'rclrs_tokio', '--payload', '0',
                          '--rate-hz', '1000', '--seconds', '0.3', '--warmup-s', '0.1'],
                         env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert json.loads(ran.stdout.strip().splitlines()[-1])['received'] > 0
    loaded = {line.split('calling init:', 1)[1].strip()
              for line in ran.stderr.splitlines() if 'calling init:' in line}
    outside = sorted(p for p in loaded
                     if not p.startswith(str(bundle)) and not p.startswith(SYSTEM_DIRS))
    assert not outside, f'loaded from outside the bundle: {outside}'
    names = {Path(p).name for p in loaded}
    # Loaded at run time, by name, through the bundle's ament index.
    assert 'librmw_fastrtps_cpp.so' in names, sorted(names)
    assert any('rclrs_tokio_msgs__rosidl_typesupport' in n for n in names), sorted(names)


def hidden_dirs() -> list[Path]:
    dirs = [ROOT / '.ros', INSTALL_BASE, BUILD_BASE]
    dirs += [Path(p) for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    libdir = sysconfig.get_config_var('LIBDIR')
    if libdir and not libdir.startswith(SYSTEM_DIRS):
        dirs.append(Path(libdir))
    dirs = sorted({d.resolve() for d in dirs if d.is_dir()})
    # A tmpfs over a folder hides what is under it, so only the outermost ones.
    return [d for d in dirs if not any(o != d and o in d.parents for o in dirs)]


def test_the_bundle_runs_with_an_empty_environment_and_the_build_tree_hidden(bundle, tmp_path):
    if shutil.which('unshare') is None or subprocess.run(
            ['unshare', '-m', 'true'], capture_output=True).returncode != 0:
        pytest.skip('unshare -m is not permitted here (needs root or user namespaces); '
                    'the LD_DEBUG test still checks where libraries come from')
    hide = ' && '.join(f'mount -t tmpfs none {d}' for d in hidden_dirs())
    run = (f'{hide} && cd {tmp_path} && env -i {bundle}/run --scenarios throughput_0B '
           '--executors rclrs_tokio,rclrs_basic --reps 1 --seconds 0.5 --warmup 0.2 '
           '--no-plots')
    ran = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', run],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    results = tmp_path / 'bench-results'
    for name in ('latest.json', 'latest.csv', 'latest.md'):
        assert (results / name).is_file(), name
    document = json.loads((results / 'latest.json').read_text())
    rows = {r['executor']: r for r in document['runs']}
    assert rows['rclrs_tokio']['metrics']['received_per_s'] > 0
    assert rows['rclrs_basic']['metrics']['received_per_s'] > 0
    # No git in the bundle: the commit comes from the COMMIT file it was made with.
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    assert document['machine']['commit'] == (commit or 'unknown')

    # `run instructions`: the same nodes under callgrind, from the bundle alone.
    if shutil.which('valgrind') is None:
        return
    run = (f'{hide} && cd {tmp_path} && env -i {bundle}/run instructions --executors '
           'rclrs_tokio --rate-hz 200 --warmup 2 --window 2')
    ran = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', run],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    counted = json.loads((results / 'instructions.json').read_text())
    assert counted['runs'][0]['per_message']['receive_side'] > 0, counted
