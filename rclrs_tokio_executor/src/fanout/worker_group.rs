//! The callbacks of one fan-out subscription that live on one Worker, and the bounded
//! queue of messages waiting for them.
//!
//! # Protocol
//!
//! The hub offers each message to every group: it pushes an `Arc<T>` into the group's
//! queue (dropping the oldest one when the queue holds `capacity`, counted in
//! `dropped`) and, if the group's `scheduled` flag was clear, sets it and asks the
//! Worker to run one drain (`Worker::run`, so the drain waits for the spin gate like
//! any callback and holds the Worker's payload). On the Tokio executor that request
//! waits for the end of the hub's turn (`runtime::turn`), or until [`WAKE_BATCH`]
//! messages wait, so a run of messages taken in one turn wakes each Worker once per
//! batch, and a batch of large messages stays small enough for the caches. On a pool
//! thread it then goes out when that thread parks (waking the other Workers' threads
//! without letting them preempt it) or runs its next task (`runtime::hand_over`).
//!
//! A drain pops messages one at a time and calls every live callback of the group with
//! each, in the order the callbacks were added. When the queue is empty it clears
//! `scheduled` and then looks once more: a message offered between the last pop and the
//! clear saw the flag still set and did not schedule a drain, so the drain goes on if
//! it can set the flag again. After [`DRAIN_BUDGET`] messages, once the Worker's turn
//! budget is spent, or after `turn::FAIR_SHARE` messages as soon as other work waits for
//! the Worker (all three on the Tokio executor's `runtime::turn`), it asks for another
//! drain instead of going on, so the Worker's other callbacks, and the other Workers of
//! its thread (the hub among them), are not starved. The share is what lets a service of
//! the same Worker take the requests that a burst of its callbacks sends, before rmw's
//! queue of ten drops them. The basic executor runs every queued payload task (these
//! drains among them) before it waits on rcl again, so there a burst runs to its end.
//!
//! The queue lock is held only to push or pop; no lock is held while a user callback
//! runs, so a callback may add or drop callbacks (its own too) of the same fan-out.
//!
//! The group of the Worker that takes (a fan-out created on a Worker) has no queue: the
//! take calls its callbacks directly ([`WorkerGroup::deliver_inline`]), after the
//! message has been offered to the other groups.

use super::callback_fn::BoxedFanoutCallback;
use crate::ros2_tracing::{self, TraceId};
use crate::runtime::{panics::log_panic, turn};
use rclrs::Worker;
use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// How many messages one drain delivers before it yields the Worker to its other work.
const DRAIN_BUDGET: usize = 64;
/// How many messages a deferred wake-up lets wait before it wakes the Worker anyway.
const WAKE_BATCH: usize = 32;
/// How many deliveries count as one callback of the Worker's turn (`runtime::turn`).
const DELIVERIES_PER_CALLBACK: usize = 4;

/// The live callbacks of a group, shared whole with every delivery.
type Taps<T, P> = Arc<[Arc<Tap<T, P>>]>;

/// One callback of a group.
pub(crate) struct Tap<T, P> {
    callback: Mutex<BoxedFanoutCallback<T, P>>,
    /// Set when the user's handle is dropped: the callback is not called again.
    removed: AtomicBool,
    pub(crate) counts: Arc<TapCounts>,
}

/// What one callback saw, readable through its handle.
#[derive(Default)]
pub(crate) struct TapCounts {
    pub(crate) delivered: AtomicU64,
    pub(crate) panics: AtomicU64,
    /// The group's `dropped` when this callback was added.
    pub(crate) dropped_before: AtomicU64,
}

/// Messages whose last reader was a Worker, waiting to be dropped by the hub.
///
/// A message's buffers are allocated by the hub's take. glibc returns the free top of a
/// heap to the kernel once it exceeds the trim threshold (128 KB by default), and the
/// next take faults those pages in again: at 64 KB about 12 page faults per message,
/// which cost more than the copy itself. So the last Worker to be done with a message
/// hands it back, and the hub frees it between two takes, where the next take can reuse
/// the space. This makes trimming rarer, not impossible: the allocation pattern of
/// queues of large messages still lands in it on some runs
/// (`docs/performance-notes.md`, "Fan-out").
pub(crate) struct RetiredMessages<T> {
    waiting: AtomicBool,
    list: Mutex<Vec<T>>,
    /// The hub's side of the swap, so that neither side allocates in a steady stream.
    spare: Mutex<Vec<T>>,
}

