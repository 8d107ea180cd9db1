//! One push-driven rcl entity of a Worker: its Waitable, its push registration, and the
//! coalescing state its push callback updates.
//!
//! # Coalescing
//!
//! The push callback adds the count rcl reports to `pending`, then swaps `queued` to
//! true; only the caller that flips it from false sends the entity into the mailbox. So
//! an entity is in its Worker's mailbox at most once, however many notifications
//! arrive, and the mailbox is bounded by the number of entities (plus payload tasks).
//!
//! The Worker clears `queued` *before* swapping `pending` to zero, then executes the
//! primitive up to that many times. A notification racing with the drain either lands
//! in the swapped count or re-queues the entity, so none is lost. The count is
//! arrivals, which can exceed what rmw still holds (QoS depth), so the drain stops at
//! the first `TAKE_FAILED`: nothing that rmw still holds is skipped, and nothing is
//! taken twice.
//!
//! # Single passes
//!
//! In a single pass (`spin_once`, zero timeout; see the spin gate) a Worker executes an
//! entity once and *defers* the rest: the unexecuted count goes back into `pending`
//! without queueing the entity, and the Worker keeps it on a list that it re-queues
//! when the next pass begins. `last_pass` marks the pass an entity last ran in, so an
//! entity that a new arrival queued again within the same pass is deferred as well.

use crate::ffi::{self, RclTimer, ResetRegistration};
use crate::runtime::panics::log_panic;
use crate::stats::worker_counters::now_ns;
use crate::stats::ExecutorStats;
use rclrs::{OnReadyCallback, OnReadyHandle, RclPrimitiveKind, ReadyKind, Waitable};
use std::sync::{
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    Arc, Mutex, Weak,
};

/// Where a notified entity goes: its Worker's mailbox, which implements this
/// (`mailbox.rs`), so that an entity needs nothing else of it.
pub(crate) trait EntityQueue: Clone + Send + Sync + 'static {
    /// Queue `entity`, without blocking.
    fn enqueue(&self, entity: Arc<Entity>);
    /// Whether stage tracing is on (a notification then stamps its time).
    fn tracing(&self) -> bool;
}

/// What watches a timer entity's deadlines: the timer scheduler, which implements this
/// (`timer_scheduler.rs`). A timer entity leaves it on teardown.
pub(crate) trait TimerWatch: Send + Sync {
    /// Stop watching `entity` (no tick is delivered for it afterwards).
    fn remove(&self, entity: &Entity);
}

/// A push-driven entity. Held strongly only by its Worker's task and, while queued, by
/// the mailbox; its push callback holds it weakly.
pub(crate) struct Entity {
    pub(crate) kind: RclPrimitiveKind,
    /// Topic or service name, for log messages.
    pub(crate) name: String,
    pending: AtomicUsize,
    queued: AtomicBool,
    /// The pass it last executed in (single passes only).
    last_pass: AtomicU64,
    /// Set after a callback panicked, so the log says it once.
    panicked: AtomicBool,
    /// While stage tracing: when the push callback queued the entity (`now_ns`).
    notified_ns: AtomicU64,
    /// Taken out (and so dropped) on teardown, after `registration` and `timer`.
    pub(crate) waitable: Mutex<Option<Waitable>>,
    registration: Mutex<Option<OnReadyHandle>>,
    /// For timers: the scheduler's hold on the timer.
    timer: Mutex<Option<TimerParts>>,
}

/// What a timer entity registers besides itself. The registrations are only held for
/// their `Drop` (which frees their callback contexts), after `Entity::stop_timer` has
/// cleared them in rcl.
pub(crate) struct TimerParts {
    pub(crate) scheduler: Arc<dyn TimerWatch>,
    #[allow(dead_code)]
    pub(crate) reset: Option<ResetRegistration>,
    #[allow(dead_code)]
    pub(crate) jump: Option<rclrs::JumpCallbackHandle>,
}

impl Entity {
    pub(crate) fn new(waitable: Waitable) -> Arc<Self> {
        let primitive = waitable.primitive();
        Arc::new(Self {
            kind: primitive.kind(),
            name: ffi::entity_name(primitive),
            pending: AtomicUsize::new(0),
            queued: AtomicBool::new(false),
            last_pass: AtomicU64::new(0),
            panicked: AtomicBool::new(false),
            notified_ns: AtomicU64::new(0),
            waitable: Mutex::new(Some(waitable)),
            registration: Mutex::new(None),
            timer: Mutex::new(None),
        })
    }

