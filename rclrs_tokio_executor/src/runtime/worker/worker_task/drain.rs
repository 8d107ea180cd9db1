//! Draining an entity: executing it once per arrival its push callback counted.
//!
//! A drain runs these steps ([`WorkerTask::drain`]):
//! 1. **admit**: a guard condition is run as such; in a single pass, an entity that ran
//!    in this pass already is deferred to the next one;
//! 2. **plan** ([`Plan`]): claim every part's arrivals at once (see `entity.rs`), and
//!    decide the budget ([`ENTITY_BUDGET`], what is left of the thread's turn, or one
//!    callback in a single pass) and whether to pause the subscription's notifications
//!    and take until rmw's queue is empty ([`PAUSE_AT`]);
//! 3. **run the parts** in order ([`run_part`]), each with its own `ReadyKind`, until the
//!    budget is spent; a part ends with a named [`PartEnd`];
//! 4. **settle** ([`Settle`]): resume paused notifications, ask for a sweep if a drain
//!    that had to empty rmw's queue stopped early, give back (or, in a single pass,
//!    defer) the arrivals that did not run, and report a tick to the timers.
//!
//! A part stops at the first take that finds rmw's queue empty, since the count is
//! arrivals and rmw may have dropped some (QoS depth), except where a failed take only
//! skipped a sample (services and clients, "Coalescing" in `entity.rs`), which spends
//! its arrival and goes on. It also stops once the spin gate stops admitting callbacks
//! (the spin's end, or a halt or a resolved promise from inside a callback), once the
//! turn's time is up where other Workers share the thread, and after [`FAIR_SHARE`]
//! callbacks once another item waits.
//!
//! A drain that claims [`PAUSE_AT`] or more arrivals of a subscription pauses its
//! notifications and takes until rmw's queue is empty or the budget is spent, then
//! resumes them ("Pausing" in `entity.rs`). One that claims [`NAP_AT`] or more makes
//! the Worker nap before it parks (see `linger`).
//!
//! # Sharing the Worker
//!
//! A drain runs a part's callbacks back to back only while nothing else waits: once a
//! part has run [`FAIR_SHARE`] callbacks, it stops as soon as the mailbox holds another
//! item, the entity's other parts still get their share, and what the drain claimed and
//! did not run goes back behind that item. So an entity notified during a burst of
//! another waits for a few of its callbacks, not for the whole burst. That is what keeps
//! rmw's queue of the waiting entity within its depth: a burst of 20 callbacks that each
//! send a request to a service of the same Worker (whose requests are kept 10 deep by
//! default) would otherwise have rmw drop half of them before the service's first take,
//! and their clients wait forever. The share is per part because an action client is
//! one entity of five (goal, cancel and result responses, feedback, status): a burst of
//! goals must not spend it all on the goal responses while the results overflow. A
//! fan-out drain shares the Worker the same way (`fanout/worker_group.rs`).
//!
//! Before every execution the drain checks that the user still holds the entity; once
//! its last handle is gone (even from inside one of its own callbacks) nothing more of
//! it runs, and the Worker sweeps it.
//!
//! A part run by ticks (a timer, an action server's goal expiry) executes once per
//! drain however many ticks coalesced: rclrs checks that the timer is still due, and
//! the timer scheduler, told that the tick ran, looks at the timer again.
//!
//! The steps see the entity through [`Executions`], so that [`run_part`], where the
//! rules above meet, is tested against a scripted entity, without rmw.

use super::{activity, stage_trace::ItemTrace, WorkerTask};
use crate::ffi;
use crate::runtime::entity::{Claims, Entity};
use crate::runtime::turn::{self, FAIR_SHARE};
use crate::runtime::{async_tasks::InlineScope, shared::ExecutorShared};
use crate::stats::worker_counters::WorkerCounters;
use rclrs::{log_error, ReadyKind, Waitable, WeakActivityListener};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

/// How many times a Worker executes one entity before re-queueing it behind the others.
const ENTITY_BUDGET: usize = 256;

/// How many claimed arrivals make a drain pause a subscription's notifications (see
/// "Pausing" in `entity.rs`). Sixteen: pausing and resuming cost two rcl calls and the
/// drain then ends with two takes that find nothing (about 1,400 instructions each),
/// which only a backlog of many messages repays in the notifications it saves; a
/// subscription the Worker keeps up with (one arrival per drain, as at 1 or 10 kHz, a
/// few when it is woken late) is never paused, and a stream that outruns the Worker
/// leaves hundreds at every drain.
const PAUSE_AT: usize = 16;

