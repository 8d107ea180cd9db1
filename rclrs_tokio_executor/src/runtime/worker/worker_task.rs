//! A Worker task: everything of one rclrs Worker, run one turn at a time.
//!
//! Only one thread runs a Worker's turn at a time (its cell's lock, see [`WorkerCell`]),
//! so whatever the task does for its Worker happens one thing at a time and in mailbox
//! order, and it needs no lock on the Worker's payload: it owns it. Different Workers
//! are different tasks, which run in parallel on different threads.
//!
//! # What runs the turns
//!
//! [`WorkerCell`] holds the task and its mailbox, and its driver says who runs a turn
//! when the mailbox wakes it:
//! - a pool thread of the executor (the default): queued on that thread's run queue
//!   (`worker_thread`); with `follow_load` the Worker may move to another pool thread
//!   between turns, keeping its mailbox, entities and payload (see `load_balance`);
//! - a dedicated Worker's thread of its own, the same way;
//! - a Tokio task on a runtime the user passed in (`runtime_handle`), woken through an
//!   `AtomicWaker` ([`drive_on_tokio`]).
//!
//! # A turn
//!
//! [`WorkerTask::turn`] runs these steps, and ends with a [`TurnEnd`]:
//! 1. **control**: bookkeeping that must happen whether or not the executor is spinning
//!    (new entities, registered for push right away so arrivals before the first spin
//!    are counted; activity listeners; sweeps of dropped entities; the Worker's end);
//! 2. **payload**: if the payload is lent to the fallback waiter, nothing else can run
//!    until it is back;
//! 3. **gate**: callbacks run only while the spin gate admits them; otherwise the turn
//!    asks the gate to wake it when it opens;
//! 4. **pass**: a new spin began: what the last single pass deferred is queued again;
//! 5. **timers**: a Worker that drives its own timers looks at them, delivering the
//!    ticks due into its mailbox (see "Workers drive their own" in `timer_scheduler`);
//! 6. **batch**: mailbox items, up to [`MAILBOX_BUDGET`] and the turn's budget
//!    (`turn`), looking at the timers again between items when one is due;
//! 7. **end**: yield if the budget ran out, nap or linger after a backlog (`linger`),
//!    move if the load says so (`load_balance`), otherwise idle until the timers' next
//!    deadline.
//!
//! # Life of the task
//!
//! The task ends when the executor shuts down, or once its rclrs Worker is gone (its
//! channel dropped, [`Control::WorkerDropped`]), no entity of it is still in use and its
//! mailbox is empty: payload tasks sent before the Worker went still run, at the next
//! spin, as the basic executor runs them. It owns its entities, so ending tears them
//! down: the mailbox is drained first, then every entity deregisters its push callback
//! before its Waitable is dropped, then the task leaves the executor's list of Workers.
//!
//! Submodules: [`cell`] (the task's cell and its drivers), [`control`] (what the control
//! queue asks for, and when the task is done), [`registration`] (how a new Waitable is
//! taken in), [`drain`] (how an entity's arrivals are executed), [`activity`] (the
//! listeners told after every callback), [`linger`] (the nap after a backlog, and the
//! brief watch of the mailbox under a sustained stream) and [`stage_trace`] (timestamps
//! of a drain while stage tracing is on).

mod activity;
mod cell;
mod control;
mod drain;
mod linger;
mod registration;
mod stage_trace;

use crate::runtime::{
    async_tasks::InlineScope,
    entity::Entity,
    fallback_waiter::FallbackWaiter,
    load_balance::{Home, LONG_CALLBACK, WINDOW},
    mailbox::{LentPayload, MailItem, Mailbox, MailboxSender},
    panics::log_panic,
    shared::ExecutorShared,
    spin_gate::DetachedFlight,
    timer_scheduler::TimerScheduler,
    turn::{self, Turn, TurnContext},
    worker_thread::{ThreadShared, TurnEnd},
    workers::WorkerEntry,
};
use crate::stats::worker_counters::WorkerCounters;
use linger::LingerState;
use rclrs::{log_error, Context, GuardCondition, WeakActivityListener};
use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Poll, Waker};
use std::time::Instant;
use tokio::sync::oneshot;

