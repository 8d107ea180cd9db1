//! Per-stage latency of a Worker's work, recorded only while stage tracing is on.
//!
//! The stages of one mailbox item (an entity with arrivals) and of each message its
//! drain takes:
//!
//! ```text
//! push callback ── notify_to_wake ──▶ Worker picks the item up ── wake_to_take ──▶
//!   take starts ── take ──▶ rcl_take returned ── callback ──▶ callback returned
//! notify_to_callback_end: from the push callback to the end of the item's first callback
//! ```
//!
//! `notify_to_wake`, `wake_to_take` and `notify_to_callback_end` are recorded once per
//! item (the item's first message); `take` and `callback` once per message. `take` and
//! `callback` need the take timestamp of patch 0009 and are recorded for subscriptions
//! only; the other stages for every push-driven entity and timer tick.

use hdrhistogram::Histogram;
use std::time::Duration;

/// The longest latency a histogram records exactly (one minute); longer ones are
/// recorded as this.
const HIGHEST_NS: u64 = 60_000_000_000;

/// One Worker's stage histograms, in nanoseconds (two significant digits). Read them
/// through [`summary`](Self::summary) or [`summaries`](Self::summaries).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StageLatencies {
    pub(crate) notify_to_wake: Histogram<u64>,
    pub(crate) wake_to_take: Histogram<u64>,
    pub(crate) take: Histogram<u64>,
    pub(crate) callback: Histogram<u64>,
    pub(crate) notify_to_callback_end: Histogram<u64>,
}

/// One stage of a message's way through a Worker (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// From the push callback that queued an item to the Worker picking it up.
    NotifyToWake,
    /// From picking an item up to its first take (or execution) starting.
    WakeToTake,
    /// One `rcl_take` (subscriptions).
    Take,
    /// From `rcl_take` returning to the callback returning: message conversion, rclrs's
    /// dispatch and the user's callback (subscriptions).
    Callback,
    /// From the push callback to the end of the item's first callback.
    NotifyToCallbackEnd,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 5] = [
        Stage::NotifyToWake,
        Stage::WakeToTake,
        Stage::Take,
        Stage::Callback,
        Stage::NotifyToCallbackEnd,
    ];

    /// The stage's name in reports: `notify_to_wake`, `wake_to_take`, `take`, `callback`
    /// or `notify_to_callback_end`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::NotifyToWake => "notify_to_wake",
            Stage::WakeToTake => "wake_to_take",
            Stage::Take => "take",
            Stage::Callback => "callback",
            Stage::NotifyToCallbackEnd => "notify_to_callback_end",
        }
    }
}

/// Quantiles of one stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StageSummary {
    /// Samples recorded.
    pub count: u64,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// 99.9th percentile.
    pub p999: Duration,
    /// Largest sample.
    pub max: Duration,
}

impl StageLatencies {
    pub(crate) fn new() -> Self {
        let histogram = || {
            Histogram::new_with_bounds(1, HIGHEST_NS, 2)
                .expect("constant histogram bounds are valid")
        };
        Self {
            notify_to_wake: histogram(),
            wake_to_take: histogram(),
            take: histogram(),
            callback: histogram(),
            notify_to_callback_end: histogram(),
        }
    }

    fn histogram(&self, stage: Stage) -> &Histogram<u64> {
        match stage {
            Stage::NotifyToWake => &self.notify_to_wake,
            Stage::WakeToTake => &self.wake_to_take,
            Stage::Take => &self.take,
            Stage::Callback => &self.callback,
            Stage::NotifyToCallbackEnd => &self.notify_to_callback_end,
        }
    }

    /// The quantiles of one stage.
    pub fn summary(&self, stage: Stage) -> StageSummary {
        let histogram = self.histogram(stage);
        if histogram.is_empty() {
            return StageSummary::default();
        }
        let at = |q: f64| Duration::from_nanos(histogram.value_at_quantile(q));
        StageSummary {
            count: histogram.len(),
            p50: at(0.5),
            p99: at(0.99),
            p999: at(0.999),
            max: Duration::from_nanos(histogram.max()),
        }
    }

    /// Every stage's quantiles, in pipeline order.
    pub fn summaries(&self) -> [(Stage, StageSummary); 5] {
        Stage::ALL.map(|stage| (stage, self.summary(stage)))
    }

    /// Add another Worker's samples (to sum an executor's Workers up).
    pub(crate) fn add(&mut self, other: &StageLatencies) {
        for (mine, theirs) in [
            (&mut self.notify_to_wake, &other.notify_to_wake),
            (&mut self.wake_to_take, &other.wake_to_take),
            (&mut self.take, &other.take),
            (&mut self.callback, &other.callback),
            (
                &mut self.notify_to_callback_end,
                &other.notify_to_callback_end,
            ),
        ] {
            // Same bounds on both sides, so adding cannot fail.
            let _ = mine.add(theirs);
        }
    }
}

/// Record `ns` into `histogram`, clamped to its range.
pub(crate) fn record(histogram: &mut Histogram<u64>, ns: u64) {
    histogram.saturating_record(ns.clamp(1, HIGHEST_NS));
}
