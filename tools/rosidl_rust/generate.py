#!/usr/bin/env python3
"""Generate ros-env layout Rust interface crates (for rclrs 0.8) from ROS 2 .idl files.

One package, from an installed share dir:

    generate.py --package std_msgs --share-dir <prefix>/share/std_msgs \\
                --output <outprefix>/share/std_msgs/rust

One package, from explicit IDL tuples (what the CMake helper does):

    generate.py --package my_msgs --idl <base>:msg/Foo.idl --idl <base>:srv/Bar.idl \\
                --package-xml <src>/package.xml --output <build>/rosidl_rust/my_msgs

Many packages, each written to <outprefix>/share/<pkg>/rust, either with explicit share
dirs or looked up in install prefixes (default: $AMENT_PREFIX_PATH):

    generate.py --output-prefix <outprefix> --package std_msgs=<prefix>/share/std_msgs \
                --package std_srvs=<prefix>/share/std_srvs
    generate.py --prefix /opt/ros --output-prefix <outprefix> [--with-deps] std_msgs test_msgs
    generate.py --prefix /opt/ros --output-prefix <outprefix> --all

Needs a Python in which ``rosidl_parser`` can be imported (e.g. the ROS 2 wheels venv).
"""

import argparse
from concurrent.futures import ProcessPoolExecutor
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from rosidl_rust_gen import GENERATOR_VERSION  # noqa: E402
from rosidl_rust_gen.crate import generate_package  # noqa: E402
from rosidl_rust_gen.crate import packages_with_interfaces  # noqa: E402
from rosidl_rust_gen.model import find_idl_files  # noqa: E402
from rosidl_rust_gen.model import GeneratorError  # noqa: E402
from rosidl_rust_gen.model import IdlTuple  # noqa: E402


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Generate ros-env layout Rust crates for ROS 2 interface packages.')
    parser.add_argument('--version', action='version', version=f'rosidl_rust {GENERATOR_VERSION}')
    single = parser.add_argument_group('one package')
    parser.add_argument('--package', action='append', default=[], metavar='NAME[=SHARE_DIR]',
                        help='with --output: the one package to generate; with --output-prefix: '
                             'a package and its share dir (repeatable)')
    single.add_argument('--share-dir', type=pathlib.Path,
                        help='<prefix>/share/<package>: generate from its msg/srv/action .idl files')
    single.add_argument('--idl', action='append', default=[], metavar='BASE:RELPATH',
                        help='an .idl file as a rosidl tuple (repeatable)')
    single.add_argument('--idl-list', type=pathlib.Path, metavar='FILE',
                        help='file with one BASE:RELPATH tuple per line')
    single.add_argument('--package-xml', type=pathlib.Path,
                        help='package.xml to take the crate version and description from')
    single.add_argument('--output', type=pathlib.Path,
                        help='crate directory to write (normally <prefix>/share/<package>/rust)')
    single.add_argument('--stamp', type=pathlib.Path,
                        help='touch this file after a successful run (for build systems)')
    many = parser.add_argument_group('many packages')
    many.add_argument('--prefix', action='append', default=[], type=pathlib.Path,
                      help='install prefix to look for share/<pkg>/ in (repeatable; searched in '
                           'order; default: $AMENT_PREFIX_PATH)')
    many.add_argument('--output-prefix', type=pathlib.Path,
                      help='write each crate to <output-prefix>/share/<pkg>/rust')
    many.add_argument('--all', action='store_true',
                      help='generate every package of the prefixes that installs .idl files')
    many.add_argument('--with-deps', action='store_true',
                      help='also generate the interface packages the given ones depend on')
    many.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 1,
                      help='parallel worker processes (default: number of CPUs)')
    many.add_argument('packages', nargs='*', help='package names')
    parser.add_argument('-q', '--quiet', action='store_true', help='only print errors')
    return parser, parser.parse_args(argv)


def _run_single(args):
    tuples = [IdlTuple.parse(text) for text in args.idl]
    if args.idl_list:
        lines = args.idl_list.read_text(encoding='utf-8').splitlines()
        tuples += [IdlTuple.parse(line.strip()) for line in lines if line.strip()]
    if args.share_dir is None and not tuples:
        raise GeneratorError('give --share-dir or at least one --idl')
    package = generate_package(args.package[0], args.output, share_dir=args.share_dir,
                               idl_tuples=tuples, package_xml=args.package_xml)
    if not args.quiet:
        print(f'{package.name}: {", ".join(package.namespaces)} -> {args.output}')
    if args.stamp:
        args.stamp.parent.mkdir(parents=True, exist_ok=True)
        args.stamp.touch()


def _find_share_dir(name, prefixes):
    for prefix in prefixes:
        share_dir = prefix / 'share' / name
        if share_dir.is_dir() and find_idl_files(share_dir):
            return share_dir
    return None


def _generate_one(job):
    name, share_dir, output = job
    start = time.monotonic()
    package = generate_package(name, output, share_dir=share_dir)
    return name, package.dependencies, list(package.namespaces), time.monotonic() - start


def _run_many(args):
    prefixes = list(args.prefix)
    if not prefixes:
        prefixes = [pathlib.Path(p) for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)
                    if p]
    if not prefixes and (args.packages or args.all or args.with_deps):
        raise GeneratorError('no --prefix given and AMENT_PREFIX_PATH is empty')
    explicit = {}
    for spec in args.package:
        name, sep, share_dir = spec.partition('=')
        if not sep or not name or not share_dir:
            raise GeneratorError(f"--package '{spec}' must be NAME=SHARE_DIR with --output-prefix")
        explicit[name] = pathlib.Path(share_dir)
    names = list(explicit) + list(args.packages)
    if args.all:
        for prefix in prefixes:
            names += packages_with_interfaces(prefix)
    if not names:
        raise GeneratorError('no packages given (name them or pass --all)')

    done = {}
    queue = list(dict.fromkeys(names))
    missing = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        while queue:
            jobs = []
            for name in queue:
                share_dir = explicit.get(name) or _find_share_dir(name, prefixes)
                if share_dir is None:
                    missing.append(name)
                    continue
                jobs.append((name, share_dir, args.output_prefix / 'share' / name / 'rust'))
            queue = []
            for name, deps, namespaces, seconds in pool.map(_generate_one, jobs):
                done[name] = deps
                if not args.quiet:
                    print(f'{name}: {", ".join(namespaces)} ({seconds:.1f} s)')
                if args.with_deps:
                    queue += [d for d in deps if d not in done and d not in queue
                              and d not in missing]
    if missing:
        raise GeneratorError('no .idl files found in any prefix for: ' + ', '.join(sorted(missing)))
    unresolved = sorted({d for deps in done.values() for d in deps} - set(done))
    if unresolved and not args.quiet:
        print('note: dependencies not generated in this run (ros-env skips a crate whose '
              'dependencies it cannot find): ' + ', '.join(unresolved))


def main(argv=None):
    parser, args = _parse_args(argv)
    try:
        if args.output:
            if len(args.package) != 1 or '=' in args.package[0]:
                parser.error('--output needs exactly one --package NAME')
            if args.packages or args.output_prefix or args.all:
                parser.error('use either --package/--output or --output-prefix')
            _run_single(args)
        else:
            if not args.output_prefix:
                parser.error('give --package/--output or --output-prefix')
            _run_many(args)
    except GeneratorError as exc:
        print(f'rosidl_rust: error: {exc}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
