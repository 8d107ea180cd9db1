"""The executor's lock-free protocols under loom, in every interleaving: an entity's
coalescing of push notifications against a draining Worker
(`rclrs_tokio_executor/src/runtime/worker/entity/coalescing.rs`), a mailbox's scheduling of
the Worker's turns (`src/runtime/worker/mailbox/scheduled.rs`), a Worker thread's park and
wake-up (`src/runtime/threads/worker_thread/parker.rs`), and the fence between a timer
scheduler's sends and a spin's pass (`src/runtime/timer_scheduler/send_fence.rs`).

The models need the crate built with its `loom-model` feature, which swaps the protocol's
atomics for loom's (a build that cannot run an executor), so the crate's own `cargo test`
leaves them out. This runs them in the overlay's cargo target directory, where only the
crate itself and loom are compiled again.
"""

import re
import subprocess
from pathlib import Path

from conftest import BUILD_BASE, ROOT

CRATE = ROOT / 'rclrs_tokio_executor'
MODELS = 6


def test_no_interleaving_queues_an_entity_twice_or_loses_an_arrival_a_wake_up_or_a_tick():
    cmd = ['cargo', 'test', '--release', '--features', 'loom-model',
           '--target-dir', str(BUILD_BASE / 'rclrs_tokio_executor'),
           '--lib', 'loom_models']
    # From the crate's directory, so that cargo reads the workspace's .cargo/config.toml
    # (the patched rclrs).
    proc = subprocess.run(cmd, cwd=CRATE, capture_output=True, text=True, timeout=840)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert re.search(rf'test result: ok\. {MODELS} passed', proc.stdout), output[-4000:]
