#!/usr/bin/env bash
# End-to-end check of tools/rosidl_rust (takes a few minutes on 2 cores):
#   1. generate the crates rclrs 0.8 needs, plus std_msgs/std_srvs/test_msgs, from the
#      ROS prefix into $WORK/prefix/share/<pkg>/rust;
#   2. colcon-build the fixture interface package tests/fixtures/rust_e2e_msgs, whose
#      crate comes from rosidl_rust.cmake at build time;
#   3. build tests/e2e against rclrs 0.8 + ros-env and run both binaries (pub/sub,
#      services and actions on real DDS).
#
# Environment:
#   ROS_PREFIX   ament prefix with the ROS 2 interface packages (default: the prefix of
#                $PYTHON, i.e. the wheels venv)
#   PYTHON       Python that can import rosidl_parser (default: python3 on PATH)
#   WORK         scratch directory (default: /tmp/rosidl_rust_e2e)
#   RUSTFLAGS    if unset and ROS_PREFIX is a wheels venv, the link flags the wheels
#                need are computed here (see the project's setup for the real ones)
#   CARGO_TARGET_DIR  default: $WORK/target
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TOOL="$(dirname "$HERE")"
PYTHON="${PYTHON:-python3}"
ROS_PREFIX="${ROS_PREFIX:-$("$PYTHON" -c 'import sys; print(sys.prefix)')}"
WORK="${WORK:-/tmp/rosidl_rust_e2e}"
export ROS_DISTRO="${ROS_DISTRO:-kilted}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$WORK/target}"
mkdir -p "$WORK"

echo "== generating interface crates from $ROS_PREFIX"
"$PYTHON" "$TOOL/generate.py" --prefix "$ROS_PREFIX" --output-prefix "$WORK/prefix" --with-deps \
  builtin_interfaces unique_identifier_msgs rosgraph_msgs action_msgs rcl_interfaces \
  service_msgs type_description_interfaces std_msgs std_srvs test_msgs

echo "== building the fixture interface package with colcon (rosidl_rust.cmake)"
mkdir -p "$WORK/ws"
(
  cd "$WORK/ws"
  export AMENT_PREFIX_PATH="$ROS_PREFIX" CMAKE_PREFIX_PATH="$ROS_PREFIX"
  export PATH="$(dirname "$PYTHON"):$PATH"
  colcon build --base-paths "$HERE/fixtures" --cmake-args -DBUILD_TESTING=OFF \
    "-DPython3_EXECUTABLE=$(command -v "$PYTHON")" > "$WORK/colcon.log" 2>&1 ||
    { tail -50 "$WORK/colcon.log"; exit 1; }
)
FIXTURE_PREFIX="$WORK/ws/install/rust_e2e_msgs"
test -f "$FIXTURE_PREFIX/share/rust_e2e_msgs/rust/Cargo.toml"

export AMENT_PREFIX_PATH="$FIXTURE_PREFIX:$WORK/prefix:$ROS_PREFIX"
if [[ -z "${RUSTFLAGS:-}" ]] && compgen -G "$ROS_PREFIX/lib/python3*/site-packages/ros_*.libs" > /dev/null; then
  # Quirks of the PyPI wheels: no librmw_implementation.so, librcl needs libpython,
  # bundled libraries live in site-packages/ros_*.libs.
  mkdir -p "$WORK/shim"
  ln -sfn "$ROS_PREFIX/lib/librmw_fastrtps_cpp.so" "$WORK/shim/librmw_implementation.so"
  PYLIB="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
  PYVER="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  LIBS="$(ls -d "$ROS_PREFIX"/lib/python3*/site-packages/ros_*.libs | tr '\n' ':')"
  RPATH="$FIXTURE_PREFIX/lib:$ROS_PREFIX/lib:${LIBS}$PYLIB"
  export RUSTFLAGS="-L native=$WORK/shim -L native=$PYLIB -C link-arg=-Wl,--no-as-needed \
-C link-arg=-lpython$PYVER -C link-arg=-Wl,--disable-new-dtags,-rpath,$RPATH"
fi

echo "== building tests/e2e against rclrs 0.8"
cargo build --manifest-path "$HERE/e2e/Cargo.toml" --bins

echo "== running"
"$CARGO_TARGET_DIR/debug/rosidl_rust_e2e"
"$CARGO_TARGET_DIR/debug/custom"
echo "== e2e OK"
