//! Stage tracing inside a Worker's drain: the timestamps of one mailbox item and of
//! each message it takes, recorded into the Worker's histograms (see
//! `crate::stats::stage_latencies` for the stages). Only built while tracing is on.

use crate::runtime::entity::Entity;
use crate::stats::stage_latencies::record;
use crate::stats::worker_counters::{now_ns, ns_of, WorkerCounters};

/// One item's trace, from the moment the Worker picked it up.
pub(super) struct ItemTrace {
    /// When the push callback queued the item; 0 if it was not stamped (queued before
    /// tracing was on, or re-queued by the Worker itself).
    notified: u64,
    picked_up: u64,
    /// The item's first execution is still to come.
    first: bool,
}

impl ItemTrace {
    pub(super) fn begin(entity: &Entity) -> Self {
        rclrs::trace_takes(true);
        Self {
            notified: entity.take_notified_ns(),
            picked_up: now_ns(),
            first: true,
        }
    }

    /// Call right before an execution; pass the result to [`Self::executed`].
    pub(super) fn executing(&self) -> u64 {
        now_ns()
    }

    /// An execution that started at `started` returned.
    pub(super) fn executed(&mut self, counters: &WorkerCounters, started: u64) {
        let ended = now_ns();
        let taken = rclrs::taken_at().map(ns_of);
        let first = std::mem::replace(&mut self.first, false);
        let notified = self.notified;
        let picked_up = self.picked_up;
        counters.record_stages(|stages| {
            if first {
                if notified != 0 {
                    record(
                        &mut stages.notify_to_wake,
                        picked_up.saturating_sub(notified),
                    );
                    record(
                        &mut stages.notify_to_callback_end,
                        ended.saturating_sub(notified),
                    );
                }
                record(&mut stages.wake_to_take, started.saturating_sub(picked_up));
            }
            if let Some(taken) = taken {
                record(&mut stages.take, taken.saturating_sub(started));
                record(&mut stages.callback, ended.saturating_sub(taken));
            }
        });
    }
}

impl Drop for ItemTrace {
    fn drop(&mut self) {
        rclrs::trace_takes(false);
    }
}
