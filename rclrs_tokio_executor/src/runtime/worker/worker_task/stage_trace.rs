//! Stage tracing inside a Worker's drain: the timestamps of one mailbox item and of
//! each message it takes, recorded into the Worker's histograms (see
//! `crate::stats::stage_latencies` for the stages). Only built while tracing is on.
//!
//! What it costs is what the Worker pays per message with tracing on, so it reads the
//! clock only where a stage needs a reading of its own: the pick-up is the item loop's
//! own start reading (the start of the Worker's busy time). Stamps stay `Instant`s and
//! stages are their differences; only the push callback's stamp, which crosses threads
//! in an atomic, is in nanoseconds (`now_ns`), and the item's pick-up is converted once
//! to meet it.

use crate::runtime::entity::Entity;
use crate::stats::stage_latencies::record;
use crate::stats::worker_counters::{ns_of, WorkerCounters};
use std::time::Instant;

/// One item's trace, from the moment the Worker picked it up.
pub(super) struct ItemTrace {
    /// When the push callback queued the item (`now_ns`); 0 if it was not stamped
    /// (queued before tracing was on, or re-queued by the Worker itself).
    notified: u64,
    picked_up: Instant,
    /// The item's first execution is still to come.
    first: bool,
}

impl ItemTrace {
    /// Begin the trace of an item the Worker picked up at `picked_up`.
    pub(super) fn begin(entity: &Entity, picked_up: Instant) -> Self {
        rclrs::trace_takes(true);
        Self {
            notified: entity.take_notified_ns(),
            picked_up,
            first: true,
        }
    }

    /// Call right before an execution; pass the result to [`Self::executed`].
    pub(super) fn executing(&self) -> Instant {
        Instant::now()
    }

    /// An execution that started at `started` returned.
    pub(super) fn executed(&mut self, counters: &WorkerCounters, started: Instant) {
        let ended = Instant::now();
        let taken = rclrs::taken_at();
        let first = std::mem::replace(&mut self.first, false);
        let notified = self.notified;
        let picked_up = self.picked_up;
        let nanos = |later: Instant, earlier: Instant| {
            later.saturating_duration_since(earlier).as_nanos() as u64
        };
        counters.record_stages(|stages| {
            if first {
                if notified != 0 {
                    let to_wake = ns_of(picked_up).saturating_sub(notified);
                    record(&mut stages.notify_to_wake, to_wake);
                    record(
                        &mut stages.notify_to_callback_end,
                        to_wake + nanos(ended, picked_up),
                    );
                }
                record(&mut stages.wake_to_take, nanos(started, picked_up));
            }
            if let Some(taken) = taken {
                record(&mut stages.take, nanos(taken, started));
                record(&mut stages.callback, nanos(ended, taken));
            }
        });
    }
}

impl Drop for ItemTrace {
    fn drop(&mut self) {
        rclrs::trace_takes(false);
    }
}
