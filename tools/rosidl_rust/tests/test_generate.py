"""Tests of tools/rosidl_rust: crate layout, key generated items, CLI, and (if cargo is
available) a `cargo check` of the generated crates."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import tomllib

import pytest

from conftest import FIXTURES
from conftest import TOOL_DIR
from rosidl_rust_gen import ROSIDL_RUNTIME_RS_VERSION
from rosidl_rust_gen.crate import generate_package
from rosidl_rust_gen.model import GeneratorError
from rosidl_rust_gen.model import IdlTuple
from rosidl_rust_gen.model import find_idl_files
from rosidl_rust_gen.model import load_package

FIXTURE_PACKAGE = FIXTURES / 'rust_e2e_msgs'


def read(crate, relative):
    return (crate / relative).read_text(encoding='utf-8')


def manifest(crate):
    return tomllib.loads(read(crate, 'Cargo.toml'))


def struct_block(source, name):
    """The derive line and body of `pub struct <name>` in a generated file."""
    match = re.search(r'((?:#\[[^\n]*\]\n)*)pub struct ' + re.escape(name) + r'\b[^\n]*\n(.*?)\n}',
                      source, re.S)
    assert match, f'struct {name} not found'
    return match.group(1), match.group(2)


def source_files(crate):
    return sorted(p.relative_to(crate).as_posix() for p in crate.rglob('*') if p.is_file())


@pytest.fixture(scope='session')
def fixture_idls(tmp_path_factory):
    """The fixture package's interfaces as .idl tuples, converted like rosidl_adapter does in CMake."""
    from rosidl_adapter import convert_to_idl

    out = tmp_path_factory.mktemp('fixture') / 'rosidl_adapter' / 'rust_e2e_msgs'
    tuples = []
    for path in sorted(FIXTURE_PACKAGE.glob('*/*')):
        relative = path.relative_to(FIXTURE_PACKAGE)
        if path.suffix == '.idl':
            tuples.append(IdlTuple(FIXTURE_PACKAGE, relative))
        elif path.suffix in ('.msg', '.srv', '.action'):
            convert_to_idl(FIXTURE_PACKAGE, 'rust_e2e_msgs', relative, out)
            tuples.append(IdlTuple(out, relative.with_suffix('.idl')))
    return tuples


@pytest.fixture(scope='session')
def fixture_crate(tmp_path_factory, fixture_idls, generate):
    # Next to the session's other generated crates, so that cargo can use them together.
    output = generate('std_msgs').parents[1] / 'rust_e2e_msgs' / 'rust'
    generate_package('rust_e2e_msgs', output, idl_tuples=fixture_idls,
                     package_xml=FIXTURE_PACKAGE / 'package.xml')
    return output


# ------------------------------------------------------------------------ layout


def test_message_package_layout_and_manifest(generate):
    crate = generate('std_msgs')
    assert source_files(crate) == ['Cargo.toml', 'src/lib.rs', 'src/msg.rs', 'src/msg/rmw.rs']
    toml = manifest(crate)
    assert toml['package']['name'] == 'std_msgs'
    assert toml['package']['metadata']['ros-env']['include'] is True
    deps = toml['dependencies']
    assert deps['rosidl_runtime_rs'] == ROSIDL_RUNTIME_RS_VERSION
    assert deps['builtin_interfaces'] == '*'
    # Only interface packages may have a "*" requirement: ros-env `use`s every one of them.
    assert sorted(name for name, req in deps.items() if req == '*') == ['builtin_interfaces']
    lib = read(crate, 'src/lib.rs')
    assert 'include!("msg.rs");' in lib and 'include!("msg/rmw.rs");' in lib


def test_namespace_files_are_includable(generate):
    """ros-env include!()s the files inside modules it declares itself."""
    crate = generate('test_msgs')
    for path in crate.rglob('*.rs'):
        if path.name == 'lib.rs':
            continue
        text = path.read_text(encoding='utf-8')
        assert not re.search(r'^\s*#!\[', text, re.M), f'{path} has an inner attribute'
        assert not re.search(r'^\s*(pub )?mod ', text, re.M), f'{path} declares a module'
        assert 'crate::' not in text, f'{path} uses crate-root paths'