    /// Register the push callback. `Ok(false)` means the primitive has no push path.
    ///
    /// rcl calls the callback synchronously, from inside this call, with the count of
    /// events that arrived before registration.
    pub(crate) fn register(
        self: &Arc<Self>,
        mailbox: &impl EntityQueue,
    ) -> Result<bool, rclrs::RclrsError> {
        let weak: Weak<Self> = Arc::downgrade(self);
        let mailbox = mailbox.clone();
        let callback: OnReadyCallback = Arc::new(move |_ready: ReadyKind, count: usize| {
            if let Some(entity) = weak.upgrade() {
                entity.notify(count, &mailbox);
            }
        });
        let registration = {
            let waitable = self.waitable.lock().unwrap();
            match waitable.as_ref() {
                Some(w) => w.primitive().register_on_ready(callback)?,
                None => return Ok(false),
            }
        };
        let pushed = registration.is_some();
        *self.registration.lock().unwrap() = registration;
        Ok(pushed)
    }

    /// The push callback's work: atomics and at most one non-blocking send.
    pub(crate) fn notify(self: Arc<Self>, count: usize, mailbox: &impl EntityQueue) {
        if count == 0 {
            return;
        }
        self.pending.fetch_add(count, Ordering::AcqRel);
        if !self.queued.swap(true, Ordering::AcqRel) {
            if mailbox.tracing() {
                self.notified_ns.store(now_ns(), Ordering::Relaxed);
            }
            mailbox.enqueue(self);
        }
    }

    /// When the push callback last queued the entity, while stage tracing; 0 if not
    /// stamped.
    pub(crate) fn take_notified_ns(&self) -> u64 {
        self.notified_ns.swap(0, Ordering::Relaxed)
    }

    /// Begin a drain: allow re-queueing, then claim every arrival counted so far.
    pub(crate) fn claim(&self) -> usize {
        self.queued.store(false, Ordering::SeqCst);
        self.pending.swap(0, Ordering::SeqCst)
    }

    /// Give back arrivals a drain did not get to (its budget ran out) and re-queue.
    pub(crate) fn unclaim(self: &Arc<Self>, count: usize, mailbox: &impl EntityQueue) {
        if count > 0 {
            Arc::clone(self).notify(count, mailbox);
        }
    }

    /// Mark the entity as run in `pass`; false if it already ran in that pass.
    pub(crate) fn first_run_in(&self, pass: u64) -> bool {
        self.last_pass.swap(pass, Ordering::SeqCst) != pass
    }

    /// Defer to the next pass the entity's queued item (taken from the mailbox but not
    /// run) and `unexecuted` claimed arrivals: counted, but not queued.
    pub(crate) fn defer(&self, unexecuted: usize) {
        self.queued.store(false, Ordering::SeqCst);
        if unexecuted > 0 {
            self.pending.fetch_add(unexecuted, Ordering::SeqCst);
        }
    }

    /// Queue a deferred entity again if it still has arrivals and is not queued.
    pub(crate) fn requeue(self: &Arc<Self>, mailbox: &impl EntityQueue) {
        if self.pending.load(Ordering::SeqCst) > 0 && !self.queued.swap(true, Ordering::AcqRel) {
            mailbox.enqueue(Arc::clone(self));
        }
    }

    /// A callback of this entity panicked: count it, and log the first one.
    pub(crate) fn contain_panic(&self, stats: &ExecutorStats, panic: &(dyn std::any::Any + Send)) {
        stats.record_panic(&self.name);
        if !self.panicked.swap(true, Ordering::Relaxed) {
            log_panic(
                &format!(
                    "the callback of {} (further panics of it are counted in ExecutorStats, \
                     not logged)",
                    self.name
                ),
                panic,
            );
        }
    }

    /// Whether the user still holds the entity.
    pub(crate) fn in_use(&self) -> bool {
        self.waitable
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|w| w.is_in_use())
    }

    /// Tear down in the safe order: clear the push callback (no callback runs after
    /// this returns), then drop the Waitable (which may finalize the rcl entity); the
    /// callback's context is freed by the registration's own drop after the clear.
    pub(crate) fn teardown(&self) {
        let registration = self.registration.lock().unwrap().take();
        drop(registration);
        self.stop_timer();
        let waitable = self.waitable.lock().unwrap().take();
        drop(waitable);
    }

    /// Attach the timer scheduler's parts to a timer entity.
    pub(crate) fn set_timer_parts(&self, parts: TimerParts) {
        *self.timer.lock().unwrap() = Some(parts);
    }

    /// For a timer: leave the scheduler (which then no longer reads the rcl timer), clear
    /// the reset callback (under the timer's lock), then free the callback contexts.
    fn stop_timer(&self) {
        let Some(parts) = self.timer.lock().unwrap().take() else {
            return;
        };
        parts.scheduler.remove(self);
        if let Some(waitable) = self.waitable.lock().unwrap().as_ref() {
            RclTimer::clear_on_reset(waitable.primitive());
        }
        drop(parts);
    }

    /// Take the Waitable out of a push entity, deregistering first (used when moving a
    /// primitive to the fallback waiter).
    pub(crate) fn into_waitable(&self) -> Option<Waitable> {
        let registration = self.registration.lock().unwrap().take();
        drop(registration);
        self.stop_timer();
        self.waitable.lock().unwrap().take()
    }
}

impl Drop for Entity {
    fn drop(&mut self) {
        self.teardown();
    }
}