impl<T> RetiredMessages<T> {
    pub(crate) fn new() -> Self {
        Self {
            waiting: AtomicBool::new(false),
            list: Mutex::new(Vec::new()),
            spare: Mutex::new(Vec::new()),
        }
    }

    fn put(&self, message: T) {
        lock(&self.list).push(message);
        self.waiting.store(true, Ordering::Release);
    }

    /// Drop what was handed back (the hub calls this, on its own thread), but for the
    /// newest message, which is kept until the next call: a buffer freed right after
    /// the newest allocation merges into the arena's top and makes malloc return it to
    /// the kernel, while an older one stays in malloc's free lists for the next take.
    pub(crate) fn release(&self) {
        if !self.waiting.swap(false, Ordering::Acquire) {
            return;
        }
        let mut spare = lock(&self.spare);
        spare.clear();
        std::mem::swap(&mut *spare, &mut *lock(&self.list));
        let newest = spare.pop();
        spare.clear();
        spare.extend(newest);
    }
}

/// What the hub needs of a group, whatever the Worker's payload type.
pub(crate) trait GroupSink<T>: Send + Sync {
    /// Queue `message` for the group's callbacks and make sure a drain will run.
    fn offer(&self, message: &Arc<T>);
    /// The group, for finding it again by its payload type.
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    /// Messages this group's queue dropped because its Worker fell behind.
    fn dropped(&self) -> u64;
    /// Whether any callback is left.
    fn is_empty(&self) -> bool;
}

/// The callbacks on one Worker.
pub(crate) struct WorkerGroup<T, P: 'static + Send + Sync> {
    /// This group, for the drains it queues (which hold it strongly while queued).
    me: Weak<Self>,
    worker: Worker<P>,
    /// Used in log lines.
    topic: Arc<str>,
    queue: Mutex<VecDeque<Arc<T>>>,
    capacity: usize,
    dropped: AtomicU64,
    /// A drain is queued on the Worker or running, or its wake-up is deferred.
    scheduled: AtomicBool,
    /// The wake-up waits for the end of the hub's turn.
    wake_deferred: AtomicBool,
    /// The group of the Worker that takes: its callbacks run in the take, never queued.
    inline: bool,
    /// The live callbacks, replaced as a whole when one is added or removed, so that a
    /// delivery takes them with one reference count.
    taps: Mutex<Taps<T, P>>,
    retired: Arc<RetiredMessages<T>>,
}