/// How many mailbox items a Worker runs in one turn (it also ends the turn once the
/// turn's callback budget is spent, see `turn`).
const MAILBOX_BUDGET: usize = 64;

/// Where a turn runs.
#[derive(Clone, Copy)]
pub(crate) enum Site<'a> {
    /// On a Worker thread of the executor (pool or dedicated).
    Thread(&'a Arc<ThreadShared>),
    /// In a Tokio task on a runtime the user passed in.
    Task,
}

/// The payload while it is lent to the fallback waiter.
struct Loan {
    returned: oneshot::Receiver<Box<dyn Any + Send>>,
    /// The loan is a callback in flight until the payload is back.
    flight: Option<DetachedFlight>,
}

pub(crate) struct WorkerTask {
    shared: Arc<ExecutorShared>,
    context: Context,
    /// The rclrs Worker's guard condition; `None` for the executor's clock task.
    guard_condition: Option<Arc<GuardCondition>>,
    /// Callbacks wait for the spin gate; false only for the clock task (see
    /// `ExecutorShared::clock_task`), which keeps ROS time moving between spins.
    gated: bool,
    /// This task in the executor's list of Workers.
    entry: Weak<WorkerEntry>,
    /// What this task counts for users (and its mailbox's positions, for `spin()`).
    counters: Arc<WorkerCounters>,
    /// What its callbacks may ask about it during a turn (`turn`).
    turn_context: Arc<TurnContext>,
    mailbox: Arc<Mailbox>,
    mailbox_tx: MailboxSender,
    /// Wakes this task without sending it anything (the gate opened, a loan came back).
    nudger: Waker,
    /// `None` only while lent to the fallback waiter.
    payload: Option<Box<dyn Any + Send>>,
    loan: Option<Loan>,
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
    /// The timer scheduler of this Worker's timers: one of its own, which the task
    /// drives (`drives_timers`), or the executor's (see `timer_scheduler`).
    timers: Arc<TimerScheduler>,
    drives_timers: bool,
    fallback: Option<FallbackWaiter>,
    /// Where the task runs on the pool (`None` on a user's runtime or its own thread).
    home: Option<Home>,
    /// With `follow_load`: when to ask next whether to move (see `load_balance`).
    next_balance_check: Option<Instant>,
    /// With `follow_load`: this Worker once ran long callbacks, and keeps a thread of
    /// its own (see `load_balance`).
    blocker: bool,
}

impl WorkerTask {
    /// Start a Worker task on the executor's threads (a dedicated thread, a pool thread,
    /// or the user's runtime). Returns its mailbox.
    pub(crate) fn spawn(
        shared: Arc<ExecutorShared>,
        context: Context,
        guard_condition: Option<Arc<GuardCondition>>,
        payload: Box<dyn Any + Send>,
    ) -> MailboxSender {
        let counters = shared.stats.new_worker();
        let mailbox = Mailbox::new(&counters);
        let mailbox_tx = mailbox.sender();
        // The clock task is never dedicated: it must serve `/clock` even when every
        // dedicated thread is busy.
        let dedicated = shared
            .dedicated
            .as_ref()
            .filter(|d| guard_condition.is_some() && d.applies_to(&*payload))
            .cloned();
        // A gated Worker on the executor's own threads drives its own timers; the rest
        // are the executor's scheduler thread's.
        let drives_timers = guard_condition.is_some() && shared.threads.is_pool();
        let timers = if drives_timers {
            let own = shared.worker_timers(counters.id);
            own.drive_from(mailbox_tx.clone());
            own
        } else {
            Arc::clone(&shared.timers)
        };
        let turn_context = Arc::new(TurnContext {
            counters: Arc::clone(&counters),
            gated_by: guard_condition.is_some().then(|| Arc::clone(&shared)),
            timers: drives_timers.then(|| Arc::clone(&timers)),
        });
        let task = Self {
            shared: Arc::clone(&shared),
            context,
            turn_context,
            gated: guard_condition.is_some(),
            guard_condition,
            entry: Weak::new(),
            counters: Arc::clone(&counters),
            nudger: mailbox.nudger(),
            mailbox: Arc::clone(&mailbox),
            mailbox_tx: mailbox_tx.clone(),
            payload: Some(payload),
            loan: None,
            entities: Vec::new(),
            listeners: Vec::new(),
            stash: None,
            pass: 0,
            deferred: Vec::new(),
            orphaned: false,
            linger: LingerState::new(shared.linger),
            timers,
            drives_timers,
            fallback: None,
            home: None,
            next_balance_check: None,
            blocker: false,
        };
        cell::assign_thread(&shared, task, dedicated);
        mailbox_tx
    }

