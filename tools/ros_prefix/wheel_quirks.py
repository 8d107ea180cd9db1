"""Corrections for the ROS 2 PyPI wheels, each in one place.

The wheels lay out a working ament prefix inside a venv, but six things about them
differ from a ROS 2 install built from source or from Debian packages. Every function
here handles exactly one of them and says why. None of them runs when the user has
sourced a real ROS 2 install: `setup.py` only calls this module for the embedded prefix
(and `sourced_install.py` when it lays the wheels out as an install).
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sysconfig
from pathlib import Path


def bundled_library_dirs(venv: Path) -> list[Path]:
    """The `site-packages/ros_*.libs` folders that hold the wheels' bundled libraries.

    Why: auditwheel moved tinyxml2, OpenSSL, lttng-ust, yaml, spdlog and friends into
    these folders and rewrote the wheels' own RPATH to find them relative to each
    wheel's *Python* location. Native binaries that link `venv/lib/librcl.so` do not
    resolve them from there, so every binary we build gets these folders as rpath.
    """
    site = next(venv.glob("lib/python3*/site-packages"))
    return sorted(p for p in site.glob("ros_*.libs") if p.is_dir())


def rmw_implementation_shim(venv: Path, shim_dir: Path) -> Path:
    """A `librmw_implementation.so` that is the Fast DDS rmw.

    Why: the wheels ship no `librmw_implementation.so`; their librcl links
    `librmw_fastrtps_cpp.so` directly (so `RMW_IMPLEMENTATION` does nothing). rclrs's
    build script still asks the linker for `-lrmw_implementation`. A symlink in a
    directory on the link search path satisfies it without changing what runs.
    """
    shim_dir.mkdir(parents=True, exist_ok=True)
    link = shim_dir / "librmw_implementation.so"
    target = venv / "lib" / "librmw_fastrtps_cpp.so"
    if not target.exists():
        raise FileNotFoundError(f"{target} (is ros-rmw-fastrtps-cpp installed?)")
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)
    return shim_dir


def python_link_dir() -> Path:
    """Where this Python's shared libpython lives.

    Why: librcl and librcl_action depend on the `*__rosidl_generator_py` libraries,
    which use Python symbols but are not linked to libpython. A native binary must
    therefore link libpython itself (`--no-as-needed -lpython3.X`), and find it at
    run time.
    """
    libdir = sysconfig.get_config_var("LIBDIR")
    ldlibrary = sysconfig.get_config_var("LDLIBRARY") or ""
    if not libdir or not ldlibrary.endswith(".so"):
        raise RuntimeError(
            "this Python has no shared libpython (LDLIBRARY="
            f"{ldlibrary!r}); the ROS wheels need one to link native binaries"
        )
    return Path(libdir)


def python_library_name() -> str:
    """`python3.11` for `-lpython3.11`."""
    return f"python{sysconfig.get_config_var('LDVERSION')}"


def native_link_flags(venv: Path, shim_dir: Path) -> list[str]:
    """Linker flags every native binary linking the wheels' librcl needs.

    Combines the three quirks above: the rmw_implementation shim on the search path,
    libpython linked explicitly, and an rpath (DT_RPATH, which also applies to
    dependencies of dependencies) covering venv/lib, the bundled-library folders and
    libpython, so that binaries run with an empty environment.
    """
    rpath = [venv / "lib", *bundled_library_dirs(venv), python_link_dir()]
    return [
        f"-L{shim_dir}",
        f"-L{python_link_dir()}",
        "-Wl,--no-as-needed",
        f"-l{python_library_name()}",
        "-Wl,--as-needed",
        "-Wl,--disable-new-dtags,-rpath," + ":".join(str(p) for p in rpath),
    ]


def fix_exported_cmake(venv: Path) -> list[Path]:
    """Rewrite exported CMake files that name paths of the machine that built the wheels.

    Why: `find_package` consumers (an interface package, rclcpp, our C++ comparison
    nodes) break on these paths:
    - `*__rosidl_generator_pyExport.cmake` names `/opt/python/cp311-cp311/...` as
      include directories (Python and numpy headers);
    - Fast DDS's `fastdds-shared-targets.cmake` (Kilted's 3.x; `fastrtps-shared-targets.cmake`
      in Jazzy's 2.x) links `/usr/lib64/libtinyxml2.so` and the system OpenSSL targets,
      where the wheels bundle their own copies;
    - tracetools exports `lttng-ust`, which is also bundled.
    The venv is this project's own cache, so the files are corrected in place. The
    rewrite is idempotent. Returns the files changed.
    """
    changed: list[Path] = []
    share = venv / "share"
    site = next(venv.glob("lib/python3*/site-packages"))
    py_include = sysconfig.get_paths()["include"]
    numpy_include = site / "numpy" / "_core" / "include"

    def bundled(name: str) -> str | None:
        hits = sorted(glob.glob(str(site / "ros_*.libs" / f"lib{name}-*.so*")))
        return hits[0] if hits else None

    def rewrite(path: Path, edit) -> None:
        text = path.read_text()
        new = edit(text)
        if new != text:
            path.write_text(new)
            changed.append(path)

    for path in share.glob("*/cmake/*__rosidl_generator_pyExport.cmake"):
        rewrite(
            path,
            lambda t: t.replace(
                "/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include",
                str(numpy_include),
            ).replace("/opt/python/cp311-cp311/include/python3.11", py_include),
        )

    tinyxml2 = bundled("tinyxml2")
    fastdds_targets = [*share.glob("fastdds/cmake/fastdds-*targets*.cmake"),
                       *share.glob("fastrtps/cmake/fastrtps-*targets*.cmake")]
    for path in fastdds_targets:

        def fix_fastdds(t: str) -> str:
            if tinyxml2:
                t = t.replace("/usr/lib64/libtinyxml2.so", tinyxml2)
            # The bundled libssl/libcrypto are reached through Fast DDS's own DT_NEEDED
            # entries; consumers need not link OpenSSL themselves.
            return re.sub(
                r"\\\$<\\\$<BOOL:1>:OpenSSL::SSL\\\$<SEMICOLON>OpenSSL::Crypto"
                r"\\\$<\\\$<BOOL:>:\\\$<SEMICOLON>crypt32\.lib>>;",
                "",
                t,
            )

        rewrite(path, fix_fastdds)

    lttng = bundled("lttng-ust")
    for path in share.glob("tracetools/cmake/*.cmake"):
        if lttng:
            rewrite(
                path,
                lambda t: t.replace('"lttng-ust;', f'"{lttng};'),
            )
    return changed


def lttng_ust_protocol(binary: Path) -> int | None:
    """The session-daemon protocol an lttng-ust library, or an lttng-sessiond, speaks: the
    N of the `lttng-ust-sock-N` socket it uses (6 for lttng-ust 2.8, 8 for 2.12 and 2.13)."""
    found = re.search(rb"lttng-ust-sock-(\d+)", binary.read_bytes())
    return int(found.group(1)) if found else None


def bundled_lttng_ust(venv: Path) -> Path | None:
    """The wheels' own lttng-ust (`ros_tracetools.libs/liblttng-ust-<hash>.so.0...`)."""
    hits = [p for p in sorted(glob.glob(str(next(venv.glob("lib/python3*/site-packages"))
                                            / "ros_*.libs" / "liblttng-ust-*.so.0*")))
            if "tracepoint" not in Path(p).name]
    return Path(hits[0]) if hits else None


