//! The scheduler's plan: every timer it watches, and a queue of the wall-clock instants
//! at which its thread looks at each of them again, earliest first.
//!
//! A look at a timer asks rcl about it (its next call time, how long until it is due,
//! each a clock read inside rcl) and may deliver a tick. The thread looks only at the
//! timers whose instant has come and at those it was asked about (added, reset, run by
//! their Worker, moved by a jump of their clock), so a wake-up costs what it ticks, not
//! what is scheduled: a thousand timers at 10 Hz cost ten thousand looks a second, not
//! ten million.
//!
//! A timer has at most one instant in the queue, recorded in [`ScheduledTimer::planned`]
//! so a new look replaces it. A timer with nothing to wait for on the wall clock has
//! none: cancelled (a reset asks about it again), its tick still pending (its Worker
//! asks after running it), or following ROS time under sim time (its clock's jump
//! callback asks on every change).

use super::TimerKey;
use crate::ffi::{RclTimer, TimerDue};
use crate::runtime::{entity::Entity, mailbox::MailboxSender};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Weak,
};
use std::time::{Duration, Instant};

/// A tick to deliver: the timer's entity and its Worker's mailbox.
pub(super) type Tick = (Arc<Entity>, MailboxSender);

pub(super) struct ScheduledTimer {
    pub(super) timer: RclTimer,
    pub(super) entity: Weak<Entity>,
    pub(super) mailbox: MailboxSender,
    /// The next call time a tick was delivered for, until the Worker has run it.
    pub(super) ticked_for: Option<i64>,
    /// The tick was still pending when the thread looked again: the Worker asks the
    /// thread to look after running it.
    pub(super) awaiting_worker: bool,
    /// Its clock is ROS time driven by `/clock`: no wall-clock deadline.
    pub(super) sim_time: Arc<AtomicBool>,
    /// How late a tick may come, in nanoseconds (see `Slack`).
    pub(super) slack_ns: i64,
    /// Its instant in the queue, if it has one.
    planned: Option<Instant>,
    /// The last pass that looked at it (a timer found twice in one pass is looked at
    /// once).
    pass: u64,
}

impl ScheduledTimer {
    pub(super) fn new(
        timer: RclTimer,
        entity: Weak<Entity>,
        mailbox: MailboxSender,
        sim_time: Arc<AtomicBool>,
        slack_ns: i64,
    ) -> Self {
        Self {
            timer,
            entity,
            mailbox,
            ticked_for: None,
            awaiting_worker: false,
            sim_time,
            slack_ns,
            planned: None,
            pass: 0,
        }
    }
}

/// Whether a look replans the timer's instant in the queue.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Replan {
    Yes,
    /// A spin's own pass (`tick_every_due`): the thread's plan stands.
    No,
}

#[derive(Default)]
pub(super) struct Plan {
    timers: HashMap<TimerKey, ScheduledTimer>,
    queue: BTreeSet<(Instant, TimerKey)>,
    passes: u64,
    /// The timers a pass looks at, taken out of the queue or the map first (kept to
    /// allocate once).
    come: Vec<TimerKey>,
}

impl Plan {
    /// Watch a timer; nothing is planned for it until the thread looks at it.
    pub(super) fn insert(&mut self, key: TimerKey, timer: ScheduledTimer) {
        self.forget(key);
        self.timers.insert(key, timer);
    }

    /// Stop watching a timer: no later look touches its `rcl_timer_t`. False if it was
    /// not watched here.
    pub(super) fn forget(&mut self, key: TimerKey) -> bool {
        let Some(timer) = self.timers.remove(&key) else {
            return false;
        };
        if let Some(at) = timer.planned {
            self.queue.remove(&(at, key));
        }
        true
    }

    pub(super) fn get_mut(&mut self, key: TimerKey) -> Option<&mut ScheduledTimer> {
        self.timers.get_mut(&key)
    }

