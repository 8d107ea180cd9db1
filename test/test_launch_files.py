"""The launch files compile everywhere, and wherever `launch` is importable they load
and every argument has a description."""

import importlib.util
import py_compile
from pathlib import Path

import pytest

LAUNCH_DIR = Path(__file__).resolve().parents[1] / 'launch'
LAUNCH_FILES = sorted(LAUNCH_DIR.glob('*_launch.py'))


def test_there_are_launch_files():
    assert {p.name for p in LAUNCH_FILES} >= {'executor_comparison_launch.py',
                                              'timer_comparison_launch.py'}


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_compiles(path):
    py_compile.compile(str(path), doraise=True)


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_arguments_have_descriptions(path):
    if importlib.util.find_spec('launch') is None or importlib.util.find_spec('launch_ros') is None:
        pytest.skip('launch and launch_ros are not installed (no registry carries them)')
    from launch.actions import DeclareLaunchArgument

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    arguments = [e for e in description.entities if isinstance(e, DeclareLaunchArgument)]
    assert arguments, 'no launch arguments'
    for argument in arguments:
        assert argument.description and argument.description != 'no description given', \
            argument.name