    /// Run one turn (see the module's steps).
    pub(crate) fn turn(&mut self, site: Site<'_>) -> TurnEnd {
        // 1. Control.
        while let Some(control) = self.mailbox.recv_control() {
            if self.handle_control(control) {
                return TurnEnd::Finished;
            }
        }
        // 2. Payload.
        if !self.payload_is_home() {
            return TurnEnd::Idle { until: None };
        }
        // 3. Gate.
        let shared = Arc::clone(&self.shared);
        if self.gated && !shared.gate.admits() {
            shared.gate.wake_when_open(&self.nudger);
            if !shared.gate.admits() {
                return self.idle();
            }
        }
        // 4. Pass.
        self.begin_pass_if_new();
        // 5. Timers.
        self.look_at_timers();
        // 6. Batch.
        let streaming = self.linger.streaming();
        let budget_used = self.run_batch(site);
        // 7. End.
        if !self.deferred.is_empty() || self.stash.is_some() {
            // Deferred entities go back into the mailbox when a new pass begins, and an
            // item taken as the gate closed runs when it opens again.
            shared.gate.wake_when_open(&self.nudger);
            // Checked after leaving the waker: an opening since the batch began found
            // no waker.
            let new_pass = !self.deferred.is_empty() && shared.gate.pass() != self.pass;
            if shared.gate.admits() && (self.stash.is_some() || new_pass) {
                return TurnEnd::Yielded;
            }
        }
        if self.is_done() {
            return TurnEnd::Finished;
        }
        if self.balance_due() {
            return TurnEnd::Moved;
        }
        if budget_used {
            return TurnEnd::Yielded;
        }
        if self.loan.is_some() {
            return TurnEnd::Idle { until: None };
        }
        if self.nap_due(site) {
            return TurnEnd::Nap;
        }
        if streaming && self.maybe_linger(site) {
            return TurnEnd::Yielded;
        }
        self.linger.went_idle();
        self.idle()
    }

    /// Idle until woken, or until the next deadline of the timers it drives.
    fn idle(&mut self) -> TurnEnd {
        TurnEnd::Idle {
            until: self.look_at_timers(),
        }
    }

    /// Step 5: the timers this Worker drives that are due go into its mailbox; until
    /// when it may wait for the next one.
    fn look_at_timers(&self) -> Option<Instant> {
        if !self.drives_timers || !self.timers.has_timers() {
            return None;
        }
        self.timers.look_if_due()
    }

