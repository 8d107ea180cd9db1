//! The one Tokio task per rclrs Worker that drains the Worker's mailbox.
//!
//! Because a Tokio task is never polled by two threads at once, everything this task
//! does for its Worker is mutually exclusive and in mailbox order, without a lock on
//! the payload: the task owns the payload. Different Workers are different tasks, so
//! Tokio runs them in parallel on its threads.
//!
//! The task has two inputs:
//! - a **control** channel for bookkeeping that must happen whether or not the executor
//!   is spinning: new entities (registered for push right away, so arrivals before the
//!   first spin are counted), activity listeners, and sweeps of dropped entities;
//! - the **mailbox** of callbacks, taken only while the spin gate is open.
//!
//! The task owns its entities, so dropping the task (executor dropped, runtime shut
//! down) tears them down: the mailbox is drained first, then every entity deregisters
//! its push callback before its Waitable is dropped.

use crate::ffi::{self, RclTimer};
use crate::runtime::{
    async_tasks::{log_panic, InlineScope},
    entity::{Entity, TimerParts},
    fallback_waiter::FallbackWaiter,
    mailbox::{LentPayload, MailItem, MailboxReceiver, MailboxSender},
    shared::ExecutorShared,
};
use rclrs::{
    log_error, ActivityListenerCallback, ClockChange, ClockJump, ClockType, Context,
    GuardCondition, JumpThreshold, RclPrimitiveKind, ReadyKind, Waitable, WeakActivityListener,
};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};
use tokio::sync::{mpsc, oneshot};

/// How many mailbox items a Worker runs before yielding to other tasks, and how many
/// times it executes one entity before re-queueing it behind the others.
const MAILBOX_BUDGET: usize = 64;
const ENTITY_BUDGET: usize = 256;

/// When work arrived less than `LINGER` after the Worker last went idle (a sustained
/// stream), the Worker watches its mailbox for up to `LINGER` before parking its thread:
/// the next message usually lands within that time, and catching it spares the
/// publishing thread a wake-up syscall per message. Slower streams (10 kHz is 100 µs
/// apart) never linger, so lingering costs no CPU there.
///
/// Lingering only pays while it catches something. When the producer is on another
/// process, or shares this thread's core, spinning steals the very CPU the producer
/// needs; so after `LINGER_MISSES` lingers in a row caught nothing, the Worker stops
/// lingering and probes again only once every `LINGER_PROBE` wake-ups. For the same
/// reason at most one Worker fewer than the machine has cores lingers at a time, and a
/// linger ends early when another task of the same thread becomes ready.
const LINGER: std::time::Duration = std::time::Duration::from_micros(30);
const LINGER_MISSES: u32 = 2;
const LINGER_PROBE: u32 = 64;

/// How a linger ended.
enum Linger {
    /// A new item arrived: it is in the stash.
    Caught,
    /// Nothing arrived within [`LINGER`].
    Missed,
    /// Another task of this thread became ready; it must not wait for us.
    OthersReady,
}

/// Bookkeeping for a Worker task, handled even while not spinning.
pub(crate) enum Control {
    Add(Waitable),
    Listen(WeakActivityListener),
    /// An rclrs guard condition fired where only the fallback waiter sees it: an entity
    /// may have been dropped.
    Sweep,
    /// The executor is being dropped: tear down and end the task.
    Shutdown,
}

pub(crate) struct WorkerTask {
    shared: Arc<ExecutorShared>,
    context: Context,
    /// The rclrs Worker's guard condition; `None` for the executor's clock task.
    guard_condition: Option<Arc<GuardCondition>>,
    /// Callbacks wait for the spin gate; false only for the clock task (see
    /// `ExecutorShared::clock_task`), which keeps ROS time moving between spins.
    gated: bool,
    control: mpsc::UnboundedReceiver<Control>,
    control_tx: mpsc::UnboundedSender<Control>,
    mailbox: MailboxReceiver,
    mailbox_tx: MailboxSender,
    /// `None` only while lent to the fallback waiter.
    payload: Option<Box<dyn Any + Send>>,
    entities: Vec<Arc<Entity>>,
    listeners: Vec<WeakActivityListener>,
    listeners_due: bool,
    /// An item taken from the mailbox just as the gate closed, or while lingering.
    stash: Option<MailItem>,
    /// When the Worker last ran out of work (see [`LINGER`]).
    idle_since: Option<std::time::Instant>,
    /// Lingers in a row that caught nothing, and wake-ups since lingering paused.
    linger_misses: u32,
    wakeups_without_linger: u32,
    fallback: Option<FallbackWaiter>,
}

