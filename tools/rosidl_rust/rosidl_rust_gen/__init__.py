"""Generate ros-env style Rust interface crates for rclrs 0.8 from ROS 2 ``.idl`` files.

The package is split in three parts:

* :mod:`.model`  loads ``.idl`` files with ``rosidl_parser`` and groups what it
  finds per interface namespace (``msg``, ``srv``, ``action``).
* :mod:`.rust`   turns one namespace into the idiomatic and the RMW Rust source.
* :mod:`.crate`  writes a whole crate (``Cargo.toml``, ``src/lib.rs`` and the
  per-namespace files) and drives a list of packages.
"""

# Bump when the generated code changes in a way consumers could notice.
GENERATOR_VERSION = '0.1.0'

# The rosidl_runtime_rs release line the generated code is written against.
ROSIDL_RUNTIME_RS_VERSION = '0.7'