/// How many claimed arrivals of a subscription make the Worker nap before it parks (see
/// `linger`). Four: at 10 kHz a Worker woken late sometimes finds two, and a nap there
/// costs more than the wake-up it saves; a stream that outruns the Worker leaves
/// several at every drain.
const NAP_AT: usize = 4;

/// What one execution of a part found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Taken {
    /// A callback ran (or failed, or panicked: it was contained).
    Ran,
    /// The take found nothing: rmw's queue is empty, or held only a sample for another
    /// entity.
    Nothing,
}

/// How a part's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PartEnd {
    /// It ran as many times as it was to.
    Done,
    /// rmw's queue was empty: nothing is left of the part.
    Emptied,
    /// Another item waits for the Worker: the rest of the part goes behind it.
    Shared,
    /// The spin is ending, or other Workers wait for the thread: the rest waits, and no
    /// other part runs.
    Stopped,
    /// The entity's last handle is gone: nothing more of it runs.
    Dropped,
}

/// A part's run: the arrivals it spent, those of them that only skipped a sample, and
/// how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PartRun {
    pub(super) spent: usize,
    pub(super) skipped: usize,
    pub(super) end: PartEnd,
}

/// What a drain needs of the entity and the Worker around each execution.
pub(super) trait Executions {
    /// Whether the user still holds the entity.
    fn in_use(&mut self) -> bool;
    /// Execute `ready` once.
    fn execute(&mut self, ready: ReadyKind) -> Taken;
    /// Turn the paused notifications back on.
    fn resume(&mut self);
    /// A callback ran: tell the activity listeners.
    fn ran(&mut self);
    /// Whether the spin gate still admits callbacks.
    fn admits(&self) -> bool;
    /// Whether another item waits for the Worker.
    fn others_wait(&self) -> bool;
    /// Whether the turn's time is up.
    fn overtime(&self) -> bool;
}

/// Run `ready` up to `runs` times (see the module's rules). `can_skip`: a failed take
/// may have only skipped a sample; `paused`: the notifications are paused, so the first
/// take that finds nothing resumes them and the part goes on until the next one.
pub(super) fn run_part(
    exec: &mut impl Executions,
    ready: ReadyKind,
    runs: usize,
    can_skip: bool,
    paused: &mut bool,
) -> PartRun {
    let mut run = PartRun {
        spent: 0,
        skipped: 0,
        end: PartEnd::Done,
    };
    while run.spent < runs {
        if !exec.in_use() {
            run.end = PartEnd::Dropped;
            return run;
        }
        if exec.execute(ready) == Taken::Nothing {
            if can_skip {
                // rmw dropped a sample not for this entity: that arrival is spent.
                run.spent += 1;
                run.skipped += 1;
                continue;
            }
            if *paused {
                // rmw's queue is empty: notifications back on, then one more round
                // for what arrived while rmw turned them back on.
                *paused = false;
                exec.resume();
                continue;
            }
            run.end = PartEnd::Emptied;
            return run;
        }
        run.spent += 1;
        exec.ran();
        if !exec.admits() {
            // The spin is ending (its deadline, or a halt or a resolved promise from
            // this very callback): the rest waits for the next one.
            run.end = PartEnd::Stopped;
            return run;
        }
        if run.spent >= FAIR_SHARE && exec.others_wait() {
            run.end = PartEnd::Shared;
            return run;
        }
        if exec.overtime() {
            run.end = PartEnd::Stopped;
            return run;
        }
    }
    run
}

/// Step 2: what a drain claimed and how it runs.
struct Plan {
    left: Claims,
    budget: usize,
    /// Notifications are paused for a backlog.
    paused: bool,
    /// Take until rmw's queue is empty, whatever the count says (paused, or a sweep).
    to_empty: bool,
}

/// Step 4: what the parts' runs leave for the end of the drain.
#[derive(Default)]
struct Settle {
    /// Callbacks that ran (takes that only skipped a sample not counted).
    ran: usize,
    ticked: bool,
    dropped: bool,
    /// A part stopped before rmw's queue was empty.
    left_full: bool,
}

