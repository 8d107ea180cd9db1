"""Shared fixtures for the rosidl_rust generator tests.

The tests need a Python that can import rosidl_parser (the ROS 2 wheels venv)
and an ament prefix with the interface packages installed. The prefix is taken
from $ROSIDL_RUST_TEST_PREFIX, else from $AMENT_PREFIX_PATH, else the running
interpreter's sys.prefix (the wheels venv is itself an ament prefix).
"""

import os
import pathlib
import sys

import pytest

TOOL_DIR = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = pathlib.Path(__file__).resolve().parent / 'fixtures'
sys.path.insert(0, str(TOOL_DIR))


def _prefixes():
    for var in ('ROSIDL_RUST_TEST_PREFIX', 'AMENT_PREFIX_PATH'):
        for entry in os.environ.get(var, '').split(os.pathsep):
            if entry:
                yield pathlib.Path(entry)
    yield pathlib.Path(sys.prefix)


def find_share(package):
    for prefix in _prefixes():
        share = prefix / 'share' / package
        if any(any((share / sub).glob('*.idl')) for sub in ('msg', 'srv', 'action')):
            return share
    return None


@pytest.fixture(scope='session')
def share():
    """share('pkg') -> <prefix>/share/pkg, failing clearly when it is not installed."""
    def lookup(package):
        path = find_share(package)
        if path is None:
            pytest.fail(f'interface package {package} is not installed in any prefix '
                        f'(install the ros-{package.replace("_", "-")} wheel)')
        return path
    return lookup


@pytest.fixture(scope='session')
def generate(tmp_path_factory, share):
    """generate('pkg') -> crate dir generated once per session from the installed share dir.

    Tests must treat the returned crate as read-only.
    """
    from rosidl_rust_gen.crate import generate_package

    root = tmp_path_factory.mktemp('generated')
    done = {}

    def run(package):
        if package not in done:
            output = root / 'share' / package / 'rust'
            generate_package(package, output, share_dir=share(package))
            done[package] = output
        return done[package]
    return run