    /// The earliest instant in the queue.
    pub(super) fn next(&self) -> Option<Instant> {
        self.queue.first().map(|&(at, _)| at)
    }

    /// The thread's look at `now`: every timer whose instant has come, then every timer
    /// in `asked`; their ticks go to `ticks` and their next instants into the queue.
    pub(super) fn look_due_and(
        &mut self,
        now: Instant,
        asked: &HashSet<TimerKey>,
        ticks: &mut Vec<Tick>,
    ) {
        self.passes += 1;
        // Taken out first: a look may queue its timer at `now` again (a zero period),
        // which is for the next pass.
        let mut come = std::mem::take(&mut self.come);
        while let Some(&(at, key)) = self.queue.first() {
            if at > now {
                break;
            }
            self.queue.pop_first();
            if let Some(timer) = self.timers.get_mut(&key) {
                timer.planned = None;
            }
            come.push(key);
        }
        for &key in come.iter().chain(asked.iter()) {
            self.look(key, now, Replan::Yes, ticks);
        }
        come.clear();
        self.come = come;
    }

    /// A spin's single pass: tick every timer due now, leaving the thread's plan as it
    /// is (a tick delivered here is pending when the thread looks).
    pub(super) fn tick_every_due(&mut self, ticks: &mut Vec<Tick>) {
        self.passes += 1;
        let now = Instant::now();
        let mut keys = std::mem::take(&mut self.come);
        keys.extend(self.timers.keys());
        for &key in &keys {
            self.look(key, now, Replan::No, ticks);
        }
        keys.clear();
        self.come = keys;
    }

    /// Look at one timer (once per pass): deliver its tick if it is due, and with
    /// [`Replan::Yes`] queue the instant at which to look again.
    fn look(&mut self, key: TimerKey, now: Instant, replan: Replan, ticks: &mut Vec<Tick>) {
        let pass = self.passes;
        let Some(timer) = self.timers.get_mut(&key) else {
            return;
        };
        if timer.pass == pass {
            return;
        }
        timer.pass = pass;
        let Some(entity) = timer.entity.upgrade() else {
            self.forget(key);
            return;
        };
        if replan == Replan::Yes {
            if let Some(at) = timer.planned.take() {
                self.queue.remove(&(at, key));
            }
        }
        let Some(wait) = look_at(timer, entity, ticks) else {
            return;
        };
        if replan == Replan::Yes {
            let at = now + wait;
            timer.planned = Some(at);
            self.queue.insert((at, key));
        }
    }
}

/// Deliver `timer`'s tick into `ticks` if it is due; return how long until the thread
/// should look at it again on the wall clock (`None`: not until asked).
fn look_at(
    timer: &mut ScheduledTimer,
    entity: Arc<Entity>,
    ticks: &mut Vec<Tick>,
) -> Option<Duration> {
    let sim_time = timer.sim_time.load(Ordering::Acquire);
    // Read before `due`: if the clock moves in between, the tick is for a call time
    // that is no longer next, and a later look ticks again (never the reverse, a tick
    // recorded for a call time it did not find due).
    let next_call = timer.timer.next_call_time();
    if let Some(ticked_for) = timer.ticked_for {
        if next_call == Some(ticked_for) {
            // The tick is still pending: the Worker asks after running it.
            timer.awaiting_worker = true;
            return None;
        }
        timer.ticked_for = None;
        timer.awaiting_worker = false;
    }
    let wait_ns = match timer.timer.due() {
        TimerDue::Cancelled => return None,
        TimerDue::In(ns) if ns <= 0 => {
            timer.ticked_for = next_call;
            ticks.push((entity, timer.mailbox.clone()));
            // Look again when the next call is due, one period after this one (`ns` is
            // how late this one is; see the scheduler's protocol).
            timer.timer.period().unwrap_or(1_000_000) + ns
        }
        TimerDue::In(ns) => ns,
    };
    (!sim_time).then(|| Duration::from_nanos((wait_ns + timer.slack_ns).max(0) as u64))
}