def test_time_is_partial_ord_in_both_layers(generate):
    crate = generate('builtin_interfaces')
    for relative in ('src/msg.rs', 'src/msg/rmw.rs'):
        attrs, body = struct_block(read(crate, relative), 'Time')
        assert 'PartialOrd' in attrs and 'PartialEq' in attrs and 'Clone' in attrs
        assert 'pub sec: i32,' in body and 'pub nanosec: u32,' in body
    attrs, _ = struct_block(read(crate, 'src/msg/rmw.rs'), 'Time')
    assert '#[repr(C)]' in attrs


# ---------------------------------------------------------------------- services


def test_service_package(generate):
    crate = generate('std_srvs')
    assert source_files(crate) == ['Cargo.toml', 'src/lib.rs', 'src/srv.rs', 'src/srv/rmw.rs']
    idiomatic, rmw = read(crate, 'src/srv.rs'), read(crate, 'src/srv/rmw.rs')
    for source in (idiomatic, rmw):
        assert 'pub struct SetBool;' in source
        assert 'pub struct SetBool_Request {' in source
        assert 'pub struct SetBool_Response {' in source
        assert re.search(r'impl rosidl_runtime_rs::Service for SetBool \{\s*type Request = '
                         r'SetBool_Request;\s*type Response = SetBool_Response;', source)
    assert '#[link(name = "std_srvs__rosidl_typesupport_c")]' in rmw
    assert '#[link(name = "std_srvs__rosidl_generator_c")]' in rmw
    assert 'rosidl_typesupport_c__get_service_type_support_handle__std_srvs__srv__SetBool()' in rmw
    assert ('rosidl_typesupport_c__get_message_type_support_handle__std_srvs__srv__SetBool_Request()'
            in rmw)
    for suffix in ('__init(', '__Sequence__init(', '__Sequence__fini(', '__Sequence__copy('):
        assert f'fn std_srvs__srv__SetBool_Response{suffix}' in rmw
    assert 'const TYPE_NAME: &\'static str = "std_srvs/srv/SetBool_Request";' in rmw
    # Idiomatic strings are std Strings, RMW strings the C-layout ones.
    assert 'pub message: ::std::string::String,' in struct_block(idiomatic, 'SetBool_Response')[1]
    assert 'pub message: rosidl_runtime_rs::String,' in struct_block(rmw, 'SetBool_Response')[1]


def test_rcl_interfaces_items_rclrs_uses(generate):
    crate = generate('rcl_interfaces')
    msg_rmw, srv_rmw = read(crate, 'src/msg/rmw.rs'), read(crate, 'src/srv/rmw.rs')
    assert re.search(r'impl ParameterType \{[^}]*pub const PARAMETER_BOOL: u8 = 1;', msg_rmw)
    assert 'pub const PARAMETER_STRING_ARRAY: u8 = 9;' in msg_rmw
    assert 'pub const DEPTH_RECURSIVE: u64 = 0;' in srv_rmw
    _, value = struct_block(msg_rmw, 'ParameterValue')
    assert 'pub type_: u8,' in value  # keyword escaped the way rclrs expects
    assert 'pub string_array_value: rosidl_runtime_rs::Sequence<rosidl_runtime_rs::String>,' in value
    _, descriptor = struct_block(msg_rmw, 'ParameterDescriptor')
    assert 'pub floating_point_range: rosidl_runtime_rs::BoundedSequence<FloatingPointRange, 1>,' \
        in descriptor
    for name in ('DescribeParameters', 'GetParameters', 'SetParametersAtomically'):
        assert f'pub struct {name}_Request {{' in srv_rmw
    # Types of the msg namespace are reached through the package root.
    assert 'rosidl_runtime_rs::Sequence<super::super::msg::rmw::Parameter>' in srv_rmw
    assert manifest(crate)['dependencies']['builtin_interfaces'] == '*'


# ----------------------------------------------------------------------- actions