impl<T, P> WorkerGroup<T, P>
where
    T: Send + Sync + 'static,
    P: 'static + Send + Sync,
{
    pub(crate) fn new(
        worker: Worker<P>,
        topic: Arc<str>,
        capacity: usize,
        retired: Arc<RetiredMessages<T>>,
        inline: bool,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            me: Weak::clone(me),
            worker,
            topic,
            queue: Mutex::new(VecDeque::with_capacity(capacity.min(1024))),
            capacity,
            dropped: AtomicU64::new(0),
            scheduled: AtomicBool::new(false),
            wake_deferred: AtomicBool::new(false),
            inline,
            taps: Mutex::new(Arc::new([])),
            retired,
        })
    }

    /// Whether this group serves `worker`.
    pub(crate) fn serves(&self, worker: &Worker<P>) -> bool {
        Arc::ptr_eq(&self.worker, worker)
    }

    pub(crate) fn add(&self, callback: BoxedFanoutCallback<T, P>) -> Arc<Tap<T, P>> {
        let counts = Arc::new(TapCounts::default());
        counts
            .dropped_before
            .store(self.dropped.load(Ordering::Relaxed), Ordering::Relaxed);
        let tap = Arc::new(Tap {
            callback: Mutex::new(callback),
            removed: AtomicBool::new(false),
            counts,
        });
        ros2_tracing::fanout_callback_added(TraceId::of(&*tap), &self.topic);
        let mut taps = lock(&self.taps);
        *taps = taps.iter().cloned().chain([Arc::clone(&tap)]).collect();
        tap
    }

    /// Stop calling `tap`: no call starts after this returns. A call that had started
    /// (passed the `removed` check) finishes; the callback itself is dropped once no
    /// drain holds it. Never waits, so callbacks on different Workers may drop each
    /// other's handles.
    pub(crate) fn remove(&self, tap: &Arc<Tap<T, P>>) {
        tap.removed.store(true, Ordering::Release);
        let mut taps = lock(&self.taps);
        *taps = taps
            .iter()
            .filter(|t| !Arc::ptr_eq(t, tap))
            .cloned()
            .collect();
    }

    fn schedule(&self) {
        // `self` is alive, so is the `Arc` it lives in.
        let Some(group) = self.me.upgrade() else {
            return;
        };
        // The promise is not needed: the drain reports nothing back. If the Worker's
        // executor is gone the drain never runs, and neither would any callback.
        drop(self.worker.run(move |payload: &mut P| group.drain(payload)));
    }

    fn pop(&self) -> Option<Arc<T>> {
        lock(&self.queue).pop_front()
    }

    /// Whether this is the group of the Worker that takes (kept while it has no callback,
    /// since the take holds it).
    pub(crate) fn is_inline(&self) -> bool {
        self.inline
    }

    /// The take's own Worker: call this group's callbacks with `message` now.
    pub(crate) fn deliver_inline(&self, payload: &mut P, message: &Arc<T>) {
        let taps = Arc::clone(&*lock(&self.taps));
        for tap in taps.iter() {
            self.call(tap, payload, message);
        }
    }

    fn drain(&self, payload: &mut P) {
        let taps = Arc::clone(&*lock(&self.taps));
        for delivered in 1..=DRAIN_BUDGET {
            let Some(message) = self.pop() else {
                self.scheduled.store(false, Ordering::Release);
                if lock(&self.queue).is_empty() || self.scheduled.swap(true, Ordering::AcqRel) {
                    return;
                }
                continue;
            };
            for tap in taps.iter() {
                self.call(tap, payload, &message);
            }
            if let Some(last) = Arc::into_inner(message) {
                self.retired.put(last);
            }
            if turn::spin_ending() {
                // The spin ends (a callback may have halted it): the rest waits for the
                // next one, as the Worker's other queued work does.
                break;
            }
            // On the Tokio executor, deliveries count against the Worker's turn, so that
            // a Worker sharing its thread with the hub lets it take in time. A delivery
            // costs far less than the take that produced it, and a Worker must be able to
            // catch up with a backlog, so DELIVERIES_PER_CALLBACK of them count as one.
            if delivered % DELIVERIES_PER_CALLBACK == 0 && !turn::spend(1) {
                break;
            }
            if delivered >= turn::FAIR_SHARE && turn::items_waiting() > 0 {
                // Other work waits for this Worker (a service these callbacks call, say).
                break;
            }
        }
        // Budget spent (or the spin ending) with `scheduled` still set: queue the rest
        // behind the Worker's other work.
        self.schedule();
    }

    fn call(&self, tap: &Tap<T, P>, payload: &mut P, message: &Arc<T>) {
        if tap.removed.load(Ordering::Acquire) {
            return;
        }
        let mut callback = lock(&tap.callback);
        let traced = || ros2_tracing::callback(TraceId::of(tap), || callback(payload, message));
        match catch_unwind(AssertUnwindSafe(traced)) {
            Ok(()) => {
                tap.counts.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Err(panic) => {
                if tap.counts.panics.fetch_add(1, Ordering::Relaxed) == 0 {
                    log_panic(&format!("a fan-out callback of '{}'", self.topic), &*panic);
                }
            }
        }
    }
}

impl<T, P> GroupSink<T> for WorkerGroup<T, P>
where
    T: Send + Sync + 'static,
    P: 'static + Send + Sync,
{
    fn offer(&self, message: &Arc<T>) {
        if self.inline {
            return;
        }
        let waiting = {
            let mut queue = lock(&self.queue);
            if queue.len() >= self.capacity && queue.pop_front().is_some() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            queue.push_back(Arc::clone(message));
            queue.len()
        };
        if !self.scheduled.swap(true, Ordering::AcqRel) {
            // The hub's turn takes a run of messages: wake this Worker once, at its end.
            let Some(group) = self.me.upgrade() else {
                return;
            };
            self.wake_deferred.store(true, Ordering::Release);
            turn::at_turn_end(move || {
                if group.wake_deferred.swap(false, Ordering::AcqRel) {
                    group.schedule();
                }
            });
        } else if waiting >= WAKE_BATCH && self.wake_deferred.swap(false, Ordering::AcqRel) {
            // A long turn: do not let the batch (and the memory it holds) grow further.
            self.schedule();
        }
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }

    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn is_empty(&self) -> bool {
        lock(&self.taps).is_empty()
    }
}

/// Lock `mutex`, ignoring poisoning: nothing of ours panics while holding these locks
/// (user callbacks run outside them or under `catch_unwind`).
pub(crate) fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
