//! What one Worker task counts about itself, written by the task (and, for arrivals, by
//! push callbacks) and read by [`ExecutorStats`](crate::ExecutorStats) at any time.
//!
//! # Protocol
//!
//! Every counter is a relaxed atomic except the mailbox pair, `sent` and `finished`,
//! and `deferred`, which `spin()` also reads to decide what was already waiting when it
//! began (see `runtime/worker/workers.rs`): those stay sequentially consistent.
//!
//! `deferred` counts the entities a single pass left for the next one: out of the
//! mailbox, but waiting all the same. When the next pass begins the Worker takes each
//! off that count *before* sending it back into the mailbox (where `sent` counts it),
//! or, when it needs no send (queued again meanwhile, or nothing left to run), counts
//! it as an item sent and finished at once. So `sent + deferred`, read in that order,
//! never exceeds what the Worker will finish: a spin waiting for it cannot stall.
//!
//! The age of the oldest pending item comes from a ring of send times indexed by send
//! sequence number. A sender writes the time into the slot of the number it is about to
//! take, then takes the number with a compare-and-swap; if another sender took it first,
//! it writes the next slot and tries again. So once `sent` counts an item, its slot
//! holds a time no older than the item. Items are finished in mailbox order, so the
//! oldest pending item is number `finished`, and its slot holds its send time as long
//! as fewer than [`SEND_TIMES`] items are pending; beyond that the slot was reused by a
//! newer item and the age reported is a lower bound.

use super::stage_latencies::StageLatencies;
use crate::options::DedicatedThread;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Send times kept per Worker (see the module docs).
const SEND_TIMES: usize = 128;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since the first reading in this process, plus one (0 means "never").
pub(crate) fn now_ns() -> u64 {
    ns_of(Instant::now())
}

/// `instant` in the same nanoseconds as [`now_ns`].
pub(crate) fn ns_of(instant: Instant) -> u64 {
    instant.saturating_duration_since(epoch()).as_nanos() as u64 + 1
}

/// One Worker task's counters.
pub(crate) struct WorkerCounters {
    pub(crate) id: u64,
    sent: AtomicU64,
    finished: AtomicU64,
    deferred: AtomicU64,
    send_times: [AtomicU64; SEND_TIMES],
    callbacks: AtomicU64,
    empty_takes: AtomicU64,
    panics: AtomicU64,
    busy_ns: AtomicU64,
    lingers: AtomicU64,
    /// Topic and service names of the Worker's entities (`<timer>` for timers).
    entities: Mutex<Vec<String>>,
    /// The executor's stage-tracing switch, and this Worker's stage histograms (made
    /// when tracing first records something).
    tracing: Arc<AtomicBool>,
    stages: Mutex<Option<StageLatencies>>,
    /// Set once by a dedicated Worker thread when it starts.
    dedicated: OnceLock<DedicatedThread>,
    /// The pool thread the Worker task is placed on (`usize::MAX`: none), for quiet
    /// wake-ups (`runtime::hand_over`).
    home_thread: AtomicUsize,
}

impl WorkerCounters {
    pub(crate) fn new(id: u64, tracing: Arc<AtomicBool>) -> Self {
        Self {
            id,
            sent: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            deferred: AtomicU64::new(0),
            send_times: std::array::from_fn(|_| AtomicU64::new(0)),
            callbacks: AtomicU64::new(0),
            empty_takes: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            lingers: AtomicU64::new(0),
            entities: Mutex::new(Vec::new()),
            tracing,
            stages: Mutex::new(None),
            dedicated: OnceLock::new(),
            home_thread: AtomicUsize::new(usize::MAX),
        }
    }

    /// Whether stage tracing is on (one relaxed load).
    pub(crate) fn tracing(&self) -> bool {
        self.tracing.load(Ordering::Relaxed)
    }

    /// Record into this Worker's stage histograms.
    pub(crate) fn record_stages(&self, record: impl FnOnce(&mut StageLatencies)) {
        let mut stages = self.stages.lock().unwrap_or_else(|e| e.into_inner());
        record(stages.get_or_insert_with(StageLatencies::new));
    }

    /// Count one item into the mailbox, with its send time. Called before the item can
    /// be received, so `finished` never passes `sent`.
    pub(crate) fn sent_one(&self) {
        let now = now_ns();
        let mut number = self.sent.load(Ordering::SeqCst);
        loop {
            self.send_times[number as usize % SEND_TIMES].store(now, Ordering::Relaxed);
            match self.sent.compare_exchange_weak(
                number,
                number + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return,
                Err(taken) => number = taken,
            }
        }
    }

