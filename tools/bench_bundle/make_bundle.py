#!/usr/bin/env python3
"""A relocatable benchmark bundle: the benchmark nodes, every library they load, the
ament index entries rosidl and rmw look up at run time, and the harness, in one
archive that runs on a machine with nothing but Linux (same architecture) and Python 3.

    make_bundle.py [--output build/bench-bundle/rclrs_tokio_bench-<arch>.tar.xz]
                   [--no-strip] [--xz-level N] [--no-archive]

Run it in a shell with the overlay sourced (`make bench-bundle` does that). What goes in:

- `prefix/lib/rclrs_tokio_benchmarks/{bench_node,timer_node}` and, where rclcpp was
  found and the C++ twins were built, `prefix/lib/rclcpp_events_bridge/*_cpp`;
- `prefix/lib/`: every shared library of every prefix on AMENT_PREFIX_PATH, of the
  wheels' `ros_*.libs` folders, and whatever else the nodes and those libraries need
  outside the C library (libpython, libz, libstdc++ ...), found with `ldd`. Libraries
  loaded at run time (the rmw implementation, message typesupport) are among the
  prefixes' libraries;
- `prefix/share/ament_index/resource_index/`: the prefixes' indexes merged, the first
  prefix on AMENT_PREFIX_PATH winning, as it does at run time;
- `harness/`: bench.py, instructions.py, report.py, scenarios.py, two_hosts.py,
  lossy_link.py and the Fast DDS profiles (fastdds_*.xml), with a `COMMIT` file (the
  bundle needs no git);
- `run`: sets AMENT_PREFIX_PATH and LD_LIBRARY_PATH to the bundle and starts the harness
  with its results in `./bench-results` (any bench.py flag can follow); `run
  instructions` starts instructions.py instead (where valgrind is installed).

The nodes are linked with an absolute RPATH into the build tree, which the loader
searches before LD_LIBRARY_PATH; the bundle rewrites every absolute search path to an
`$ORIGIN`-relative one (elf_rpath.py), so nothing resolves outside the bundle even on
the machine that made it. `test/test_bench_bundle.py` checks both.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from elf_rpath import NotElf64, replace_search_path, search_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NAME = 'rclrs_tokio_bench'
# What the harness starts: package -> node binaries.
NODES = {
    'rclrs_tokio_benchmarks': ['bench_node', 'timer_node'],
    'rclcpp_events_bridge': ['bench_node_cpp', 'timer_node_cpp'],
}
HARNESS = ['bench.py', 'instructions.py', 'report.py', 'scenarios.py', 'two_hosts.py',
           'lossy_link.py', 'fastdds_large_segments.xml', 'fastdds_two_hosts.xml']
# The C library and its loader: every Linux has its own, and a copy must never be used.
SYSTEM = ('linux-vdso', 'ld-linux', 'libc.so', 'libm.so', 'libdl.so', 'libpthread.so',
          'librt.so', 'libresolv.so', 'libutil.so', 'libmvec.so')

RUN = """#!/bin/sh
# Runs the benchmark harness from this bundle: bench.py's flags follow (--help lists
# them); results go to ./bench-results unless --output-dir says otherwise.
here=$(cd "$(dirname "$0")" && pwd)
export AMENT_PREFIX_PATH="$here/prefix"
export LD_LIBRARY_PATH="$here/prefix/lib"
export ROS_DISTRO="${{ROS_DISTRO:-{distro}}}"
export RMW_IMPLEMENTATION="${{RMW_IMPLEMENTATION:-{rmw}}}"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${{ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}}"
export ROS_LOG_DIR="${{ROS_LOG_DIR:-$PWD/bench-results/ros-log}}"
PATH="${{PATH:-/usr/local/bin:/usr/bin:/bin}}"
# `run instructions [flags]`: instructions per message under callgrind instead.
if [ "$1" = instructions ]; then
    shift
    exec python3 "$here/harness/instructions.py" --output-dir "$PWD/bench-results" "$@"
