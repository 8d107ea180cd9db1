//! One turn of a Worker task (`run_batch`): how many callbacks it may still run before it
//! yields its thread, and the wake-ups it defers to the turn's end.
//!
//! # Budget
//!
//! Several Worker tasks can share a thread, and a Worker under a stream always has work,
//! so without a bound one Worker would hold its thread for as long as its mailbox stays
//! full. The task starts each turn with [`TURN_BUDGET`]; every callback it runs spends
//! one, and work the task cannot see into (a payload task that runs many callbacks, such
//! as a fan-out drain) spends its own share through [`spend`]. Once the budget is spent,
//! the task finishes the item at hand and yields.
//!
//! A count alone does not bound time: 256 callbacks of 20 ms hold a thread for five
//! seconds. So a turn on a thread that other Worker tasks share also ends after
//! [`TURN_TIME`], checked after each callback ([`overtime`]); a callback that runs
//! longer still runs to its end, since nothing can preempt it. A Worker alone on its
//! thread has no deadline and reads no clock for it.
//!
//! # Sharing the Worker
//!
//! Within one Worker, an item with many callbacks to run (an entity's backlog, a
//! fan-out drain) runs [`FAIR_SHARE`] of them and then lets the Worker's other waiting
//! items go first (`drain.rs`, "Sharing the Worker"); [`items_waiting`] counts them,
//! for the drain and for work the task cannot see into.
//!
//! # Deferred wake-ups
//!
//! Work that a callback hands to other Workers can wait for the end of the turn
//! ([`at_turn_end`]): under a stream, one turn takes many messages, and waking another
//! thread once per turn instead of once per message is what interrupt mitigation does
//! for a network card. A turn with one message ends right after it, so a lone message is
//! not delayed. On a pool thread the work then goes out when the thread parks or runs
//! its next task, whichever comes first (see [`hand_over`](super::hand_over)).
//!
//! # The spin's end
//!
//! A turn of a gated Worker also knows its executor's spin gate, so work the task cannot
//! see into (a fan-out drain) can stop starting callbacks once the gate no longer
//! admits them ([`spin_ending`]): after the spin's deadline, a halt, or a resolved
//! promise, as the Worker's own drain stops.
//!
//! Outside a Worker turn (the basic executor, a user's thread) there is no budget:
//! [`spend`] always says to go on, [`spin_ending`] says no, and [`at_turn_end`] runs its
//! work at once.
//!
//! The state is per thread. A turn that awaits (a payload lent to the fallback waiter)
//! can find it taken over by another turn of the same thread when it resumes; it then
//! sees its budget spent and yields, and the other turn's end runs its deferred work.

use crate::runtime::{hand_over, shared::ExecutorShared, timer_scheduler};
use crate::stats::worker_counters::WorkerCounters;
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Callbacks one Worker turn may run.
pub(crate) const TURN_BUDGET: usize = 256;
/// How long one Worker turn may run when other Worker tasks share its thread.
pub(crate) const TURN_TIME: Duration = Duration::from_millis(2);
/// How many callbacks one item of a Worker (each part of an entity, a fan-out drain)
/// runs before it lets the Worker's other waiting items go first. Eight: below the ten
/// requests a service keeps by default, and in paired runs of 8 subscriptions over 2
/// Workers (each drain then has three others waiting) no slower than no limit, where
/// one, the basic executor's share, cost an eighth of the rate.
pub(crate) const FAIR_SHARE: usize = 8;

type Deferred = Box<dyn FnOnce()>;

thread_local! {
    /// `None` outside a Worker turn.
    static LEFT: Cell<Option<usize>> = const { Cell::new(None) };
    /// When the current turn ends, if other Worker tasks wait for its thread.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static AT_END: RefCell<Vec<Deferred>> = const { RefCell::new(Vec::new()) };
    /// The executor whose spin gate the current turn's callbacks pass; `None` outside a
    /// turn of a gated Worker.
    static GATED_BY: RefCell<Option<Arc<ExecutorShared>>> = const { RefCell::new(None) };
    /// The mailbox counts of the Worker whose turn it is; `None` outside a turn.
    static WORKER: RefCell<Option<Arc<WorkerCounters>>> = const { RefCell::new(None) };
}

