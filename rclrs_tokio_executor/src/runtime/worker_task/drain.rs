//! Draining an entity: executing it once per arrival its push callback counted.
//!
//! The drain claims every part's arrivals at once (see `entity.rs`), then executes the
//! parts in order, each with its own `ReadyKind`, until the entity's budget is spent:
//! [`ENTITY_BUDGET`] callbacks, [`FAIR_SHARE`] per part once other items wait, or what
//! is left of the thread's turn (in callbacks, and in time where other Workers share
//! the thread), or one callback in a single pass; or until the spin gate stops
//! admitting callbacks (the spin's end, or a halt or a resolved promise from inside a
//! callback). A part stops at the first take that finds rmw's queue empty, since the
//! count is arrivals and rmw may have dropped some (QoS depth), except where a failed
//! take only skipped a sample (services and clients, "Coalescing" in `entity.rs`),
//! which spends its arrival and goes on; what the budget did not
//! reach goes back to the entity, queued again or, in a single pass, deferred to the
//! next one.
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

use super::{activity, stage_trace::ItemTrace, WorkerTask};
use crate::ffi;
use crate::runtime::turn::{self, FAIR_SHARE};
use crate::runtime::{async_tasks::InlineScope, entity::Entity};
use rclrs::{log_error, RclPrimitiveKind, ReadyKind};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

/// How many times a Worker executes one entity before re-queueing it behind the others.
const ENTITY_BUDGET: usize = 256;

/// How many claimed arrivals make a drain pause a subscription's notifications (see
/// "Pausing" in `entity.rs`). Two: a subscription the Worker keeps up with (one
/// arrival per drain, as at 1 or 10 kHz) is never paused, since pausing and resuming
/// cost more than the one notification they save.
const PAUSE_AT: usize = 2;

/// How many claimed arrivals of a subscription make the Worker nap before it parks (see
/// `linger`). Four: at 10 kHz a Worker woken late sometimes finds two, and a nap there
/// costs more than the wake-up it saves; a stream that outruns the Worker leaves
/// several at every drain.
const NAP_AT: usize = 4;