fi
exec python3 "$here/harness/bench.py" --output-dir "$PWD/bench-results" "$@"
"""


class BundleError(Exception):
    """The bundle cannot be made; the message says why."""


def prefixes() -> list[Path]:
    found = [Path(p) for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    if not found:
        raise BundleError('AMENT_PREFIX_PATH is empty: source .ros/<flavour>/env.sh and '
                          'install/setup.sh first (make bench-bundle does)')
    return found


def find_node(package: str, node: str) -> Path | None:
    for prefix in prefixes():
        candidate = prefix / 'lib' / package / node
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def library_dirs() -> list[Path]:
    """Each prefix's lib/, then the wheels' ros_*.libs folders."""
    dirs = [p / 'lib' for p in prefixes() if (p / 'lib').is_dir()]
    for prefix in prefixes():
        for site in prefix.glob('lib/python3*/site-packages'):
            dirs += sorted(d for d in site.glob('ros_*.libs') if d.is_dir())
    return dirs


def is_system(name: str) -> bool:
    return name.startswith(SYSTEM)


def ldd(path: Path) -> dict[str, Path | None]:
    """The shared libraries `path` loads: name -> resolved path (None: not found)."""
    env = dict(os.environ)
    env['LD_LIBRARY_PATH'] = os.pathsep.join(
        [str(d) for d in library_dirs()] + [env.get('LD_LIBRARY_PATH', '')])
    out = subprocess.run(['ldd', str(path)], capture_output=True, text=True, env=env).stdout
    needed: dict[str, Path | None] = {}
    for line in out.splitlines():
        parts = line.strip().split()
        if len(parts) >= 3 and parts[1] == '=>':
            needed[parts[0]] = None if parts[2] == 'not' else Path(parts[2])
    return needed


def copy_file(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)  # follows symlinks: the bundle holds real files
    mode = source.stat().st_mode
    target.chmod(stat.S_IMODE(mode) | stat.S_IWUSR)


def collect_libraries(lib: Path, nodes: list[Path]) -> list[str]:
    """Fill `lib` with every library; returns what ldd could not resolve."""
    for directory in reversed(library_dirs()):  # the first prefix wins
        for so in directory.iterdir():
            if '.so' in so.name and so.is_file() and not is_system(so.name):
                copy_file(so, lib / so.name)
    # The closure of everything in the bundle, for what lives outside the prefixes.
    missing: set[str] = set()
    pending = [*nodes, *sorted(lib.iterdir())]
    seen: set[str] = set()
    while pending:
        item = pending.pop()
        for name, resolved in ldd(item).items():
            if is_system(name) or name in seen:
                continue
            seen.add(name)
            if (lib / name).exists():
                continue
            if resolved is None:
                missing.add(name)
                continue
            copy_file(resolved, lib / name)
            pending.append(lib / name)
    # A library that only a python extension needs (and nothing else provides) is not
    # ours to fix: report it, the nodes never load those.
    return sorted(missing)


def merge_index(share: Path) -> int:
    count = 0
    for prefix in reversed(prefixes()):  # the first prefix wins
        index = prefix / 'share' / 'ament_index' / 'resource_index'
        if not index.is_dir():
            continue
        for entry in index.rglob('*'):
            if entry.is_file():
                target = share / 'ament_index' / 'resource_index' / entry.relative_to(index)
                copy_file(entry, target)
                count += 1
    # The bundle is one prefix: no parent prefixes to chain to.
    parents = share / 'ament_index' / 'resource_index' / 'parent_prefix_path'
    if parents.is_dir():
        shutil.rmtree(parents)
    return count


def strip(paths: list[Path]) -> None:
    for path in paths:
        subprocess.run(['strip', '--strip-unneeded', str(path)], capture_output=True)


def relocate(path: Path, origin_relative: str) -> bool:
    """Replace a search path that names absolute folders (the build machine's) with
    `origin_relative`; True if it was rewritten."""
    try:
        current = search_path(path)
    except (NotElf64, ValueError):
        return False
    if current is None or all(p.startswith('$ORIGIN') for p in current.split(':') if p):
        return False
    if not replace_search_path(path, origin_relative):
        raise BundleError(f'{path.name}: cannot rewrite its search path {current!r}')
    return True


def source_commit() -> str:
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                              capture_output=True, text=True,
                              timeout=10).stdout.strip() or 'unknown'
    except (OSError, subprocess.SubprocessError):
        return 'unknown'


def make(stage: Path, do_strip: bool) -> dict:
    prefix = stage / 'prefix'
    nodes = []
    for package, names in NODES.items():
        for name in names:
            source = find_node(package, name)
            if source is not None:
                target = prefix / 'lib' / package / name
                copy_file(source, target)
                nodes.append(target)
    rust = [n for n in nodes if n.parent.name == 'rclrs_tokio_benchmarks']
    if len(rust) != len(NODES['rclrs_tokio_benchmarks']):
        raise BundleError('the Rust benchmark nodes are not installed: run `make build`')
    missing = collect_libraries(prefix / 'lib', nodes)
    entries = merge_index(prefix / 'share')
    harness = stage / 'harness'
    for name in HARNESS:
        copy_file(ROOT / 'benchmarks' / 'harness' / name, harness / name)
    (harness / 'COMMIT').write_text(source_commit() + '\n')
    run = stage / 'run'
    run.write_text(RUN.format(distro=os.environ.get('ROS_DISTRO', 'kilted'),
                              rmw=os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')))
    run.chmod(0o755)
    libraries = sorted(p for p in (prefix / 'lib').iterdir() if p.is_file())
    if do_strip:
        strip(nodes + libraries)
    # After stripping: the nodes look in prefix/lib, the libraries beside themselves.
    relocated = sum(relocate(n, '$ORIGIN/..') for n in nodes)
    relocated += sum(relocate(lib, '$ORIGIN') for lib in libraries)
    return {'nodes': [str(n.relative_to(stage)) for n in nodes], 'libraries': len(libraries),
            'index_entries': entries, 'unresolved': missing, 'relocated': relocated}


def main(argv=None) -> int:
    arch = platform.machine()
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--output', type=Path,
                        default=ROOT / 'build' / 'bench-bundle' / f'{NAME}-{arch}.tar.xz')
    parser.add_argument('--no-strip', action='store_true', help='keep debug symbols')
    parser.add_argument('--xz-level', type=int, default=6, choices=range(10),
                        help='xz compression preset (default 6; 0 packs fastest)')
    parser.add_argument('--no-archive', action='store_true',
                        help='leave the unpacked bundle next to --output instead')
    args = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stage = Path(tmp) / NAME
            summary = make(stage, not args.no_strip)
            args.output.parent.mkdir(parents=True, exist_ok=True)
            if args.no_archive:
                target = args.output.parent / NAME
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(stage, target, symlinks=True)
                written = target
            else:
                with tarfile.open(args.output, 'w:xz', preset=args.xz_level) as archive:
                    archive.add(stage, arcname=NAME)
                written = args.output
    except BundleError as error:
        print(f'bench-bundle: {error}', file=sys.stderr)
        return 2
    size = (written.stat().st_size if written.is_file()
            else sum(p.stat().st_size for p in written.rglob('*') if p.is_file()))
    print(f'bench-bundle: {len(summary["nodes"])} nodes ({", ".join(summary["nodes"])}), '
          f'{summary["libraries"]} libraries, {summary["index_entries"]} index entries, '
          f'{summary["relocated"]} search paths made relative')
    if summary['unresolved']:
        print('bench-bundle: not found by ldd (needed only by python extensions of the '
              'prefix, never by the nodes): ' + ', '.join(summary['unresolved']))
    print(f'bench-bundle: wrote {written} ({size / 2**20:.1f} MiB)')
    print(f'bench-bundle: on the target: tar -xf {written.name} && ./{NAME}/run --quick')
    return 0


if __name__ == '__main__':
    sys.exit(main())
