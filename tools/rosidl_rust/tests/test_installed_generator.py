"""The installed generator (the ament package rosidl_generator_ros_env) inside
rosidl_generate_interfaces(): an interface package whose CMakeLists.txt says nothing of
Rust gets its crate, and where upstream's rosidl_generator_rs is installed too, this
generator stands aside.

Each case configures a one-message interface package with CMake against the overlay's
install of the generator and builds only its Rust target, so nothing is compiled. The
build that installs the crate, and a Rust package using it, is test/test_user_workspace.py.
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import TOOL_DIR

OVERLAY = TOOL_DIR.parents[1]
# The install of the flavour under test (tools/ros_prefix/setup.py's env.sh says which).
INSTALLED = pathlib.Path(os.environ.get('RCLRS_TOKIO_INSTALL_BASE') or OVERLAY / 'install') \
    / 'rosidl_generator_ros_env'
PACKAGE = 'hook_probe_msgs'

PACKAGE_XML = f"""<?xml version="1.0"?>
<package format="3">
  <name>{PACKAGE}</name>
  <version>0.1.0</version>
  <description>An interface package that says nothing of Rust.</description>
  <maintainer email="maintainers@rclrs-tokio.dev">rclrs_tokio maintainers</maintainer>
  <license>Apache-2.0</license>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <buildtool_depend>rosidl_default_generators</buildtool_depend>
  <member_of_group>rosidl_interface_packages</member_of_group>
  <export><build_type>ament_cmake</build_type></export>
</package>
"""

CMAKELISTS = f"""cmake_minimum_required(VERSION 3.16)
project({PACKAGE})
find_package(ament_cmake REQUIRED)
find_package(rosidl_default_generators REQUIRED)
rosidl_generate_interfaces(${{PROJECT_NAME}} "msg/Probe.msg")
ament_package()
"""


def make_prefix_with_rosidl_generator_rs(root: pathlib.Path) -> pathlib.Path:
    """An ament prefix holding a stand-in for upstream's rosidl_generator_rs: in the
    generator group, found by find_package(), generating nothing."""
    prefix = root / 'upstream_prefix'
    index = prefix / 'share' / 'ament_index' / 'resource_index' / 'rosidl_generator_packages'
    index.mkdir(parents=True)
    (index / 'rosidl_generator_rs').write_text('')
    cmake_dir = prefix / 'share' / 'rosidl_generator_rs' / 'cmake'
    cmake_dir.mkdir(parents=True)
    (cmake_dir / 'rosidl_generator_rsConfig.cmake').write_text('# a stand-in\n')
    return prefix


def configure(root: pathlib.Path, prefixes: list[pathlib.Path]) -> pathlib.Path:
    """Configure the probe package against `prefixes` (before the environment's own);
    returns its build directory."""
    source = root / 'src'
    (source / 'msg').mkdir(parents=True)
    (source / 'msg' / 'Probe.msg').write_text('uint32 number\nstring text\n')
    (source / 'package.xml').write_text(PACKAGE_XML)
    (source / 'CMakeLists.txt').write_text(CMAKELISTS)
    env = dict(os.environ)
    for variable in ('AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH'):
        env[variable] = os.pathsep.join(
            [str(p) for p in prefixes] + [p for p in env.get(variable, '').split(os.pathsep) if p])
    build = root / 'build'
    configured = subprocess.run(
        [shutil.which('cmake'), '-S', str(source), '-B', str(build),
         f'-DPython3_EXECUTABLE={sys.executable}', '-DBUILD_TESTING=OFF'],
        env=env, capture_output=True, text=True, timeout=300)
    assert configured.returncode == 0, configured.stdout[-3000:] + configured.stderr[-3000:]
    return build


@pytest.fixture
def installed_generator():
    if not (INSTALLED / 'share' / 'rosidl_generator_ros_env' / 'cmake').is_dir():
        pytest.fail(f'{INSTALLED} is missing; run `make build` first')
    if shutil.which('cmake') is None:
        pytest.fail('cmake is not on PATH')
    return INSTALLED


def test_rosidl_generate_interfaces_alone_writes_the_rust_crate(tmp_path, installed_generator):
    build = configure(tmp_path, [installed_generator])
    built = subprocess.run(
        [shutil.which('cmake'), '--build', str(build), '--target', f'{PACKAGE}__rust'],
        capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    crate = build / 'rosidl_rust' / PACKAGE
    assert (crate / 'Cargo.toml').is_file()
    assert 'pub struct Probe' in (crate / 'src' / 'msg.rs').read_text()


def test_the_generator_stands_aside_where_rosidl_generator_rs_is_installed(
        tmp_path, installed_generator):
    upstream = make_prefix_with_rosidl_generator_rs(tmp_path)
    build = configure(tmp_path, [upstream, installed_generator])
    assert (build / 'CMakeFiles').is_dir()
    assert not (build / 'CMakeFiles' / f'{PACKAGE}__rust.dir').exists(), \
        'both generators would write share/<pkg>/rust'