/// The real entity, for [`run_part`].
struct Execution<'a> {
    entity: &'a Entity,
    waitable: &'a mut Waitable,
    payload: &'a mut dyn Any,
    shared: &'a Arc<ExecutorShared>,
    counters: &'a WorkerCounters,
    listeners: &'a mut Vec<WeakActivityListener>,
    trace: Option<ItemTrace>,
    gated: bool,
}

impl Executions for Execution<'_> {
    fn in_use(&mut self) -> bool {
        self.waitable.is_in_use()
    }

    fn execute(&mut self, ready: ReadyKind) -> Taken {
        rclrs::reset_take_failed();
        let started = self.trace.as_ref().map(ItemTrace::executing);
        let scope = InlineScope::begin();
        let result = catch_unwind(AssertUnwindSafe(|| {
            ffi::execute(self.waitable, ready, self.payload)
        }));
        if let (Some(trace), Some(started)) = (self.trace.as_mut(), started) {
            trace.executed(self.counters, started);
        }
        let panics = scope.finish(self.shared, Some(self.entity));
        if panics > 0 {
            self.counters.panicked(panics);
        }
        match result {
            Ok(Ok(())) => {}
            Ok(Err(err)) => log_error!(
                "rclrs_tokio_executor",
                "error while running the callback of {}: {err}",
                self.entity.name
            ),
            Err(panic) => {
                self.counters.panicked(1);
                self.entity.contain_panic(&self.shared.stats, &*panic);
            }
        }
        if rclrs::take_failed_since_reset() {
            self.counters.took_nothing();
            Taken::Nothing
        } else {
            Taken::Ran
        }
    }

    fn resume(&mut self) {
        resume(self.entity);
    }

    fn ran(&mut self) {
        if !self.listeners.is_empty() {
            activity::notify(self.listeners, self.payload);
        }
    }

    fn admits(&self) -> bool {
        !self.gated || self.shared.gate.admits()
    }

    fn others_wait(&self) -> bool {
        // The entity itself may be queued again by a notification since the drain began.
        turn::items_waiting() > u64::from(self.entity.is_queued())
    }

    fn overtime(&self) -> bool {
        turn::overtime()
    }
}

impl WorkerTask {
    /// Execute an entity once per claimed arrival (once in a single pass), stopping when
    /// rmw has nothing left. True if a callback ran, or a guard condition's triggers were
    /// new work (see [`Entity::trigger_is_new_work`]). `picked_up`: when the Worker
    /// picked the item up (for stage tracing).
    pub(super) fn drain(&mut self, entity: &Arc<Entity>, picked_up: Instant) -> bool {
        // 1. Admit.
        if entity.rules.trigger {
            let new_work = entity.trigger_is_new_work();
            self.run_guard_condition(entity);
            return new_work;
        }
        let single_pass = self.gated && self.shared.gate.is_single_pass();
        if single_pass && !entity.first_run_in(self.shared.gate.pass()) {
            entity.defer_item();
            self.defer(entity);
            return false;
        }
        // 2. Plan.
        let mut plan = self.plan(entity, single_pass);
        // 3. Run the parts.
        let mut settle = Settle::default();
        {
            let mut guard = entity.waitable.lock().unwrap();
            let (Some(waitable), Some(payload)) = (guard.as_mut(), self.payload.as_deref_mut())
            else {
                return false;
            };
            let mut exec = Execution {
                entity,
                waitable,
                payload,
                shared: &self.shared,
                counters: &self.counters,
                listeners: &mut self.listeners,
                trace: self
                    .counters
                    .tracing()
                    .then(|| ItemTrace::begin(entity, picked_up)),
                gated: self.gated,
            };
            for (part, ready) in entity.parts().enumerate() {
                if plan.left[part] == 0 || plan.budget == 0 {
                    continue;
                }
                let is_tick = entity.is_tick(part);
                let runs = if is_tick {
                    1
                } else if plan.to_empty {
                    plan.budget
                } else {
                    plan.left[part].min(plan.budget)
                };
                let can_skip = entity.take_can_skip(part);
                let run = run_part(&mut exec, ready, runs, can_skip, &mut plan.paused);
                settle.ran += run.spent - run.skipped;
                plan.budget = match run.end {
                    PartEnd::Stopped => 0,
                    _ => plan.budget.saturating_sub(run.spent.max(1)),
                };
                let emptied = run.end == PartEnd::Emptied;
                settle.left_full |= !emptied;
                plan.left[part] = if emptied || is_tick {
                    0
                } else {
                    plan.left[part].saturating_sub(run.spent)
                };
                settle.ticked |= is_tick;
                if run.end == PartEnd::Dropped {
                    settle.dropped = true;
                    break;
                }
            }
        }
        // 4. Settle.
        self.settle(entity, plan, settle, single_pass)
    }

