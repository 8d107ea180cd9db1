//! Lingering: a Worker under a sustained stream watches its mailbox briefly before it
//! parks its thread. Off by default; `TokioExecutorOptions::linger` turns it on.
//!
//! When work arrives less than the linger time after the Worker last went idle (a
//! sustained stream), the Worker watches its mailbox for up to that long before parking:
//! the next message usually lands within that time, and catching it spares the
//! publishing thread a wake-up per message. Slower streams (10 kHz is 100 µs apart)
//! never linger, so lingering costs no CPU there.
//!
//! Whether it pays depends on the machine. Watching the mailbox keeps the cache lines
//! the producer writes (the entity's counters, the queue's tail) bouncing between the
//! two cores, and on a host whose cores share execution resources the spin itself slows
//! the producer. On one 2-core Intel Xeon host a 30 µs linger cut in-process throughput
//! from 287k to 75k messages/s, while on another it had raised it; hence off unless
//! asked for (`benchmarks/results/FINDINGS.md`).
//!
//! Lingering only pays while it catches something. When the producer is on another
//! process, or shares this thread's core, spinning steals the very CPU the producer
//! needs; so after [`LINGER_MISSES`] lingers in a row caught nothing, the Worker stops
//! lingering and probes again only once every [`LINGER_PROBE`] wake-ups. For the same
//! reason at most one Worker fewer than the machine has cores lingers at a time, and a
//! linger ends early when another task of the same thread becomes ready.

use super::WorkerTask;
use crate::runtime::dedicated_thread;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LINGER_MISSES: u32 = 2;
const LINGER_PROBE: u32 = 64;

/// How a linger ended.
enum Linger {
    /// A new item arrived: it is in the stash.
    Caught,
    /// Nothing arrived within the linger time.
    Missed,
    /// Another task of this thread became ready; it must not wait for us.
    OthersReady,
}

/// A Worker's lingering history.
pub(super) struct LingerState {
    /// How long to linger (the executor's `linger` option); zero: never, and then no
    /// clock is read for it either.
    linger: Duration,
    /// When the Worker last ran out of work.
    idle_since: Option<Instant>,
    /// Lingers in a row that caught nothing, and wake-ups since lingering paused.
    misses: u32,
    wakeups_without: u32,
}

impl LingerState {
    pub(super) fn new(linger: Duration) -> Self {
        Self {
            linger,
            idle_since: None,
            misses: 0,
            wakeups_without: 0,
        }
    }

    /// Whether work that arrives now continues a sustained stream: it came less than
    /// the linger time after the Worker went idle.
    pub(super) fn streaming(&self) -> bool {
        !self.linger.is_zero()
            && self
                .idle_since
                .is_some_and(|idle| idle.elapsed() < self.linger)
    }

    pub(super) fn went_idle(&mut self) {
        if !self.linger.is_zero() {
            self.idle_since = Some(Instant::now());
        }
    }

    /// Whether lingering has paid lately (see [`LINGER_MISSES`]).
    fn may_linger(&mut self) -> bool {
        if self.misses < LINGER_MISSES {
            return true;
        }
        self.wakeups_without += 1;
        if self.wakeups_without >= LINGER_PROBE {
            self.wakeups_without = 0;
            return true;
        }
        false
    }
}

impl WorkerTask {
    /// Linger if it has paid lately and a core is free for it (see
    /// `ExecutorShared::max_lingering`).
    pub(super) fn maybe_linger(&mut self) {
        if self.stash.is_some() || !self.linger.may_linger() {
            return;
        }
        let lingering = &self.shared.lingering;
        if lingering.fetch_add(1, Ordering::AcqRel) >= self.shared.max_lingering {
            lingering.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        self.counters.lingered();
        let outcome = self.linger();
        self.shared.lingering.fetch_sub(1, Ordering::AcqRel);
        match outcome {
            Linger::Caught => self.linger.misses = 0,
            Linger::Missed => self.linger.misses += 1,
            Linger::OthersReady => {}
        }
    }

    /// Watch the mailbox for up to the linger time; a new item becomes the stash.
    fn linger(&mut self) -> Linger {
        // Other tasks of this thread (other Workers placed here) woken meanwhile wait in
        // the runtime's injection queue: lingering would hold them up, so stop then.
        // A dedicated thread runs nothing else (the runtime it entered is another's).
        let runtime = (!dedicated_thread::runs_for(Arc::as_ptr(&self.shared)))
            .then(|| tokio::runtime::Handle::try_current().ok())
            .flatten();
        let others_ready = || {
            runtime
                .as_ref()
                .is_some_and(|r| r.metrics().global_queue_depth() > 0)
        };
        let until = Instant::now() + self.linger.linger;
        loop {
            // Reading the clock costs more than a look at the mailbox: look 32 times
            // between readings.
            for _ in 0..32 {
                if let Some(item) = self.mailbox.try_recv() {
                    self.stash = Some(item);
                    return Linger::Caught;
                }
                std::hint::spin_loop();
            }
            if others_ready() {
                return Linger::OthersReady;
            }
            if Instant::now() >= until {
                return Linger::Missed;
            }
        }
    }
}
