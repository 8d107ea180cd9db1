//! A Worker task: the single Tokio task that runs everything of one rclrs Worker.
//!
//! A Tokio task is never polled by two threads at once, so whatever this task does for
//! its Worker happens one thing at a time and in mailbox order, and it needs no lock on
//! the Worker's payload: it owns it. Different Workers are different tasks, which the
//! pool runs in parallel on its threads. With `follow_load` a task may move to another
//! pool thread between turns: it leaves its loop with nothing in flight and is spawned
//! again there, owning the same mailbox, entities and payload (see `placement`).
//!
//! The task has two inputs:
//! - a **control** channel for bookkeeping that must happen whether or not the executor
//!   is spinning: new entities (registered for push right away, so arrivals before the
//!   first spin are counted), activity listeners, and sweeps of dropped entities;
//! - the **mailbox** of callbacks, taken only while the spin gate is open.
//!
//! # Life of the task
//!
//! The task ends when the executor shuts down, or once its rclrs Worker is gone (its
//! channel dropped, [`Control::WorkerDropped`]), no entity of it is still in use and its
//! mailbox is empty: payload tasks sent before the Worker went still run, at the next
//! spin, as the basic executor runs them. It
//! owns its entities, so ending tears them down: the mailbox is drained first, then
//! every entity deregisters its push callback before its Waitable is dropped, then the
//! task leaves the executor's list of Workers.
//!
//! Submodules: [`control`] (what the control channel asks for, and when the task is
//! done), [`registration`] (how a new Waitable is taken in), [`drain`] (how an
//! entity's arrivals are executed), [`activity`] (the listeners told after every
//! callback), [`linger`] (the nap after a backlog, and the brief watch of the mailbox
//! under a sustained stream), [`timer_wake`] (how a pool Worker waits for its own
//! timers' deadlines) and [`stage_trace`] (timestamps of a drain while stage tracing is
//! on).

mod activity;
mod control;
mod drain;
mod linger;
mod registration;
mod stage_trace;
mod timer_wake;

use crate::runtime::{
    async_tasks::InlineScope,
    dedicated_thread,
    entity::Entity,
    fallback_waiter::FallbackWaiter,
    mailbox::{self, LentPayload, MailItem, MailboxReceiver, MailboxSender},
    panics::log_panic,
    placement::{Home, LONG_CALLBACK, WINDOW},
    shared::ExecutorShared,
    timer_scheduler::{self, TimerScheduler},
    turn::{self, Turn},
    workers::{Control, WorkerEntry},
};
use crate::stats::worker_counters::WorkerCounters;
use linger::LingerState;
use rclrs::{log_error, Context, GuardCondition, WeakActivityListener};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;
use timer_wake::{wait_for_timers, TimerWake};
use tokio::sync::{mpsc, oneshot};

/// How many mailbox items a Worker runs before yielding to other tasks (it also yields
/// once its turn's callback budget is spent, see `turn`).
const MAILBOX_BUDGET: usize = 64;

pub(crate) struct WorkerTask {
    shared: Arc<ExecutorShared>,
    context: Context,
    /// The rclrs Worker's guard condition; `None` for the executor's clock task.
    guard_condition: Option<Arc<GuardCondition>>,
    /// Callbacks wait for the spin gate; false only for the clock task (see
    /// `ExecutorShared::clock_task`), which keeps ROS time moving between spins.
    gated: bool,
    /// This task in the executor's list of Workers.
    entry: Arc<WorkerEntry>,
    /// What this task counts for users (and its mailbox's positions, for `spin()`).
    counters: Arc<WorkerCounters>,
    control: mpsc::UnboundedReceiver<Control>,
    control_tx: mpsc::UnboundedSender<Control>,
    mailbox: MailboxReceiver,
    mailbox_tx: MailboxSender,
    /// `None` only while lent to the fallback waiter.
    payload: Option<Box<dyn Any + Send>>,
    entities: Vec<Arc<Entity>>,
    /// Activity listeners, told after every callback (see `activity`).
    listeners: Vec<WeakActivityListener>,
    /// An item taken from the mailbox just as the gate closed, or while lingering.
    stash: Option<MailItem>,
    /// The pass of the spin gate this task last worked in, and the entities a single
    /// pass deferred to the next one (see `entity.rs`).
    pass: u64,
    deferred: Vec<Arc<Entity>>,
    /// The rclrs Worker is gone: end once no entity is in use.
    orphaned: bool,
    linger: LingerState,
    /// The timer scheduler of this Worker's timers: one of its own, which the Worker
    /// drives (its thread, or on the pool this task through `timer_wake`), or the
    /// executor's (see `timer_scheduler`).
    timers: Arc<TimerScheduler>,
    /// On the pool: how this task waits for its own timers.
    timer_wake: Option<TimerWake>,
    fallback: Option<FallbackWaiter>,
    /// Where the task runs on the pool (`None` on a user's runtime or its own thread).
    home: Option<Home>,
    /// With `follow_load`: when to ask next whether to move (see `placement`).
    next_placement_check: Option<Instant>,
    /// With `follow_load`: this Worker once ran long callbacks, and keeps a thread of
    /// its own (see `placement`).
    blocker: bool,
}