impl WorkerTask {
    /// Execute an entity once per claimed arrival (once in a single pass), stopping when
    /// rmw has nothing left. True if a callback ran, or a guard condition's triggers were
    /// new work (see [`Entity::trigger_is_new_work`]). `picked_up`: when the Worker
    /// picked the item up (for stage tracing).
    pub(super) fn drain(&mut self, entity: &Arc<Entity>, picked_up: Instant) -> bool {
        if entity.kind == RclPrimitiveKind::GuardCondition {
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
        let mut left = entity.claim();
        let mut guard = entity.waitable.lock().unwrap();
        let Some(waitable) = guard.as_mut() else {
            return false;
        };
        let Some(payload) = self.payload.as_deref_mut() else {
            return false;
        };
        let mut budget = if single_pass {
            1
        } else {
            ENTITY_BUDGET.min(turn::left().max(1))
        };
        let mut ran = 0;
        let mut ticked = false;
        let mut dropped = false;
        let mut out_of_time = false;
        // Whether a part stopped before rmw's queue was empty.
        let mut left_full = false;
        let mut trace = self
            .counters
            .tracing()
            .then(|| ItemTrace::begin(entity, picked_up));
        let subscription = entity.kind == RclPrimitiveKind::Subscription;
        let sweep = subscription && entity.take_sweep();
        // A subscription's claimed arrivals, outside a single pass: its backlog.
        let backlog = if !single_pass && subscription {
            left[0]
        } else {
            0
        };
        if backlog >= NAP_AT {
            self.linger.saw_backlog();
        }
        let mut paused = backlog >= PAUSE_AT && entity.set_paused(true);
        let to_empty = paused || sweep;
        for (part, &ready) in entity.parts().iter().enumerate() {
            if left[part] == 0 || budget == 0 {
                continue;
            }
            let is_tick = entity.is_tick(part);
            let can_skip = entity.take_can_skip(part);
            let runs = if is_tick {
                1
            } else if to_empty {
                budget
            } else {
                left[part].min(budget)
            };
            // Arrivals spent, and those of them that only skipped a sample.
            let mut part_ran = 0;
            let mut part_skipped = 0;
            let mut emptied = false;
            while part_ran < runs {
                if !waitable.is_in_use() {
                    // Its last handle is gone (dropped while it was queued, or from
                    // inside one of its own callbacks): nothing more of it runs.
                    dropped = true;
                    break;
                }
                rclrs::reset_take_failed();
                let started = trace.as_ref().map(ItemTrace::executing);
                let scope = InlineScope::begin();
                let result =
                    catch_unwind(AssertUnwindSafe(|| ffi::execute(waitable, ready, payload)));
                if let (Some(trace), Some(started)) = (trace.as_mut(), started) {
                    trace.executed(&self.counters, started);
                }
                self.counters
                    .panicked(scope.finish(&self.shared, Some(entity)));
                match result {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => log_error!(
                        "rclrs_tokio_executor",
                        "error while running the callback of {}: {err}",
                        entity.name
                    ),
                    Err(panic) => {
                        self.counters.panicked(1);
                        entity.contain_panic(&self.shared.stats, &*panic);
                    }
                }
                let took_nothing = rclrs::take_failed_since_reset();
                if took_nothing && can_skip {
                    // rmw dropped a sample not for this entity: that arrival is spent.
                    self.counters.took_nothing();
                    part_ran += 1;
                    part_skipped += 1;
                    continue;
                }
                if took_nothing {
                    self.counters.took_nothing();
                    if paused {
                        // rmw's queue is empty: notifications back on, then one more
                        // round for what arrived while rmw turned them back on.
                        paused = false;
                        resume(entity);
                        continue;
                    }
                    emptied = true;
                    break;
                }
                part_ran += 1;
                // A callback ran (a take that found nothing is no activity).
                if !self.listeners.is_empty() {
                    activity::notify(&mut self.listeners, payload);
                }
                if self.gated && !self.shared.gate.admits() {
                    // The spin is ending (its deadline, or a halt or a resolved promise
                    // from this very callback): the rest waits for the next one,
                    // claimed arrivals queued again and, past them, a sweep for what
                    // nobody counted.
                    out_of_time = true;
                    break;
                }
                if part_ran >= FAIR_SHARE && others_wait(entity) {
                    // Another item waits: it goes before the rest of this part, whose
                    // claims go back behind it; the entity's other parts still get
                    // their share.
                    break;
                }
                if turn::overtime() {
                    // Other Workers wait for this thread: the rest goes back to the
                    // mailbox, behind them.
                    out_of_time = true;
                    break;
                }
            }
            ran += part_ran - part_skipped;
            budget = budget.saturating_sub(part_ran.max(1));
            if out_of_time {
                budget = 0;
            }
            // Nothing is left of a part rmw emptied, or of a tick that ran.
            left_full |= !emptied;
            if emptied || is_tick {
                left[part] = 0;
            } else {
                left[part] = left[part].saturating_sub(part_ran);
            }
            ticked |= is_tick;
            if dropped {
                break;
            }
        }
        drop(guard);
        if paused && !dropped {
            resume(entity);
        }
        if to_empty && left_full && !dropped {
            // Stopped before rmw's queue was empty, with arrivals nobody counted.
            entity.request_sweep(&self.mailbox_tx);
        }
        self.counters.ran_callbacks(ran as u64);
        turn::spend(ran.max(1));
        if dropped {
            // Its remaining arrivals go with it; the sweep tears the rcl entity down.
            self.sweep();
            return ran > 0;
        }
        if left.iter().any(|&n| n > 0) {
            if single_pass {
                entity.defer_claims(&left);
                self.defer(entity);
            } else {
                entity.unclaim(&left, &self.mailbox_tx);
            }
        }
        if ticked {
            self.timers.ran_tick(entity);
        }
        ran > 0 || ticked
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

/// Whether the Worker's mailbox holds an item other than `entity` (which a notification
/// since its drain began may have queued again).
fn others_wait(entity: &Entity) -> bool {
    turn::items_waiting() > u64::from(entity.is_queued())
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
