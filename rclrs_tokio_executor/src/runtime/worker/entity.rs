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
//! arrivals, which can exceed what rmw still holds (QoS depth), so a subscription's
//! drain stops at the first `TAKE_FAILED`: nothing that rmw still holds is skipped,
//! and nothing is taken twice.
//!
//! A service's or a client's take can fail with more still queued: rmw takes the
//! sample and drops it when it is not for this entity (a response to another client
//! of the same service, which every client of it receives when several servers answer
//! under one name) or holds no data. Each such sample was counted as an arrival, so
//! their drains execute once per claimed arrival and do not stop at a failed take, as
//! rclcpp's EventsExecutor does (see [`Entity::take_can_skip`]).
//!
//! # Pausing
//!
//! rmw notifies every arrival on the thread that delivers it (the publishing thread in
//! one process, a middleware receive thread across processes), inside the reader's
//! lock. While a Worker drains a subscription's backlog those notifications only
//! repeat what it is about to find, so a drain that claimed several arrivals pauses
//! them (`set_paused`), takes until rmw's queue is empty, and resumes them. Resuming
//! reports through the push callback what arrived and was not taken. rmw turns the
//! callback back on after counting those, so arrivals in between are neither counted
//! nor notified: after resuming, the drain therefore takes once more until rmw's queue
//! is empty. A drain that stops earlier (its budget or the spin ends) resumes and
//! queues the entity for a *sweep*, a drain that takes until rmw's queue is empty
//! however few arrivals were counted. So nothing that arrives while paused, or while
//! resuming, is left without a take queued.
//!
//! # Parts
//!
//! An action server or client is one rcl entity made of several (goal, cancel and
//! result services, feedback and status subscriptions, the goal-expiry timer), and
//! rclrs executes it with a `ReadyKind` that names the part to serve. So an entity
//! keeps one `pending` count per part its push callback can report: one for
//! everything else, four for an action server, five for an action client. The
//! `queued` flag stays one per entity: a burst on several parts still queues it once.
//!
//! # Single passes
//!
//! In a single pass (`spin_once`, zero timeout; see the spin gate) a Worker executes an
//! entity once and *defers* the rest: the unexecuted count goes back into `pending`
//! without queueing the entity (and without clearing `queued`, which a push callback
//! may have set again meanwhile), and the Worker keeps it on a list that it re-queues
//! when the next pass begins. `last_pass` marks the pass an entity last ran in, so an
//! entity that a new arrival queued again within the same pass is deferred as well.
//!
//! The counting and queueing protocol is in `coalescing.rs`, with loom models of it.

mod coalescing;
mod kind;

pub(crate) use coalescing::Claims;
pub(crate) use kind::{rules_of, KindRules, Ticks};