impl WorkerTask {
    /// Start a Worker task on the executor's threads. Returns its control channel and
    /// its mailbox.
    pub(crate) fn spawn(
        shared: Arc<ExecutorShared>,
        context: Context,
        guard_condition: Option<Arc<GuardCondition>>,
        payload: Box<dyn Any + Send>,
    ) -> (mpsc::UnboundedSender<Control>, MailboxSender) {
        let (control_tx, control) = mpsc::unbounded_channel();
        let counters = shared.stats.new_worker();
        let (mailbox_tx, mailbox) = mailbox::mailbox(&counters);
        let entry = Arc::new(WorkerEntry {
            gated: guard_condition.is_some(),
            control: control_tx.clone(),
            mailbox: Arc::clone(&counters),
        });
        shared.workers.add(Arc::clone(&entry));
        // The clock task is never dedicated: it must serve `/clock` on the Tokio threads.
        let dedicated = shared
            .dedicated
            .as_ref()
            .filter(|d| guard_condition.is_some() && d.applies_to(&*payload))
            .cloned();
        let (timers, timer_wake) = match &dedicated {
            Some(_) => (shared.worker_timers(counters.id), None),
            // A gated Worker on the pool drives its own timers too (see `timer_wake`).
            None if guard_condition.is_some() && shared.threads.is_pool() => {
                let own = shared.worker_timers(counters.id);
                match TimerWake::new(&own) {
                    Some(wake) => (own, Some(wake)),
                    None => (Arc::clone(&shared.timers), None),
                }
            }
            None => (Arc::clone(&shared.timers), None),
        };
        let task = Self {
            shared: Arc::clone(&shared),
            context,
            gated: guard_condition.is_some(),
            guard_condition,
            entry,
            counters,
            control,
            control_tx: control_tx.clone(),
            mailbox,
            mailbox_tx: mailbox_tx.clone(),
            payload: Some(payload),
            entities: Vec::new(),
            listeners: Vec::new(),
            stash: None,
            pass: 0,
            deferred: Vec::new(),
            orphaned: false,
            linger: LingerState::new(shared.linger),
            timers: Arc::clone(&timers),
            timer_wake,
            fallback: None,
            home: None,
            next_placement_check: None,
            blocker: false,
        };
        match dedicated {
            None => task.spawn_on_pool(None),
            Some(dedicated) => {
                let counters = Arc::clone(&task.counters);
                let on_thread = async move {
                    let mut task = task;
                    task.run().await;
                };
                if let Err((err, task)) =
                    dedicated_thread::spawn(&shared, &dedicated, counters, timers, on_thread)
                {
                    log_error!(
                        "rclrs_tokio_executor",
                        "no thread for a dedicated Worker ({err}); it runs on the Tokio threads"
                    );
                    shared.threads.spawn_worker(None, |home| async move {
                        let _counted = home;
                        task.await
                    });
                }
            }
        }
        (control_tx, mailbox_tx)
    }