    /// Whether the load says to move to another pool thread now (checked once per
    /// window, between turns); if so, the task is placed there already.
    fn balance_due(&mut self) -> bool {
        let Some(due) = self.next_balance_check else {
            return false;
        };
        let now = Instant::now();
        if now < due {
            return false;
        }
        self.next_balance_check = Some(now + WINDOW);
        let Some(home) = self.home.as_ref() else {
            return false;
        };
        let Some(target) = self.shared.threads.decide_move(home, now) else {
            return false;
        };
        // Nothing is in flight between turns: leave this thread's count and join the
        // other's; the cell's driver reads the new home from the counters.
        self.home = self.shared.threads.home_at(target);
        if let (Some(home), true) = (self.home.as_mut(), self.blocker) {
            home.mark_blocker();
        }
        self.counters
            .set_home_thread(self.home.as_ref().map(|h| h.index));
        true
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

    /// Step 6: run the stash and whatever is queued, up to the budget. Returns true if
    /// the budget ran out.
    fn run_batch(&mut self, site: Site<'_>) -> bool {
        let shared = Arc::clone(&self.shared);
        let Some(first) = self.stash.take().or_else(|| self.mailbox.recv()) else {
            return false;
        };
        let mut next = Some(first);
        let mut ran = 0;
        let shares_thread = self
            .home
            .as_ref()
            .is_some_and(|home| home.load.workers() > 1);
        let turn = Turn::begin(&self.turn_context, shares_thread);
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
            // With `follow_load`, the turn's budget before the item, to count the
            // callbacks it ran; not for a loan, which runs on the fallback waiter.
            let budget_before = (self.next_balance_check.is_some()
                && !matches!(item, MailItem::Loan(_)))
            .then(turn::left);
            let worked = match item {
                MailItem::Loan(loan) => {
                    // The payload goes to the fallback waiter; the loan is finished, and
                    // its flight ends, when it comes back (`payload_is_home`).
                    self.lend(loan, flight.map(|f| shared.gate.detach(f)));
                    break;
                }
                item => self.process(item, started),
            };
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
            // The timers this Worker drives that fell due meanwhile queue up behind what
            // waits.
            if turn.timers_due() {
                self.look_at_timers();
            }
            next = self.mailbox.recv();
        }
        let _ = site;
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

    /// Run one entity or payload task; true if a callback ran.
    fn process(&mut self, item: MailItem, picked_up: Instant) -> bool {
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
            MailItem::Loan(_) => unreachable!("loans are lent by the batch itself"),
        }
    }

    /// Lend the payload to the fallback waiter, which runs its ready primitives with it.
    fn lend(&mut self, loan: crate::runtime::mailbox::PayloadLoan, flight: Option<DetachedFlight>) {
        let payload = self.payload.take().expect("payload is home");
        let (give_back, returned) = oneshot::channel();
        if let Err(refused) = loan.lend.send(LentPayload::new(payload, give_back)) {
            // The fallback waiter is gone; take the payload straight back.
            self.payload = refused.0.into_payload();
            self.finish_loan(flight, false);
            return;
        }
        self.loan = Some(Loan { returned, flight });
        // It may be back already.
        self.payload_is_home();
    }

    /// Whether the payload is home; takes it back from the fallback waiter if it returned
    /// (the loan's receiver wakes this task when it does).
    fn payload_is_home(&mut self) -> bool {
        let Some(loan) = self.loan.as_mut() else {
            return true;
        };
        let mut cx = std::task::Context::from_waker(&self.nudger);
        let returned = match Pin::new(&mut loan.returned).poll(&mut cx) {
            Poll::Pending => return false,
            Poll::Ready(returned) => returned,
        };
        let loan = self.loan.take().expect("a loan is out");
        match returned {
            Ok(payload) => self.payload = Some(payload),
            Err(_) => log_error!(
                "rclrs_tokio_executor",
                "the fallback waiter did not return a Worker's payload; \
                 this Worker can no longer run callbacks"
            ),
        }
        let worked = self.payload.is_some();
        self.finish_loan(loan.flight, worked);
        worked
    }

    /// A loan item is done: its callbacks (if any) have run.
    fn finish_loan(&mut self, flight: Option<DetachedFlight>, worked: bool) {
        if worked {
            self.notify_listeners();
        }
        self.mailbox.finished_one();
        match flight {
            Some(flight) => self.shared.gate.finish_detached(flight, worked),
            None => self.shared.gate.progressed(),
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
        if let Some(loan) = self.loan.take() {
            self.mailbox.finished_one();
            if let Some(flight) = loan.flight {
                self.shared.gate.finish_detached(flight, false);
            }
        }
        self.mailbox.close_and_drain();
        for _ in self.deferred.drain(..) {
            self.counters.undeferred_one(|| false);
        }
        for entity in self.entities.drain(..) {
            entity.teardown();
        }
        self.fallback = None;
        // A Worker's own scheduler ends with it.
        if !Arc::ptr_eq(&self.timers, &self.shared.timers) {
            self.timers.stop();
        }
        if let Some(entry) = self.entry.upgrade() {
            self.shared.workers.remove(&entry);
        }
        self.shared.gate.progressed();
    }
}