    pub(crate) fn finished_one(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// Items sent and not finished: those queued and the one the Worker runs. Finished is
    /// read first, so a 0 means the mailbox was empty when `sent` was read (every item is
    /// counted before it is queued).
    pub(crate) fn unfinished(&self) -> u64 {
        let finished = self.finished();
        self.sent().saturating_sub(finished)
    }

    /// A single pass deferred an entity to the next pass.
    pub(crate) fn deferred_one(&self) {
        self.deferred.fetch_add(1, Ordering::SeqCst);
    }

    /// A deferred entity leaves the deferred list: call before sending it back into the
    /// mailbox. `queued_again` false: it needs no send, and is counted here as an item
    /// sent and finished.
    pub(crate) fn undeferred_one(&self, queued_again: impl FnOnce() -> bool) {
        self.deferred.fetch_sub(1, Ordering::SeqCst);
        if !queued_again() {
            self.sent_one();
            self.finished_one();
        }
    }

    /// The mailbox position a spin starting now waits for: every item sent so far and
    /// every deferred entity; `None` if the Worker has finished all of them.
    pub(crate) fn backlog_target(&self) -> Option<u64> {
        let sent = self.sent();
        let target = sent + self.deferred.load(Ordering::SeqCst);
        (target > self.finished()).then_some(target)
    }

    pub(crate) fn finished(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }

    pub(crate) fn ran_callbacks(&self, callbacks: u64) {
        self.callbacks.fetch_add(callbacks, Ordering::Relaxed);
    }

    /// Callbacks run so far.
    pub(crate) fn callbacks_run(&self) -> u64 {
        self.callbacks.load(Ordering::Relaxed)
    }

    pub(crate) fn took_nothing(&self) {
        self.empty_takes.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn panicked(&self, panics: u64) {
        self.panics.fetch_add(panics, Ordering::Relaxed);
    }

    pub(crate) fn was_busy(&self, busy: Duration) {
        self.busy_ns
            .fetch_add(busy.as_nanos() as u64, Ordering::Relaxed);
    }

    pub(crate) fn lingered(&self) {
        self.lingers.fetch_add(1, Ordering::Relaxed);
    }

    /// The Worker task is now placed on pool thread `index` (`None`: on none, or moving).
    pub(crate) fn set_home_thread(&self, index: Option<usize>) {
        self.home_thread
            .store(index.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// The pool thread the Worker task is placed on, if any.
    pub(crate) fn home_thread(&self) -> Option<usize> {
        let index = self.home_thread.load(Ordering::Relaxed);
        (index != usize::MAX).then_some(index)
    }

    pub(crate) fn set_dedicated(&self, placed: DedicatedThread) {
        let _ = self.dedicated.set(placed);
    }

    pub(crate) fn set_entities(&self, names: Vec<String>) {
        *self.entities.lock().unwrap_or_else(|e| e.into_inner()) = names;
    }

    /// A snapshot for users.
    pub(crate) fn snapshot(&self) -> super::WorkerStats {
        let finished = self.finished();
        let sent = self.sent().max(finished);
        let pending = sent - finished;
        let oldest_pending = (pending > 0)
            .then(|| self.send_times[finished as usize % SEND_TIMES].load(Ordering::Relaxed))
            .filter(|&sent_at| sent_at != 0)
            .map(|sent_at| Duration::from_nanos(now_ns().saturating_sub(sent_at)));
        super::WorkerStats {
            id: self.id,
            entities: self
                .entities
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            pending,
            oldest_pending,
            callbacks: self.callbacks.load(Ordering::Relaxed),
            empty_takes: self.empty_takes.load(Ordering::Relaxed),
            panics: self.panics.load(Ordering::Relaxed),
            busy: Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed)),
            lingers: self.lingers.load(Ordering::Relaxed),
            dedicated: self.dedicated.get().copied(),
            stages: self
                .stages
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_pending_item_ages_until_it_is_finished() {
        let counters = WorkerCounters::new(0, Arc::default());
        assert_eq!(counters.snapshot().oldest_pending, None);
        counters.sent_one();
        std::thread::sleep(Duration::from_millis(20));
        counters.sent_one();
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.pending, 2);
        assert!(snapshot.oldest_pending.unwrap() >= Duration::from_millis(20));
        counters.finished_one();
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.pending, 1);
        assert!(snapshot.oldest_pending.unwrap() < Duration::from_millis(20));
        counters.finished_one();
        assert_eq!(counters.snapshot().oldest_pending, None);
    }

    #[test]
    fn concurrent_senders_count_every_item() {
        let counters = Arc::new(WorkerCounters::new(0, Arc::default()));
        let senders: Vec<_> = (0..4)
            .map(|_| {
                let counters = std::sync::Arc::clone(&counters);
                std::thread::spawn(move || (0..10_000).for_each(|_| counters.sent_one()))
            })
            .collect();
        senders.into_iter().for_each(|s| s.join().unwrap());
        assert_eq!(counters.sent(), 40_000);
        assert!(counters.snapshot().oldest_pending.is_some());
    }
}