    /// Run on pool thread `at` (or the one with the fewest Workers), and on whichever
    /// thread the load sends it to next (see `placement`).
    fn spawn_on_pool(self, at: Option<usize>) {
        let shared = Arc::clone(&self.shared);
        shared.threads.spawn_worker(at, move |home| {
            let mut task = self;
            task.next_placement_check =
                (task.shared.follow_load && home.is_some()).then(|| Instant::now() + WINDOW);
            task.counters
                .set_home_thread(home.as_ref().map(|h| h.index));
            task.home = home;
            if let (Some(home), true) = (task.home.as_mut(), task.blocker) {
                home.mark_blocker();
            }
            async move {
                if let Some(target) = task.run().await {
                    // Nothing is in flight between turns: leave this thread's count,
                    // then start again on the other thread, mailbox and all.
                    if let Some(wake) = task.timer_wake.as_mut() {
                        wake.unbind();
                    }
                    task.home = None;
                    task.counters.set_home_thread(None);
                    task.spawn_on_pool(Some(target));
                }
            }
        });
    }

    /// Whether the load says to move to another pool thread now (checked once per
    /// window, between turns).
    fn placement_due(&mut self) -> Option<usize> {
        let due = self.next_placement_check?;
        let now = Instant::now();
        if now < due {
            return None;
        }
        self.next_placement_check = Some(now + WINDOW);
        let home = self.home.as_ref()?;
        self.shared.threads.decide_move(home, now)
    }

    /// Run until the task ends (`None`), or until the load says to move to another
    /// pool thread (`Some` of its index).
    async fn run(&mut self) -> Option<usize> {
        let shared = Arc::clone(&self.shared);
        loop {
            while let Ok(control) = self.control.try_recv() {
                if self.handle_control(control) {
                    return None;
                }
            }
            if self.gated && !shared.gate.admits() {
                tokio::select! {
                    biased;
                    control = self.control.recv() => match control {
                        Some(control) => if self.handle_control(control) { return None },
                        None => return None,
                    },
                    _ = shared.gate.opened() => {}
                }
                continue;
            }
            self.begin_pass_if_new();
            let waiting_for_pass = !self.deferred.is_empty();
            let pass = self.pass;
            let first = match self.stash.take() {
                Some(item) => item,
                None => {
                    // The Worker's own timers that are due go into the mailbox first.
                    let look_again = self.timer_wake.as_ref().and_then(TimerWake::prepare);
                    // The mailbox first: a Worker woken for an item then takes it
                    // without polling its control channel too (the loop's top has just
                    // emptied that; what reaches it since waits one batch, as if sent a
                    // moment later).
                    tokio::select! {
                        biased;
                        item = self.mailbox.recv() => match item {
                            Some(item) => item,
                            None => return None,
                        },
                        control = self.control.recv() => {
                            match control {
                                Some(control) => if self.handle_control(control) { return None },
                                None => return None,
                            }
                            continue;
                        }
                        // Deferred entities go back into the mailbox when a new pass
                        // begins.
                        _ = shared.gate.opened_after(pass), if waiting_for_pass => continue,
                        _ = wait_for_timers(self.timer_wake.as_mut(), look_again) => continue,
                    }
                }
            };
            let streaming = self.linger.streaming();
            let budget_used = self.run_batch(first).await;
            if self.is_done() {
                return None;
            }
            if let Some(target) = self.placement_due() {
                return Some(target);
            }
            if budget_used {
                tokio::task::yield_now().await;
            } else if !self.maybe_nap().await && streaming {
                self.maybe_linger();
            }
            self.linger.went_idle();
        }
    }

    /// A new spin began since this task last worked: re-queue what the last single pass
    /// deferred.
    fn begin_pass_if_new(&mut self) {
        let pass = self.shared.gate.pass();
        if pass != self.pass {
            self.pass = pass;
            for entity in std::mem::take(&mut self.deferred) {
                self.counters
                    .undeferred_one(|| entity.requeue(&self.mailbox_tx));
            }
        }
    }

    /// Keep `entity` for the next pass (a single pass ran it, or is over for it).
    fn defer(&mut self, entity: &Arc<Entity>) {
        self.counters.deferred_one();
        self.deferred.push(Arc::clone(entity));
    }

