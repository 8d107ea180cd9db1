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
//! for the drain and for work the task cannot see into, and counts a timer of the
//! Worker's that is due as one (the turn delivers its tick between items).
//!
//! # Deferred wake-ups
//!
//! Work that a callback hands to other Workers can wait for the end of the turn
//! ([`at_turn_end`]): under a stream, one turn takes many messages, and waking another
//! thread once per turn instead of once per message is what interrupt mitigation does
//! for a network card. A turn with one message ends right after it, so a lone message is
//! not delayed. On a pool thread the work then goes out when the thread parks or runs
//! its next turn, whichever comes first (see [`hand_over`](crate::runtime::hand_over)).
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

use crate::runtime::{hand_over, shared::ExecutorShared, timer_scheduler::TimerScheduler};
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

/// What a turn's callbacks may ask about their Worker, made once per Worker.
pub(crate) struct TurnContext {
    /// The mailbox counts of the Worker.
    pub(crate) counters: Arc<WorkerCounters>,
    /// The executor whose spin gate its callbacks pass; `None` for an ungated Worker.
    pub(crate) gated_by: Option<Arc<ExecutorShared>>,
    /// The timers it drives, if it drives its own.
    pub(crate) timers: Option<Arc<TimerScheduler>>,
}

/// The turn running on this thread, if any.
struct Current {
    /// `None` outside a Worker turn.
    left: Cell<Option<usize>>,
    /// When the current turn ends, if other Workers wait for its thread.
    deadline: Cell<Option<Instant>>,
    context: RefCell<Option<Arc<TurnContext>>>,
    at_end: RefCell<Vec<Deferred>>,
}

thread_local! {
    static CURRENT: Current = const {
        Current {
            left: Cell::new(None),
            deadline: Cell::new(None),
            context: RefCell::new(None),
            at_end: RefCell::new(Vec::new()),
        }
    };
}

/// A Worker turn on this thread. Dropping it ends the turn: the budget goes away and
/// the deferred work runs.
pub(crate) struct Turn(());

impl Turn {
    /// Begin a turn of the Worker whose `context` it is; with `shared_thread` (other
    /// Workers on this thread) it also ends after [`TURN_TIME`].
    #[inline]
    pub(crate) fn begin(context: &Arc<TurnContext>, shared_thread: bool) -> Self {
        CURRENT.with(|current| {
            current.left.set(Some(TURN_BUDGET));
            current
                .deadline
                .set(shared_thread.then(|| Instant::now() + TURN_TIME));
            *current.context.borrow_mut() = Some(Arc::clone(context));
        });
        Turn(())
    }

    /// Whether the budget or the time is spent (or the budget was lost to another turn
    /// on this thread while this one ran a nested one).
    #[inline]
    pub(crate) fn exhausted(&self) -> bool {
        left() == 0 || overtime()
    }

    /// Whether a timer the Worker drives needs a look (see [`TimerScheduler::is_due`]).
    #[inline]
    pub(crate) fn timers_due(&self) -> bool {
        with_context(|context| {
            context
                .timers
                .as_ref()
                .is_some_and(|timers| timers.has_timers() && timers.is_due())
        })
        .unwrap_or(false)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let (context, deferred) = CURRENT.with(|current| {
            current.left.set(None);
            current.deadline.set(None);
            let context = current.context.borrow_mut().take();
            (context, hand_over::take_queued(&current.at_end))
        });
        drop(context);
        // Deferred work may defer more (it runs outside the turn, so that runs at once).
        for work in deferred.into_iter().flatten() {
            hand_over::later(work);
        }
    }
}

#[inline]
fn with_context<R>(f: impl FnOnce(&TurnContext) -> R) -> Option<R> {
    CURRENT.with(|current| current.context.borrow().as_deref().map(f))
}

/// What is left of the current turn's budget (0 outside a turn).
#[inline]
pub(crate) fn left() -> usize {
    CURRENT.with(|current| current.left.get().unwrap_or(0))
}

/// Spend `callbacks` of the current turn's budget. Returns false once the budget or
/// the turn's time is spent (the caller should stop and let its Worker yield); always
/// true outside a turn.
#[inline]
pub(crate) fn spend(callbacks: usize) -> bool {
    CURRENT.with(|current| match current.left.get() {
        Some(n) => {
            let n = n.saturating_sub(callbacks);
            current.left.set(Some(n));
            n > 0 && !past(current.deadline.get())
        }
        None => true,
    })
}

/// Whether the current turn's spin gate no longer admits callbacks (see "The spin's
/// end"); false outside a turn of a gated Worker.
pub(crate) fn spin_ending() -> bool {
    with_context(|context| {
        context
            .gated_by
            .as_ref()
            .is_some_and(|shared| !shared.gate.admits())
    })
    .unwrap_or(false)
}

/// How many items wait for the current turn's Worker besides the one it runs (see
/// "Sharing the Worker"): those in its mailbox, and one for its timers if one of those
/// it drives is due; 0 outside a turn.
pub(crate) fn items_waiting() -> u64 {
    with_context(|context| {
        let timer_due = context
            .timers
            .as_ref()
            .is_some_and(|timers| timers.has_timers() && timers.is_due());
        context.counters.unfinished().saturating_sub(1) + u64::from(timer_due)
    })
    .unwrap_or(0)
}

/// Whether the current turn has a deadline and it has passed (reads the clock only if it
/// has one).
#[inline]
pub(crate) fn overtime() -> bool {
    past(CURRENT.with(|current| current.deadline.get()))
}

#[inline]
fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|deadline| Instant::now() >= deadline)
}

/// Run `work` when the current Worker turn ends (on a pool thread, when the thread then
/// parks or runs its next turn: `hand_over`), or now outside a turn. `work` must not run
/// user callbacks: it is meant for handing work to other Workers.
pub(crate) fn at_turn_end(work: impl FnOnce() + 'static) {
    let work = CURRENT.with(|current| {
        if current.left.get().is_none() {
            return Some(work);
        }
        current.at_end.borrow_mut().push(Box::new(work));
        None
    });
    if let Some(work) = work {
        work();
    }
}