def test_action_package(generate):
    crate = generate('test_msgs')
    files = source_files(crate)
    for relative in ('src/action.rs', 'src/action/rmw.rs', 'src/msg.rs', 'src/msg/rmw.rs',
                     'src/srv.rs', 'src/srv/rmw.rs'):
        assert relative in files
    deps = manifest(crate)['dependencies']
    for dep in ('action_msgs', 'builtin_interfaces', 'unique_identifier_msgs'):
        assert deps[dep] == '*'
    idiomatic, rmw = read(crate, 'src/action.rs'), read(crate, 'src/action/rmw.rs')
    block = re.search(r'impl rosidl_runtime_rs::Action for Fibonacci \{(.*?)\n\}\n', idiomatic, re.S)
    assert block, 'no Action impl for Fibonacci'
    body = block.group(1)
    for line in ('type Goal = Fibonacci_Goal;', 'type Result = Fibonacci_Result;',
                 'type Feedback = Fibonacci_Feedback;',
                 'type FeedbackMessage = Fibonacci_FeedbackMessage;',
                 'type SendGoalService = Fibonacci_SendGoal;',
                 'type CancelGoalService = action_msgs::srv::CancelGoal;',
                 'type GetResultService = Fibonacci_GetResult;'):
        assert line in body
    for method in ('create_goal_request', 'split_goal_request', 'create_goal_response',
                   'get_goal_response_accepted', 'get_goal_response_stamp',
                   'create_feedback_message', 'split_feedback_message', 'create_result_request',
                   'get_result_request_uuid', 'create_result_response', 'split_result_response'):
        assert f'fn {method}(' in body
    assert 'goal_id: unique_identifier_msgs::msg::rmw::UUID { uuid: *goal_id },' in body
    assert 'stamp: builtin_interfaces::msg::rmw::Time {' in body
    assert 'type CancelGoalService = action_msgs::srv::rmw::CancelGoal;' in rmw
    assert 'rosidl_typesupport_c__get_action_type_support_handle__test_msgs__action__Fibonacci()' \
        in rmw
    assert ('rosidl_typesupport_c__get_service_type_support_handle__test_msgs__action__'
            'Fibonacci_SendGoal()') in rmw
    assert 'const TYPE_NAME: &\'static str = "test_msgs/action/Fibonacci_FeedbackMessage";' in rmw
    assert 'pub struct NestedMessage;' in idiomatic


# -------------------------------------------------------------- nesting and constants


def test_nested_sequences_arrays_and_strings(generate):
    crate = generate('test_msgs')
    idiomatic, rmw = read(crate, 'src/msg.rs'), read(crate, 'src/msg/rmw.rs')
    _, multi = struct_block(idiomatic, 'MultiNested')
    assert 'pub array_of_arrays: [Arrays; 3],' in multi
    assert 'pub bounded_sequence_of_arrays: rosidl_runtime_rs::BoundedSequence<rmw::Arrays, 3>,' \
        in multi
    assert 'pub unbounded_sequence_of_unbounded_sequences: ::std::vec::Vec<UnboundedSequences>,' \
        in multi
    _, multi_rmw = struct_block(rmw, 'MultiNested')
    assert 'pub unbounded_sequence_of_arrays: rosidl_runtime_rs::Sequence<Arrays>,' in multi_rmw
    _, strings = struct_block(idiomatic, 'Strings')
    assert 'pub bounded_string_value: rosidl_runtime_rs::BoundedString<22>,' in strings
    _, wstrings = struct_block(idiomatic, 'WStrings')
    assert 'pub wstring_value: ::std::string::String,' in wstrings
    assert 'pub array_of_wstrings: [::std::string::String; 3],' in wstrings
    assert 'pub bounded_sequence_of_wstrings: ' \
        'rosidl_runtime_rs::BoundedSequence<rosidl_runtime_rs::WString, 3>,' in wstrings
    _, wstrings_rmw = struct_block(rmw, 'WStrings')
    assert 'pub array_of_wstrings: [rosidl_runtime_rs::WString; 3],' in wstrings_rmw
    # Conversions between the layers.
    assert 'array_of_wstrings: msg.array_of_wstrings.map(|e| e.to_string()),' in idiomatic
    assert ('unbounded_sequence_of_arrays: msg.unbounded_sequence_of_arrays.iter().map(|e| '
            '<Arrays as rosidl_runtime_rs::Message>::into_rmw_message(::std::borrow::Cow::Borrowed(e))'
            '.into_owned()).collect(),') in idiomatic
    _, builtins = struct_block(idiomatic, 'Builtins')
    assert 'pub time_value: builtin_interfaces::msg::Time,' in builtins