    /// Run `first` and whatever else is queued, up to the budget. Returns true if the
    /// budget ran out.
    async fn run_batch(&mut self, first: MailItem) -> bool {
        let shared = Arc::clone(&self.shared);
        let mut next = Some(first);
        let mut ran = 0;
        let shares_thread = self
            .home
            .as_ref()
            .is_some_and(|home| home.load.workers() > 1);
        let turn = Turn::begin(
            Arc::clone(&self.counters),
            shares_thread,
            self.gated.then(|| Arc::clone(&shared)),
        );
        // Its own timers, if it has any, are looked at during the turn too.
        let _driving = self
            .timer_wake
            .as_ref()
            .is_some_and(TimerWake::has_timers)
            .then(|| timer_scheduler::Driving::begin(&self.timers));
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
            // The item's pick-up: the start of its busy time, and of its stage trace.
            let started = Instant::now();
            // With `follow_load`, the turn's budget before the item, to count the callbacks
            // it ran; not for a loan, which waits for the fallback waiter without holding
            // the thread.
            let budget_before = (self.next_placement_check.is_some()
                && !matches!(item, MailItem::Loan(_)))
            .then(turn::left);
            let worked = self.process(item, started).await;
            let busy = started.elapsed();
            self.counters.was_busy(busy);
            if let Some(before) = budget_before {
                self.count_load(busy, before.saturating_sub(turn::left()));
            }
            self.mailbox.finished_one();
            match flight {
                Some(flight) if worked => flight.finish_with_work(),
                flight => {
                    drop(flight);
                    shared.gate.progressed();
                }
            }
            ran += 1;
            if ran == MAILBOX_BUDGET || turn.exhausted() {
                break;
            }
            // The Worker's own timers that fell due meanwhile queue up behind what waits
            // (see `timer_scheduler`).
            timer_scheduler::deliver_adopted_due();
            next = self.mailbox.try_recv();
        }
        ran == MAILBOX_BUDGET || turn.exhausted()
    }

    /// With `follow_load`: add an item's `busy` time, in which it ran `callbacks`, to
    /// this thread's load, and mark this Worker a blocker if they were long.
    fn count_load(&mut self, busy: std::time::Duration, callbacks: usize) {
        let Some(home) = self.home.as_mut() else {
            return;
        };
        home.load.add_busy(busy);
        if busy > LONG_CALLBACK * callbacks.max(1) as u32 {
            self.blocker = true;
            home.mark_blocker();
        }
    }

    /// Run one mailbox item; true if a callback ran.
    async fn process(&mut self, item: MailItem, picked_up: Instant) -> bool {
        match item {
            MailItem::Entity(entity) => self.drain(&entity, picked_up),
            MailItem::Payload(task) => {
                let payload = self.payload.as_deref_mut().expect("payload is home");
                let scope = InlineScope::begin();
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| task(payload))) {
                    self.shared.stats.record_panic("a payload task");
                    self.counters.panicked(1);
                    log_panic("a payload task", &*panic);
                }
                self.counters.panicked(scope.finish(&self.shared, None));
                self.counters.ran_callbacks(1);
                turn::spend(1);
                self.notify_listeners();
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
                self.notify_listeners();
                true
            }
        }
    }

    /// Tell the activity listeners (see `activity`).
    fn notify_listeners(&mut self) {
        if let Some(payload) = self.payload.as_deref_mut() {
            activity::notify(&mut self.listeners, payload);
        }
    }
}

impl Drop for WorkerTask {
    fn drop(&mut self) {
        // Queued entities and loan requests go first, then the entities themselves
        // (each deregisters its callback before dropping its Waitable), then the
        // fallback waiter; last, the task leaves the executor's list.
        if self.stash.take().is_some() {
            self.mailbox.finished_one();
        }
        self.mailbox.close_and_drain();
        for _ in self.deferred.drain(..) {
            self.counters.undeferred_one(|| false);
        }
        for entity in self.entities.drain(..) {
            entity.teardown();
        }
        self.fallback = None;
        // A Worker's own scheduler ends with it (its thread, if it had to start one
        // because the Worker got no thread of its own, with it).
        if !Arc::ptr_eq(&self.timers, &self.shared.timers) {
            self.timers.stop();
        }
        self.shared.workers.remove(&self.entry);
        self.shared.gate.progressed();
    }
}