def lttng_ust_preload(venv: Path, replacement: Path, shim_dir: Path, patchelf: Path) -> list[Path]:
    """Libraries that, preloaded, stand in for the wheels' lttng-ust, so that an LTTng
    session of today's lttng-tools records the ros2 tracepoints of a node on the wheels.

    Why: the wheels bundle lttng-ust 2.8.1 (from the manylinux_2_28 build image), which
    talks to the session daemon over protocol 6 (`lttng-ust-sock-6`); lttng-tools 2.13
    (Debian 12) speaks 8 and 9 only, so the node never registers and a trace of it is
    empty. lttng-ust 2.12 keeps 2.8's library ABI (`liblttng-ust.so.0`, which
    libtracetools was built against) and speaks protocol 8. `replacement` holds 2.12's
    libraries and their liburcu (Debian 11's `liblttng-ust0` and `liburcu6`, unpacked):
    they are copied to `shim_dir`, the lttng-ust one renamed to the bundled library's
    soname so that the loader takes it for that, all with `$ORIGIN` as their run path.
    Returns the two files to put in `LD_PRELOAD`; the wheels themselves are not changed.
    """
    bundled = bundled_lttng_ust(venv)
    if bundled is None:
        raise FileNotFoundError(f"no bundled lttng-ust in {venv} (is ros-tracetools installed?)")
    shim_dir.mkdir(parents=True, exist_ok=True)
    copies = {"liblttng-ust.so.0": bundled.name, "liblttng-ust-tracepoint.so.0": None,
              "liburcu-bp.so.6": None, "liburcu-cds.so.6": None, "liburcu-common.so.6": None}
    for name, soname in copies.items():
        source = replacement / name
        if not source.exists():
            raise FileNotFoundError(f"{source} (unpacked liblttng-ust0 and liburcu6?)")
        target = shim_dir / (soname or name)
        target.unlink(missing_ok=True)
        target.write_bytes(source.read_bytes())
        if soname:
            subprocess.run([str(patchelf), "--set-soname", soname, str(target)], check=True)
        subprocess.run([str(patchelf), "--set-rpath", "$ORIGIN", str(target)], check=True)
    return [shim_dir / bundled.name, shim_dir / "liblttng-ust-tracepoint.so.0"]


def check_python_matches(venv_python: Path) -> None:
    """The wheels are built for CPython 3.11 only; say so plainly otherwise."""
    version = os.popen(f'"{venv_python}" -c "import sys;print(sys.version_info[:2])"').read()
    if "(3, 11)" not in version:
        raise RuntimeError(
            f"the ROS 2 wheels need CPython 3.11, but {venv_python} is {version.strip()}"
        )