    /// Step 2: claim the entity's arrivals, and decide the budget and pausing.
    fn plan(&mut self, entity: &Arc<Entity>, single_pass: bool) -> Plan {
        let left = entity.claim();
        let budget = if single_pass {
            1
        } else {
            ENTITY_BUDGET.min(turn::left().max(1))
        };
        let stream = entity.rules.stream;
        let sweep = stream && entity.take_sweep();
        // A stream's claimed arrivals, outside a single pass: its backlog.
        let backlog = if !single_pass && stream { left[0] } else { 0 };
        if backlog >= NAP_AT {
            self.linger.saw_backlog();
        }
        let paused = backlog >= PAUSE_AT && entity.set_paused(true);
        Plan {
            left,
            budget,
            paused,
            to_empty: paused || sweep,
        }
    }

    /// Step 4: what follows the parts' runs. Returns whether the drain was work.
    fn settle(
        &mut self,
        entity: &Arc<Entity>,
        plan: Plan,
        settle: Settle,
        single_pass: bool,
    ) -> bool {
        if plan.paused && !settle.dropped {
            resume(entity);
        }
        if plan.to_empty && settle.left_full && !settle.dropped {
            // Stopped before rmw's queue was empty, with arrivals nobody counted.
            entity.request_sweep(&self.mailbox_tx);
        }
        if settle.ran > 0 {
            self.counters.ran_callbacks(settle.ran as u64);
        }
        turn::spend(settle.ran.max(1));
        if settle.dropped {
            // Its remaining arrivals go with it; the sweep tears the rcl entity down.
            self.sweep();
            return settle.ran > 0;
        }
        if plan.left.iter().any(|&n| n > 0) {
            if single_pass {
                entity.defer_claims(&plan.left);
                self.defer(entity);
            } else {
                entity.unclaim(&plan.left, &self.mailbox_tx);
            }
        }
        if settle.ticked {
            self.timers.ran_tick(entity);
        }
        settle.ran > 0 || settle.ticked
    }

    /// rclrs triggers a Worker's guard condition for new entities, payload tasks and
    /// dropped entities; the first two reach us directly, so run its (empty) callback
    /// and sweep. Like a ready guard condition in the basic executor's wait set, it
    /// counts as a unit of work (it ends a `spin_once`).
    fn run_guard_condition(&mut self, entity: &Arc<Entity>) {
        entity.claim();
        if let Some(waitable) = entity.waitable.lock().unwrap().as_mut() {
            if let Err(err) =
                ffi::execute_guard_condition(waitable.primitive_mut(), ReadyKind::Basic)
            {
                log_error!("rclrs_tokio_executor", "guard condition failed: {err}");
            }
        }
        self.sweep();
        self.notify_listeners();
    }
}