/// A Worker turn on this thread. Dropping it ends the turn: the budget goes away and
/// the deferred work runs.
pub(crate) struct Turn(());

impl Turn {
    /// Begin a turn of the Worker whose mailbox `worker` counts; with `shared_thread`
    /// (other Worker tasks on this thread) it also ends after [`TURN_TIME`]. `gated_by`:
    /// the executor whose spin gate the turn's callbacks pass, for a gated Worker.
    pub(crate) fn begin(
        worker: Arc<WorkerCounters>,
        shared_thread: bool,
        gated_by: Option<Arc<ExecutorShared>>,
    ) -> Self {
        // Work an earlier turn on this thread handed over goes out first.
        hand_over::flush();
        LEFT.with(|left| left.set(Some(TURN_BUDGET)));
        GATED_BY.with(|gate| *gate.borrow_mut() = gated_by);
        WORKER.with(|counters| *counters.borrow_mut() = Some(worker));
        DEADLINE.with(|deadline| deadline.set(shared_thread.then(|| Instant::now() + TURN_TIME)));
        Turn(())
    }

    /// Whether the budget or the time is spent (or the budget was lost to another turn
    /// on this thread while this one awaited).
    pub(crate) fn exhausted(&self) -> bool {
        left() == 0 || overtime()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        LEFT.with(|left| left.set(None));
        DEADLINE.with(|deadline| deadline.set(None));
        GATED_BY.with(|gate| gate.borrow_mut().take());
        WORKER.with(|counters| counters.borrow_mut().take());
        // Deferred work may defer more (it runs outside the turn, so that runs at once).
        for work in AT_END.with(hand_over::take_queued).into_iter().flatten() {
            hand_over::later(work);
        }
    }
}

/// What is left of the current turn's budget (0 outside a turn).
pub(crate) fn left() -> usize {
    LEFT.with(|left| left.get().unwrap_or(0))
}

/// Spend `callbacks` of the current turn's budget. Returns false once the budget or
/// the turn's time is spent (the caller should stop and let its Worker yield); always
/// true outside a turn.
pub(crate) fn spend(callbacks: usize) -> bool {
    LEFT.with(|left| match left.get() {
        Some(n) => {
            let n = n.saturating_sub(callbacks);
            left.set(Some(n));
            n > 0 && !overtime()
        }
        None => true,
    })
}

/// Whether the current turn's spin gate no longer admits callbacks (see "The spin's
/// end"); false outside a turn of a gated Worker.
pub(crate) fn spin_ending() -> bool {
    GATED_BY.with(|gate| {
        gate.borrow()
            .as_ref()
            .is_some_and(|shared| !shared.gate.admits())
    })
}

/// How many items wait in the mailbox of the current turn's Worker besides the one it
/// runs (see "Sharing the Worker"), after delivering the ticks of its timers that fell
/// due if this thread drives them (a dedicated Worker's, see `timer_scheduler`); 0
/// outside a turn.
pub(crate) fn items_waiting() -> u64 {
    // On a thread that drives its Worker's timers, a timer due by now waits too.
    timer_scheduler::deliver_adopted_due();
    WORKER.with(|counters| {
        counters
            .borrow()
            .as_ref()
            .map_or(0, |counters| counters.unfinished().saturating_sub(1))
    })
}

/// Whether the current turn has a deadline and it has passed (reads the clock only if it
/// has one).
pub(crate) fn overtime() -> bool {
    DEADLINE
        .with(Cell::get)
        .is_some_and(|deadline| Instant::now() >= deadline)
}

/// Run `work` when the current Worker turn ends (on a pool thread, when the thread then
/// parks or runs its next task: `hand_over`), or now outside a turn. `work` must not run
/// user callbacks: it is meant for handing work to other Workers.
pub(crate) fn at_turn_end(work: impl FnOnce() + 'static) {
    if LEFT.with(Cell::get).is_none() {
        work();
    } else {
        AT_END.with(|at_end| at_end.borrow_mut().push(Box::new(work)));
    }
}
