//! Waiting on the mailbox before parking: a nap after a backlog (on by default), and
//! lingering under a sustained stream (off by default; `TokioExecutorOptions::linger`).
//!
//! # Napping after a backlog
//!
//! A Worker that parks with an empty mailbox must be woken for the next item, and the
//! wake-up is paid by the thread that sends it: the publishing thread in one process
//! (rmw delivers inside `publish()`), the middleware's receive thread across processes.
//! While a stream outruns the Worker those wake-ups are what the producer spends its
//! time on, besides the message itself (on two cores a parked thread is woken about
//! once per five messages of an unthrottled stream).
//!
//! So when a drain found a backlog (a subscription with `NAP_AT` or more arrivals
//! waiting, see `drain`), the Worker sleeps for [`NAP`] instead of parking, then looks
//! at its mailbox: whatever arrived meanwhile was queued without waking anybody, and
//! runs as one batch. It naps again after every batch that found a backlog, and parks
//! as before after one that did not, or when the nap caught nothing. A Worker that
//! keeps up (one arrival per wake-up, as at 1 or 10 kHz) never naps.
//!
//! The nap sleeps its thread: other Workers placed on the same pool thread run first
//! (the turn ends with `TurnEnd::Nap`, and the thread sleeps once nothing else is
//! ready, see `worker_thread`), and one woken during the nap waits for its end. Naps
//! happen on the executor's own Worker threads only, never on a runtime passed in as
//! `runtime_handle`, and not when `linger` asks for a spin instead.
//!
//! # Lingering
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
//! asked for (`docs/performance-notes.md`).
//!
//! Lingering only pays while it catches something. When the producer is on another
//! process, or shares this thread's core, spinning steals the very CPU the producer
//! needs; so after [`LINGER_MISSES`] lingers in a row caught nothing, the Worker stops
//! lingering and probes again only once every [`LINGER_PROBE`] wake-ups. For the same
//! reason at most one Worker fewer than the machine has cores lingers at a time, and a
//! linger ends early when another task of the same thread becomes ready.

use super::{Site, WorkerTask};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const LINGER_MISSES: u32 = 2;
const LINGER_PROBE: u32 = 64;

/// How a linger ended.
enum Linger {
    /// A new item arrived: it is in the stash.
    Caught,
    /// Nothing arrived within the linger time.
    Missed,
    /// Another Worker of this thread became ready; it must not wait for us.
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
    /// The last batch found a backlog: nap before parking.
    backlog: bool,
}

impl LingerState {
    pub(super) fn new(linger: Duration) -> Self {
        Self {
            linger,
            idle_since: None,
            misses: 0,
            wakeups_without: 0,
            backlog: false,
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

    /// A drain found a subscription with a backlog.
    pub(super) fn saw_backlog(&mut self) {
        self.backlog = true;
    }

    /// Whether to nap now (the batch just run found a backlog, and no linger is asked
    /// for); resets the mark either way.
    fn take_nap(&mut self) -> bool {
        std::mem::take(&mut self.backlog) && self.linger.is_zero()
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
    /// After a batch that found a backlog, on the executor's own threads: whether to
    /// nap (the thread sleeps [`NAP`](crate::runtime::worker_thread::NAP) once nothing
    /// else is ready, then runs the next turn).
    pub(super) fn nap_due(&mut self, site: Site<'_>) -> bool {
        if !self.linger.take_nap() || self.stash.is_some() {
            return false;
        }
        if !matches!(site, Site::Thread(_)) {
            return false;
        }
        self.counters.lingered();
        true
    }

    /// Linger if it has paid lately and a core is free for it (see
    /// `ExecutorShared::max_lingering`); true if it caught an item (now in the stash).
    pub(super) fn maybe_linger(&mut self, site: Site<'_>) -> bool {
        if self.stash.is_some() || !self.linger.may_linger() {
            return false;
        }
        let lingering = &self.shared.lingering;
        if lingering.fetch_add(1, Ordering::AcqRel) >= self.shared.max_lingering {
            lingering.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        self.counters.lingered();
        let outcome = self.linger(site);
        self.shared.lingering.fetch_sub(1, Ordering::AcqRel);
        match outcome {
            Linger::Caught => {
                self.linger.misses = 0;
                true
            }
            Linger::Missed => {
                self.linger.misses += 1;
                false
            }
            Linger::OthersReady => false,
        }
    }

    /// Watch the mailbox for up to the linger time; a new item becomes the stash.
    fn linger(&mut self, site: Site<'_>) -> Linger {
        // Other Workers of this thread woken meanwhile wait in its run queue: lingering
        // would hold them up, so stop then.
        let others_ready = || match site {
            Site::Thread(thread) => thread.others_ready(),
            Site::Task => false,
        };
        let until = Instant::now() + self.linger.linger;
        loop {
            // Reading the clock costs more than a look at the mailbox: look 32 times
            // between readings.
            for _ in 0..32 {
                if let Some(item) = self.mailbox.recv() {
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