/// Resume a paused subscription's notifications, which reports through the push
/// callback what arrived and was not taken.
fn resume(entity: &Entity) {
    if !entity.set_paused(false) {
        log_error!(
            "rclrs_tokio_executor",
            "could not resume the notifications of {}; it is executed only when \
             something else queues it",
            entity.name
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// An entity whose executions find what the script says, and a Worker around it.
    #[derive(Default)]
    struct Script {
        /// What each execution finds, in order; `Nothing` once it runs out.
        takes: VecDeque<Taken>,
        /// Dropped by the user after this many executions.
        dropped_after: Option<usize>,
        /// The gate stops admitting after this many callbacks.
        halted_after: Option<usize>,
        others_wait: bool,
        overtime_after: Option<usize>,
        executed: usize,
        ran: usize,
        resumed: usize,
    }

    impl Script {
        fn takes(takes: &[Taken]) -> Self {
            Self {
                takes: takes.iter().copied().collect(),
                ..Self::default()
            }
        }
    }

    impl Executions for Script {
        fn in_use(&mut self) -> bool {
            self.dropped_after.is_none_or(|n| self.executed < n)
        }
        fn execute(&mut self, _ready: ReadyKind) -> Taken {
            self.executed += 1;
            self.takes.pop_front().unwrap_or(Taken::Nothing)
        }
        fn resume(&mut self) {
            self.resumed += 1;
        }
        fn ran(&mut self) {
            self.ran += 1;
        }
        fn admits(&self) -> bool {
            self.halted_after.is_none_or(|n| self.ran < n)
        }
        fn others_wait(&self) -> bool {
            self.others_wait
        }
        fn overtime(&self) -> bool {
            self.overtime_after.is_some_and(|n| self.ran >= n)
        }
    }

    use Taken::{Nothing, Ran};

    fn run(script: &mut Script, runs: usize, can_skip: bool, paused: bool) -> (PartRun, bool) {
        let mut paused = paused;
        let run = run_part(script, ReadyKind::Basic, runs, can_skip, &mut paused);
        (run, paused)
    }

    fn part(spent: usize, skipped: usize, end: PartEnd) -> PartRun {
        PartRun {
            spent,
            skipped,
            end,
        }
    }

    #[test]
    fn a_part_runs_once_per_claimed_arrival() {
        let mut script = Script::takes(&[Ran, Ran, Ran]);
        assert_eq!(
            run(&mut script, 3, false, false).0,
            part(3, 0, PartEnd::Done)
        );
        assert_eq!((script.executed, script.ran), (3, 3));
    }

    #[test]
    fn a_take_that_finds_nothing_ends_the_part() {
        // Five counted, two still in rmw's queue (it dropped three).
        let mut script = Script::takes(&[Ran, Ran]);
        assert_eq!(
            run(&mut script, 5, false, false).0,
            part(2, 0, PartEnd::Emptied)
        );
        assert_eq!(script.executed, 3);
    }

    #[test]
    fn a_skipped_sample_spends_its_arrival_and_the_part_goes_on() {
        // A client's take dropped a response for another client, then found its own.
        let mut script = Script::takes(&[Nothing, Ran, Nothing]);
        assert_eq!(
            run(&mut script, 3, true, false).0,
            part(3, 2, PartEnd::Done)
        );
        assert_eq!(script.ran, 1);
    }

    #[test]
    fn paused_the_first_empty_take_resumes_and_the_part_takes_until_empty_again() {
        let mut script = Script::takes(&[Ran, Ran, Nothing, Ran]);
        let (run, paused) = run(&mut script, 256, false, true);
        assert_eq!(run, part(3, 0, PartEnd::Emptied));
        assert!(!paused);
        assert_eq!((script.resumed, script.executed), (1, 5));
    }

    #[test]
    fn after_its_fair_share_a_part_lets_a_waiting_item_go_first() {
        let mut script = Script::takes(&[Ran; 20]);
        script.others_wait = true;
        assert_eq!(
            run(&mut script, 20, false, false).0,
            part(FAIR_SHARE, 0, PartEnd::Shared)
        );
        // Nothing waiting: it runs to its end.
        let mut script = Script::takes(&[Ran; 20]);
        assert_eq!(
            run(&mut script, 20, false, false).0,
            part(20, 0, PartEnd::Done)
        );
    }

    #[test]
    fn a_callback_that_ends_the_spin_is_the_last_to_run() {
        let mut script = Script::takes(&[Ran; 5]);
        script.halted_after = Some(2);
        assert_eq!(
            run(&mut script, 5, false, false).0,
            part(2, 0, PartEnd::Stopped)
        );
        assert_eq!(script.executed, 2);
    }

    #[test]
    fn other_workers_waiting_for_the_thread_stop_the_part() {
        let mut script = Script::takes(&[Ran; 5]);
        script.overtime_after = Some(1);
        assert_eq!(
            run(&mut script, 5, false, false).0,
            part(1, 0, PartEnd::Stopped)
        );
    }

    #[test]
    fn nothing_more_of_a_dropped_entity_runs() {
        let mut script = Script::takes(&[Ran; 5]);
        script.dropped_after = Some(2);
        assert_eq!(
            run(&mut script, 5, false, false).0,
            part(2, 0, PartEnd::Dropped)
        );
        assert_eq!(script.executed, 2);
    }
}