def test_constant_values(generate):
    crate = generate('test_msgs')
    rmw = read(crate, 'src/msg/rmw.rs')
    for line in ('pub const BOOL_CONST: bool = true;', 'pub const BYTE_CONST: u8 = 50;',
                 'pub const FLOAT32_CONST: f32 = 1.125;', 'pub const INT8_CONST: i8 = -50;',
                 'pub const UINT64_CONST: u64 = 50000000;',
                 'pub const STRING_CONST: &\'static str = "Hello world!";'):
        assert line in rmw
    # The idiomatic layer carries the same associated constants.
    assert 'pub const INT64_CONST: i64 = -40000000;' in read(crate, 'src/msg.rs')


def test_fixture_package_from_msg_files(fixture_crate):
    toml = manifest(fixture_crate)
    assert toml['package']['version'] == '0.3.1'
    assert sorted(k for k, v in toml['dependencies'].items() if v == '*') == [
        'action_msgs', 'builtin_interfaces', 'std_msgs', 'unique_identifier_msgs']
    msg = read(fixture_crate, 'src/msg.rs')
    _, complex_ = struct_block(msg, 'Complex')
    assert 'pub header: std_msgs::msg::Header,' in complex_
    assert 'pub type_: u8,' in complex_
    assert ('#[cfg_attr(feature = "serde", serde(with = "serde_big_array::BigArray"))]\n'
            '    pub covariance: [f64; 36],') in complex_
    assert 'pub short_names: rosidl_runtime_rs::BoundedSequence<' \
        'rosidl_runtime_rs::BoundedString<8>, 3>,' in complex_
    assert 'pub corners: rosidl_runtime_rs::BoundedSequence<rmw::Point3, 4>,' in complex_
    assert r'''pub const GREETING: &'static str = "say \"hi\" \\ ok";''' in msg
    assert 'pub const PI: f64 = 3.14159;' in msg
    assert '/// A tag and a 16-bit wide character.\n' in msg
    assert 'pub symbol: u16,' in msg
    srv = read(fixture_crate, 'src/srv.rs')
    assert 'pub echo: super::msg::Complex,' in srv
    action_rmw = read(fixture_crate, 'src/action/rmw.rs')
    assert 'pub start: super::super::msg::rmw::Point3,' in action_rmw


# ------------------------------------------------------------------- rust syntax


@pytest.mark.skipif(shutil.which('rustfmt') is None, reason='rustfmt not installed')
def test_generated_files_parse_as_rust(generate, fixture_crate):
    crates = [generate('test_msgs'), generate('rcl_interfaces'), fixture_crate]
    for crate in crates:
        for path in crate.rglob('*.rs'):
            result = subprocess.run(['rustfmt', '--edition', '2021', '--emit', 'stdout'],
                                    input=path.read_bytes(), capture_output=True, timeout=60)
            assert result.returncode == 0, f'{path}: {result.stderr.decode()}'


# ---------------------------------------------------------------- incremental


def test_regeneration_keeps_mtimes_and_drops_stale_files(tmp_path, share):
    output = tmp_path / 'crate'
    generate_package('std_srvs', output, share_dir=share('std_srvs'))
    lib = output / 'src' / 'lib.rs'
    old = time.time() - 1000
    os.utime(lib, (old, old))
    stale = output / 'src' / 'action.rs'
    stale.write_text('// left over\n')
    (output / 'src' / 'action').mkdir()
    (output / 'src' / 'action' / 'rmw.rs').write_text('// left over\n')
    generate_package('std_srvs', output, share_dir=share('std_srvs'))
    assert lib.stat().st_mtime == pytest.approx(old)
    assert not stale.exists() and not (output / 'src' / 'action').exists()


# ------------------------------------------------------------------ model errors


def test_model_errors(share, tmp_path):
    with pytest.raises(GeneratorError):
        IdlTuple.parse('no-colon-here')
    tuples = find_idl_files(share('std_srvs'))
    assert tuples and all(t.relative.parts[0] == 'srv' for t in tuples)
    with pytest.raises(GeneratorError, match='not declared as'):
        load_package('some_other_name', tuples)
    with pytest.raises(GeneratorError, match='no .idl files'):
        load_package('std_srvs', [])
    with pytest.raises(GeneratorError, match='does not exist'):
        load_package('std_srvs', [IdlTuple(tmp_path, pathlib.Path('msg/Missing.idl'))])


