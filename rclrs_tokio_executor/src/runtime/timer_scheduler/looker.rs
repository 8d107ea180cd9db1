//! One look of a timer scheduler: at the timers due and those asked about, delivering
//! their ticks and ringing the alarms due, then publishing when to look again (see the
//! protocol in the parent module).

use super::{alarms::AlarmList, plan::Tick, TimerKey, TimerScheduler};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// What one look found to do next.
pub(super) enum Look {
    /// The executor stops.
    Stopped,
    /// Something changed while looking: look again before sleeping.
    Again,
    /// Sleep until this instant (`None`: until woken).
    Sleep(Option<Instant>),
}

/// The thread's scratch between looks: the ticks of one look and the timers asked
/// about, kept so a steady rate allocates nothing.
#[derive(Default)]
pub(super) struct Looker {
    due: Vec<Tick>,
    asked: HashSet<TimerKey>,
}

impl Looker {
    /// Look at the timers due and those asked about, deliver their ticks and ring the
    /// alarms due; then publish when the thread will look again.
    pub(super) fn look(&mut self, this: &TimerScheduler) -> Look {
        this.planned_ns.store(0, Ordering::SeqCst);
        this.dirty.store(false, Ordering::SeqCst);
        std::mem::swap(&mut self.asked, &mut *this.asked.lock().unwrap());
        // Instants are planned from this reading: the Workers that the ticks wake may
        // run before this thread parks (on its core), and the time they take must not
        // push the next tick later.
        let evaluated = Instant::now();
        let (timers_next, sending) = {
            let mut state = this.state.lock().unwrap();
            if state.stop {
                // The executor is shutting down: wake every alarm's future so it can see.
                this.with_alarms(AlarmList::ring_all);
                return Look::Stopped;
            }
            state
                .plan
                .look_due_and(evaluated, &self.asked, &mut self.due);
            // Before the state lock is released, until the ticks are sent (see
            // `send_fence`).
            let sending = (!self.due.is_empty()).then(|| this.sends.sending());
            (state.plan.next(), sending)
        };
        self.asked.clear();
        // Ticks go out once the lock is released: the Worker a tick wakes often runs at
        // once, on this core, and reports the tick back (`ran_tick`) under the same lock.
        for (entity, mailbox) in self.due.drain(..) {
            entity.tick(&mailbox);
        }
        drop(sending);
        let now = Instant::now();
        let alarms_next = this.with_alarms(|list| list.ring_due(now));
        let next = match (timers_next, alarms_next.map(|wait| now + wait)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let planned = next.map_or(u64::MAX, |deadline| this.since_epoch(deadline));
        this.planned_ns.store(planned, Ordering::SeqCst);
        // A reset or a request that saw the previous plan (or 0) and did not wake us:
        // look again.
        if this.dirty.load(Ordering::SeqCst) {
            Look::Again
        } else {
            Look::Sleep(next)
        }
    }
}