impl WorkerTask {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        shared: Arc<ExecutorShared>,
        context: Context,
        guard_condition: Option<Arc<GuardCondition>>,
        payload: Box<dyn Any + Send>,
        control: mpsc::UnboundedReceiver<Control>,
        control_tx: mpsc::UnboundedSender<Control>,
        mailbox: MailboxReceiver,
        mailbox_tx: MailboxSender,
    ) -> Self {
        Self {
            shared,
            context,
            gated: guard_condition.is_some(),
            guard_condition,
            control,
            control_tx,
            mailbox,
            mailbox_tx,
            payload: Some(payload),
            entities: Vec::new(),
            listeners: Vec::new(),
            listeners_due: false,
            stash: None,
            idle_since: None,
            linger_misses: 0,
            wakeups_without_linger: 0,
            fallback: None,
        }
    }

    pub(crate) async fn run(mut self) {
        let shared = Arc::clone(&self.shared);
        loop {
            while let Ok(control) = self.control.try_recv() {
                if self.handle_control(control) {
                    return;
                }
            }
            if self.gated && !shared.gate.is_open() {
                tokio::select! {
                    biased;
                    control = self.control.recv() => match control {
                        Some(control) => if self.handle_control(control) { return },
                        None => return,
                    },
                    _ = shared.gate.opened() => {}
                }
                continue;
            }
            let first = match self.stash.take() {
                Some(item) => item,
                None => tokio::select! {
                    biased;
                    control = self.control.recv() => {
                        match control {
                            Some(control) => if self.handle_control(control) { return },
                            None => return,
                        }
                        continue;
                    }
                    item = self.mailbox.recv() => match item {
                        Some(item) => item,
                        None => return,
                    },
                },
            };
            let woke = std::time::Instant::now();
            let streaming = self
                .idle_since
                .is_some_and(|idle| woke.duration_since(idle) < LINGER);
            let budget_used = self.run_batch(first).await;
            if budget_used {
                tokio::task::yield_now().await;
            } else if streaming && self.stash.is_none() && self.may_linger() {
                match self.linger_if_a_core_is_free() {
                    Some(Linger::Caught) => self.linger_misses = 0,
                    Some(Linger::Missed) => self.linger_misses += 1,
                    Some(Linger::OthersReady) | None => {}
                }
            }
            self.idle_since = Some(std::time::Instant::now());
        }
    }

    /// Whether lingering has paid lately (see [`LINGER_MISSES`]).
    fn may_linger(&mut self) -> bool {
        if self.linger_misses < LINGER_MISSES {
            return true;
        }
        self.wakeups_without_linger += 1;
        if self.wakeups_without_linger >= LINGER_PROBE {
            self.wakeups_without_linger = 0;
            return true;
        }
        false
    }

    /// Linger if a core is free for it (see `ExecutorShared::max_lingering`).
    fn linger_if_a_core_is_free(&mut self) -> Option<Linger> {
        let lingering = &self.shared.lingering;
        if lingering.fetch_add(1, Ordering::AcqRel) >= self.shared.max_lingering {
            lingering.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let outcome = self.linger();
        self.shared.lingering.fetch_sub(1, Ordering::AcqRel);
        Some(outcome)
    }

    /// Watch the mailbox for up to [`LINGER`]; a new item becomes the stash.
    fn linger(&mut self) -> Linger {
        // Other tasks of this thread (other Workers placed here) woken meanwhile wait in
        // the runtime's injection queue: lingering would hold them up, so stop then.
        let runtime = tokio::runtime::Handle::try_current().ok();
        let others_ready = || {
            runtime
                .as_ref()
                .is_some_and(|r| r.metrics().global_queue_depth() > 0)
        };
        let until = std::time::Instant::now() + LINGER;
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
            if std::time::Instant::now() >= until {
                return Linger::Missed;
            }
        }
    }

    /// Run `first` and whatever else is queued, up to the budget. Returns true if the
    /// budget ran out.
    async fn run_batch(&mut self, first: MailItem) -> bool {
        let shared = Arc::clone(&self.shared);
        let mut next = Some(first);
        let mut ran = 0;
        while let Some(item) = next.take() {
            let flight = if self.gated {
                let Some(flight) = shared.gate.try_enter() else {
                    self.stash = Some(item);
                    break;
                };
                Some(flight)
            } else {
                None
            };
            if self.process(item).await {
                self.listeners_due = true;
                if let Some(flight) = flight {
                    flight.finish_with_work();
                }
            } else {
                drop(flight);
            }
            ran += 1;
            if ran == MAILBOX_BUDGET {
                break;
            }
            next = self.mailbox.try_recv();
        }
        if self.listeners_due {
            if let Some(flight) = shared.gate.try_enter() {
                self.notify_listeners();
                drop(flight);
            }
        }
        ran == MAILBOX_BUDGET
    }

    /// Run one mailbox item; true if a callback ran.
    async fn process(&mut self, item: MailItem) -> bool {
        match item {
            MailItem::Entity(entity) => self.drain(&entity),
            MailItem::Payload(task) => {
                let payload = self.payload.as_deref_mut().expect("payload is home");
                let scope = InlineScope::begin();
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| task(payload))) {
                    log_panic("a payload task", &*panic);
                }
                scope.finish(&self.shared);
                true
            }
            MailItem::Loan(loan) => {
                let payload = self.payload.take().expect("payload is home");
                let (give_back, returned) = oneshot::channel();
                if let Err(refused) = loan.lend.send(LentPayload::new(payload, give_back)) {
                    // The fallback waiter is gone; take the payload straight back.
                    self.payload = refused.0.into_payload();
                    return false;
                }
                match returned.await {
                    Ok(payload) => self.payload = Some(payload),
                    Err(_) => log_error!(
                        "rclrs_tokio_executor",
                        "the fallback waiter did not return a Worker's payload; \
                         this Worker can no longer run callbacks"
                    ),
                }
                true
            }
        }
    }

    /// Execute an entity once per claimed arrival, stopping when rmw has nothing left.
    fn drain(&mut self, entity: &Arc<Entity>) -> bool {
        let claimed = entity.claim();
        if entity.kind == RclPrimitiveKind::GuardCondition {
            // rclrs triggers a Worker's guard condition for new entities, payload tasks
            // and dropped entities; the first two reach us directly, so run its (empty)
            // callback and sweep.
            if let Some(waitable) = entity.waitable.lock().unwrap().as_mut() {
                if let Err(err) =
                    ffi::execute_guard_condition(waitable.primitive_mut(), ReadyKind::Basic)
                {
                    log_error!("rclrs_tokio_executor", "guard condition failed: {err}");
                }
            }
            self.sweep();
            return false;
        }
        let mut guard = entity.waitable.lock().unwrap();
        let Some(waitable) = guard.as_mut() else {
            return false;
        };
        if !waitable.is_in_use() {
            drop(guard);
            self.sweep();
            return false;
        }
        let Some(payload) = self.payload.as_deref_mut() else {
            return false;
        };
        // A timer tick runs the timer once (rclrs checks it is still due).
        let is_timer = entity.kind == RclPrimitiveKind::Timer;
        let claimed = if is_timer { claimed.min(1) } else { claimed };
        let mut ran = 0;
        while ran < claimed {
            if ran == ENTITY_BUDGET {
                entity.unclaim(claimed - ran, &self.mailbox_tx);
                break;
            }
            rclrs::reset_take_failed();
            let scope = InlineScope::begin();
            let result = catch_unwind(AssertUnwindSafe(|| {
                ffi::execute(waitable, ReadyKind::Basic, payload)
            }));
            scope.finish(&self.shared);
            match result {
                Ok(Ok(())) => {}
                Ok(Err(err)) => log_error!(
                    "rclrs_tokio_executor",
                    "error while running the callback of {}: {err}",
                    entity.name
                ),
                Err(panic) => {
                    if !entity.panicked.swap(true, Ordering::Relaxed) {
                        log_panic(&format!("the callback of {}", entity.name), &*panic);
                    }
                }
            }
            if rclrs::take_failed_since_reset() {
                break;
            }
            ran += 1;
        }
        drop(guard);
        if is_timer {
            self.shared.timers.ran_tick(entity);
        }
        ran > 0
    }

    fn notify_listeners(&mut self) {
        self.listeners_due = false;
        let Some(payload) = self.payload.as_deref_mut() else {
            return;
        };
        self.listeners.retain(|weak| {
            let Some(listener) = weak.upgrade() else {
                return false;
            };
            let taken = listener.lock().unwrap().take();
            if let Some(mut callback) = taken {
                if let ActivityListenerCallback::Listen(listen) = &mut callback {
                    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| listen(payload))) {
                        log_panic("an activity listener", &*panic);
                    }
                }
                listener.lock().unwrap().replace(callback);
            }
            true
        });
    }

    /// Returns true when the task must end.
    fn handle_control(&mut self, control: Control) -> bool {
        match control {
            Control::Add(waitable) => self.add(waitable),
            Control::Listen(listener) => self.listeners.push(listener),
            Control::Sweep => self.sweep(),
            Control::Shutdown => return true,
        }
        false
    }

    /// Register a new entity for push, or hand it to the fallback waiter.
    fn add(&mut self, waitable: Waitable) {
        let kind = waitable.primitive().kind();
        let push_capable = matches!(
            kind,
            RclPrimitiveKind::Subscription
                | RclPrimitiveKind::Service
                | RclPrimitiveKind::Client
                | RclPrimitiveKind::GuardCondition
        );
        // Once a fallback waiter exists, guard conditions wake it instead, so it sees
        // new entities and dropped ones.
        if kind == RclPrimitiveKind::Timer {
            self.add_timer(waitable);
            return;
        }
        let to_fallback =
            !push_capable || (kind == RclPrimitiveKind::GuardCondition && self.fallback.is_some());
        if to_fallback {
            self.to_fallback(waitable);
            return;
        }
        let entity = Entity::new(waitable);
        if kind == RclPrimitiveKind::Subscription && entity.name == "/clock" && self.gated {
            // rclrs's time source subscribes to /clock on the node Worker (payload `()`).
            // Serve it on the clock task instead, so a Worker blocked in a long callback
            // cannot stop ROS time for everyone else.
            let unit_payload = self.payload.as_ref().is_some_and(|p| (**p).is::<()>());
            if unit_payload {
                if let Some(waitable) = entity.into_waitable() {
                    let clock_task = self.shared.clock_task(&self.context);
                    let _ = clock_task.send(Control::Add(waitable));
                }
                return;
            }
        }
        // Listed before registering: rcl reports the backlog from inside registration.
        self.entities.push(Arc::clone(&entity));
        let pushed = match entity.register(&self.mailbox_tx) {
            Ok(pushed) => pushed,
            Err(err) => {
                log_error!(
                    "rclrs_tokio_executor",
                    "push registration of {} failed ({err}); using the fallback waiter",
                    entity.name
                );
                false
            }
        };
        if !pushed {
            self.entities.retain(|e| !Arc::ptr_eq(e, &entity));
            if let Some(waitable) = entity.into_waitable() {
                self.to_fallback(waitable);
            }
        }
    }

    /// Hand a timer to the timer scheduler: it delivers ticks into this mailbox.
    fn add_timer(&mut self, waitable: Waitable) {
        let Some(timer) = RclTimer::of(waitable.primitive()) else {
            self.to_fallback(waitable);
            return;
        };
        let clock = waitable.primitive().timer_clock();
        let entity = Entity::new(waitable);
        self.entities.push(Arc::clone(&entity));
        let scheduler = Arc::clone(&self.shared.timers);
        let sim_time = Arc::new(AtomicBool::new(
            clock
                .as_ref()
                .is_some_and(|c| c.is_ros_time_override_enabled()),
        ));
        // ROS time moves when /clock says so: rcl calls this on every change (and when
        // sim time is switched on or off), after adjusting the timer itself.
        let jump = clock
            .as_ref()
            .filter(|c| matches!(c.clock_type(), ClockType::RosTime))
            .and_then(|clock| {
                let scheduler = Arc::clone(&scheduler);
                let sim_time = Arc::clone(&sim_time);
                let on_jump = Arc::new(move |jump: &ClockJump| {
                    match jump.clock_change {
                        ClockChange::RosTimeActivated => sim_time.store(true, Ordering::Release),
                        ClockChange::RosTimeDeactivated => sim_time.store(false, Ordering::Release),
                        _ => {}
                    }
                    if !jump.before_jump {
                        scheduler.wake();
                    }
                });
                clock
                    .add_jump_callback(JumpThreshold::any_change(), on_jump)
                    .map_err(|err| {
                        log_error!(
                            "rclrs_tokio_executor",
                            "cannot follow the ROS time of a timer ({err}); it will only \
                             be re-evaluated when other timers or resets wake the scheduler"
                        )
                    })
                    .ok()
            });
        let reset = {
            let scheduler = Arc::clone(&scheduler);
            let waitable = entity.waitable.lock().unwrap();
            waitable.as_ref().and_then(|w| {
                RclTimer::set_on_reset(w.primitive(), Box::new(move || scheduler.wake()))
            })
        };
        entity.set_timer_parts(TimerParts {
            scheduler: Arc::clone(&scheduler),
            reset,
            jump,
        });
        scheduler.add(&entity, timer, self.mailbox_tx.clone(), sim_time);
    }

    fn to_fallback(&mut self, waitable: Waitable) {
        if let Some(fallback) = &self.fallback {
            fallback.add(waitable);
            return;
        }
        // First fallback primitive of this Worker: its guard conditions move into the
        // fallback wait set (deregistering their push callbacks first).
        let mut initial = vec![waitable];
        let mut kept = Vec::with_capacity(self.entities.len());
        for entity in self.entities.drain(..) {
            if entity.kind == RclPrimitiveKind::GuardCondition {
                initial.extend(entity.into_waitable());
            } else {
                kept.push(entity);
            }
        }
        self.entities = kept;
        let Some(guard_condition) = self.guard_condition.clone() else {
            log_error!(
                "rclrs_tokio_executor",
                "the clock task got a primitive without a push path; it is dropped"
            );
            return;
        };
        match FallbackWaiter::start(
            &self.context,
            guard_condition,
            self.mailbox_tx.clone(),
            self.control_tx.clone(),
            initial,
        ) {
            Ok(fallback) => self.fallback = Some(fallback),
            Err(err) => log_error!(
                "rclrs_tokio_executor",
                "could not start the fallback waiter ({err}); primitives without a push \
                 path (timers, events, actions) will not run on this Worker"
            ),
        }
    }

    /// Tear down every entity the user has dropped.
    fn sweep(&mut self) {
        let mut dead = Vec::new();
        self.entities.retain(|entity| {
            let alive = entity.in_use();
            if !alive {
                dead.push(Arc::clone(entity));
            }
            alive
        });
        for entity in dead {
            entity.teardown();
        }
    }
}

impl Drop for WorkerTask {
    fn drop(&mut self) {
        // Queued entities and loan requests go first, then the entities themselves
        // (each deregisters its callback before dropping its Waitable), then the
        // fallback waiter.
        self.mailbox.close_and_drain();
        self.stash = None;
        for entity in self.entities.drain(..) {
            entity.teardown();
        }
        self.fallback = None;
    }
}
