//! Alarms: wall-clock deadlines for futures, kept by the timer scheduler's thread.
//!
//! A timed `spin()` must end within a fraction of a millisecond of its deadline. Tokio's
//! timer wheel rounds every deadline up to the next millisecond tick (and needs the
//! caller to be inside a Tokio runtime), so spin deadlines are kept here instead: an
//! [`Alarm`] future registers its waker with the scheduler thread, which already sleeps
//! with a 1 ns timer slack until its earliest deadline, and wakes the future when the
//! deadline passes. The future can be awaited on any executor (`block_on` on the
//! caller's thread, a user's runtime, our pool).
//!
//! # Protocol
//!
//! - A first poll before the deadline files `(deadline, id) -> waker` in the list and
//!   wakes the thread so it re-plans its sleep; later polls only refresh the waker.
//! - The thread, on every evaluation, takes every due entry out of the list and wakes
//!   it, and sleeps until the earliest remaining one.
//! - Dropping an alarm removes its entry, so the list only holds alarms someone awaits.
//! - A future that polls `Ready` compares `Instant::now()` itself: the list is only a
//!   way to be woken, never the source of truth.

use super::TimerScheduler;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The wakers waiting for a deadline, earliest first.
#[derive(Default)]
pub(crate) struct AlarmList {
    waiting: BTreeMap<(Instant, u64), Waker>,
    next_id: u64,
}

impl AlarmList {
    fn file(&mut self, at: Instant, waker: &Waker) -> u64 {
        self.next_id += 1;
        self.waiting.insert((at, self.next_id), waker.clone());
        self.next_id
    }

    /// Wake every alarm (shutdown).
    pub(crate) fn ring_all(&mut self) {
        for (_, waker) in std::mem::take(&mut self.waiting) {
            waker.wake();
        }
    }

    /// Wake every alarm due at `now`; return how long until the next one.
    pub(crate) fn ring_due(&mut self, now: Instant) -> Option<Duration> {
        while let Some(entry) = self.waiting.first_entry() {
            if entry.key().0 > now {
                return Some(entry.key().0 - now);
            }
            entry.remove().wake();
        }
        None
    }
}

/// Resolves at `deadline` (wall clock, `Instant`), with the scheduler thread's precision.
pub(crate) struct Alarm {
    scheduler: Arc<TimerScheduler>,
    deadline: Instant,
    /// The list entry while one is filed.
    filed: Option<u64>,
}

impl Alarm {
    pub(crate) fn new(scheduler: Arc<TimerScheduler>, deadline: Instant) -> Self {
        Self {
            scheduler,
            deadline,
            filed: None,
        }
    }

    fn unfile(&mut self) {
        if let Some(id) = self.filed.take() {
            self.scheduler
                .with_alarms(|list| list.waiting.remove(&(self.deadline, id)));
        }
    }
}

impl Future for Alarm {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            self.unfile();
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        match self.filed {
            // Already filed: keep the entry's waker current. (An entry the thread rang is
            // gone only once the deadline passed, which the check above caught.)
            Some(id) => self.scheduler.with_alarms(|list| {
                if let Some(waker) = list.waiting.get_mut(&(deadline, id)) {
                    if !waker.will_wake(cx.waker()) {
                        *waker = cx.waker().clone();
                    }
                }
            }),
            None => {
                let id = self
                    .scheduler
                    .with_alarms(|list| list.file(deadline, cx.waker()));
                self.filed = Some(id);
                // The thread may be asleep until a later deadline: let it re-plan.
                self.scheduler.wake();
            }
        }
        Poll::Pending
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        self.unfile();
    }
}