# ------------------------------------------------------------------------- CLI


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, str(TOOL_DIR / 'generate.py'), *args],
                          capture_output=True, text=True, timeout=120, env=env)


def test_cli_batch_with_dependencies(tmp_path, share):
    prefix = share('test_msgs').parents[1]
    out = tmp_path / 'prefix'
    result = run_cli('--prefix', str(prefix), '--output-prefix', str(out), '--with-deps',
                     '-j', '2', 'test_msgs')
    assert result.returncode == 0, result.stderr
    for package in ('test_msgs', 'action_msgs', 'builtin_interfaces', 'unique_identifier_msgs'):
        assert (out / 'share' / package / 'rust' / 'Cargo.toml').is_file(), package


def test_cli_single_and_explicit_share_dirs(tmp_path, share):
    single = tmp_path / 'single'
    stamp = tmp_path / 'stamp'
    result = run_cli('--package', 'std_srvs', '--share-dir', str(share('std_srvs')),
                     '--output', str(single), '--stamp', str(stamp))
    assert result.returncode == 0, result.stderr
    assert (single / 'src' / 'srv' / 'rmw.rs').is_file() and stamp.is_file()
    many = tmp_path / 'many'
    result = run_cli('--output-prefix', str(many),
                     '--package', f'std_srvs={share("std_srvs")}',
                     '--package', f'builtin_interfaces={share("builtin_interfaces")}')
    assert result.returncode == 0, result.stderr
    assert (many / 'share' / 'std_srvs' / 'rust' / 'src' / 'srv.rs').is_file()
    assert (many / 'share' / 'builtin_interfaces' / 'rust' / 'src' / 'msg.rs').is_file()


def test_cli_errors(tmp_path):
    result = run_cli('--prefix', str(tmp_path), '--output-prefix', str(tmp_path / 'o'), 'nope_msgs')
    assert result.returncode == 1
    assert 'nope_msgs' in result.stderr
    result = run_cli('--output-prefix', str(tmp_path / 'o'), '--package', 'no_equals_sign')
    assert result.returncode == 1 and 'NAME=SHARE_DIR' in result.stderr


# ----------------------------------------------------------------- cargo check


@pytest.mark.skipif(shutil.which('cargo') is None, reason='cargo not installed')
def test_cargo_check_generated_crates(tmp_path, share, generate, fixture_crate):
    """Type-check the generated crates as standalone crates (with the serde feature).

    Set ROSIDL_RUST_CARGO_TARGET_DIR to a persistent directory to make reruns fast.
    """
    packages = ['builtin_interfaces', 'unique_identifier_msgs', 'action_msgs', 'service_msgs',
                'rcl_interfaces', 'std_msgs', 'std_srvs', 'test_msgs']
    for package in packages:
        generate(package)
    prefix = fixture_crate.parents[1]
    packages.append('rust_e2e_msgs')
    check = tmp_path / 'check'
    (check / 'src').mkdir(parents=True)
    deps = ''.join(f'{p} = {{ version = "*", features = ["serde"] }}\n' for p in packages)
    patches = ''.join(f'{p} = {{ path = "{prefix / p / "rust"}" }}\n' for p in packages)
    (check / 'Cargo.toml').write_text(
        '[package]\nname = "rosidl_rust_check"\nversion = "0.0.0"\nedition = "2021"\n'
        f'publish = false\n\n[workspace]\n\n[dependencies]\n{deps}\n[patch.crates-io]\n{patches}')
    (check / 'src' / 'lib.rs').write_text(
        'pub fn touch() -> (test_msgs::msg::MultiNested, rust_e2e_msgs::msg::Complex) {\n'
        '    (Default::default(), Default::default())\n}\n')
    env = dict(os.environ)
    env.setdefault('ROS_DISTRO', 'kilted')
    env.setdefault('AMENT_PREFIX_PATH', str(share('std_msgs').parents[1]))
    env['CARGO_TARGET_DIR'] = os.environ.get('ROSIDL_RUST_CARGO_TARGET_DIR',
                                             str(tmp_path / 'target'))
    result = subprocess.run(['cargo', 'check', '--quiet', '--message-format', 'short'],
                            cwd=check, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-5000:]
    warnings = [line for line in result.stderr.splitlines()
                if 'warning' in line and '/share/' in line]
    assert not warnings, '\n'.join(warnings)