use crate::ffi::{self, RclTimer, ResetRegistration};
use crate::runtime::panics::log_panic;
use crate::stats::worker_counters::now_ns;
use crate::stats::ExecutorStats;
use coalescing::Arrivals;
use kind::Part;
use rclrs::{OnReadyCallback, OnReadyHandle, ReadyKind, Waitable};
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
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
    /// How its kind is served (`kind.rs`).
    pub(crate) rules: &'static KindRules,
    /// Topic, service or action name, for log messages.
    pub(crate) name: String,
    /// The parts rclrs executes separately (see the module doc), and the arrivals
    /// counted for each; only the first `parts.len()` counts are used.
    parts: Vec<Part>,
    /// The coalescing state the push callback updates (`coalescing.rs`).
    arrivals: Arrivals,
    /// The pass it last executed in (single passes only).
    last_pass: AtomicU64,
    /// Set after a callback panicked, so the log says it once.
    panicked: AtomicBool,
    /// Set when a drain must take until rmw's queue is empty, whatever the count says
    /// (see "Pausing"); only the Worker reads and writes it.
    sweep: AtomicBool,
    /// While stage tracing: when the push callback queued the entity (`now_ns`).
    notified_ns: AtomicU64,
    /// For a Worker's guard condition: set while it is queued only by the triggers rcl
    /// held from before its registration ([`Entity::quiet_registration_report`]).
    quiet_report: AtomicBool,
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
            rules: rules_of(primitive.kind()),
            name: ffi::entity_name(primitive),
            parts: kind::parts_of(primitive.kind()),
            arrivals: Arrivals::new(),
            last_pass: AtomicU64::new(0),
            panicked: AtomicBool::new(false),
            sweep: AtomicBool::new(false),
            notified_ns: AtomicU64::new(0),
            quiet_report: AtomicBool::new(false),
            waitable: Mutex::new(Some(waitable)),
            registration: Mutex::new(None),
            timer: Mutex::new(None),
        })
    }

    /// Register the push callback. `Ok(false)` means the primitive has no push path.
    ///
    /// rcl calls the callback synchronously, from inside this call, with the count of
    /// events that arrived before registration. It counts them before it turns the
    /// callback on, so a subscription's sample arriving in between (a transient-local
    /// one delivered on matching, say) would wait for the next arrival: a subscription
    /// is queued for one sweep, as after resuming (see "Pausing").
    pub(crate) fn register(
        self: &Arc<Self>,
        mailbox: &impl EntityQueue,
    ) -> Result<bool, rclrs::RclrsError> {
        let weak: Weak<Self> = Arc::downgrade(self);
        let queue = mailbox.clone();
        let callback: OnReadyCallback = Arc::new(move |ready: ReadyKind, count: usize| {
            if let Some(entity) = weak.upgrade() {
                let part = entity.part_of(ready);
                entity.notify(part, count, &queue);
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
        if pushed && self.rules.stream {
            self.request_sweep(mailbox);
        }
        Ok(pushed)
    }

    /// Call right after registering a Worker's guard condition: if what rclrs reported
    /// from inside the registration queued it, those triggers came from entities added
    /// to the Worker before its task registered anything, and each add announced itself
    /// as new work already (`ExecutorShared::note_entities_changed`, which the next spin
    /// consumes, as the basic executor's next wait consumes the trigger). Their drain,
    /// which may fall in a later spin, is then no unit of work of its own
    /// ([`Entity::trigger_is_new_work`]).
    pub(crate) fn quiet_registration_report(&self) {
        if self.arrivals.is_queued() {
            self.quiet_report.store(true, Ordering::Relaxed);
        }
    }

    /// For a guard condition about to be drained: whether its triggers are new work
    /// for the spin (false once after a quiet registration report).
    pub(crate) fn trigger_is_new_work(&self) -> bool {
        !self.quiet_report.swap(false, Ordering::Relaxed)
    }

    /// The parts rclrs executes separately, in the order of [`Claims`].
    pub(crate) fn parts(&self) -> impl Iterator<Item = ReadyKind> + '_ {
        self.parts.iter().map(|p| p.ready)
    }

    /// Which part a notification is for (the only one, for most entities).
    fn part_of(&self, ready: ReadyKind) -> usize {
        if self.parts.len() == 1 {
            return 0;
        }
        self.parts
            .iter()
            .position(|p| p.ready == ready)
            .unwrap_or(0)
    }

    /// The part a tick of the timer scheduler is for: a timer's only part, an action
    /// server's goal expiry (its last part).
    pub(crate) fn tick_part(&self) -> usize {
        self.parts.len() - 1
    }

    /// Whether a take of `part` can fail while rmw still holds samples after the one
    /// it dropped: the request and response parts (see "Coalescing").
    pub(crate) fn take_can_skip(&self, part: usize) -> bool {
        self.parts[part].take_can_skip
    }

    /// Whether `part` is run by ticks: once per tick, which the timer scheduler
    /// watches (see `timer_scheduler.rs`).
    pub(crate) fn is_tick(&self, part: usize) -> bool {
        self.parts[part].ticked
    }

    /// A tick of the timer scheduler.
    pub(crate) fn tick(self: Arc<Self>, mailbox: &impl EntityQueue) {
        let part = self.tick_part();
        self.notify(part, 1, mailbox);
    }

    /// The push callback's work: atomics and at most one non-blocking send.
    pub(crate) fn notify(self: Arc<Self>, part: usize, count: usize, mailbox: &impl EntityQueue) {
        if self.arrivals.add(part, count) {
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

    /// Whether the entity is queued again (a notification since its drain began).
    pub(crate) fn is_queued(&self) -> bool {
        self.arrivals.is_queued()
    }

    /// Begin a drain: allow re-queueing, then claim every arrival counted so far.
    pub(crate) fn claim(&self) -> Claims {
        self.arrivals.claim(self.parts.len())
    }

    /// Give back arrivals a drain did not get to (its budget ran out) and re-queue.
    pub(crate) fn unclaim(self: &Arc<Self>, left: &Claims, mailbox: &impl EntityQueue) {
        for (part, &count) in left.iter().enumerate().filter(|(_, &count)| count > 0) {
            Arc::clone(self).notify(part, count, mailbox);
        }
    }

    /// Mark the entity as run in `pass`; false if it already ran in that pass.
    pub(crate) fn first_run_in(&self, pass: u64) -> bool {
        self.last_pass.swap(pass, Ordering::SeqCst) != pass
    }

    /// Defer to the next pass the entity's queued item, taken from the mailbox but not
    /// run (its arrivals stay counted).
    pub(crate) fn defer_item(&self) {
        self.arrivals.defer_unclaimed();
    }

    /// Defer to the next pass the `unexecuted` arrivals a drain claimed: counted again,
    /// but not queued.
    pub(crate) fn defer_claims(&self, unexecuted: &Claims) {
        self.arrivals.put_back(unexecuted);
    }

    /// Queue a deferred entity again if it still has arrivals and is not queued; true if
    /// it sent it.
    pub(crate) fn requeue(self: &Arc<Self>, mailbox: &impl EntityQueue) -> bool {
        let queue = self.arrivals.requeue();
        if queue {
            mailbox.enqueue(Arc::clone(self));
        }
        queue
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

    /// Pause (or resume) the push callback's notifications; false if that is not
    /// possible. Resuming reports what arrived meanwhile and was not taken, through
    /// the push callback, on this thread.
    pub(crate) fn set_paused(&self, paused: bool) -> bool {
        self.registration
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|registration| registration.set_paused(paused))
    }

    /// Queue the entity for a drain that takes until rmw's queue is empty.
    pub(crate) fn request_sweep(self: &Arc<Self>, mailbox: &impl EntityQueue) {
        self.sweep.store(true, Ordering::Relaxed);
        let mut one = Claims::default();
        one[0] = 1;
        self.unclaim(&one, mailbox);
    }

    /// Whether a sweep was requested; clears the request (the read alone when none
    /// was, which is nearly always).
    pub(crate) fn take_sweep(&self) -> bool {
        self.sweep.load(Ordering::Relaxed) && self.sweep.swap(false, Ordering::Relaxed)
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
    pub(crate) fn take_waitable(&self) -> Option<Waitable> {
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
