//! How a pool Worker waits for its own timers (see "Workers drive their own" in
//! `timer_scheduler`).
//!
//! Before the task waits for work, [`TimerWake::prepare`] looks at the Worker's timers
//! (delivering the ticks due into its mailbox) and returns the earliest instant to look
//! again. [`wait_for_timers`] then waits, beside the mailbox, until that instant on a
//! timerfd, or until the scheduler's `Notify` says a timer needs a look (a reset from
//! another thread, a clock jump). The timerfd sits in the pool thread's Tokio I/O
//! driver, so the thread sleeps in one `epoll_wait` for both, and a tick wakes only this
//! thread, with the kernel's precision rather than Tokio's 1 ms timer wheel.
//!
//! The timerfd is opened when the Worker first waits for a deadline (a Worker without
//! timers holds no descriptor), armed only when the instant changes, and registered with
//! the runtime of the thread the task runs on: a task that moves to another pool thread
//! (`follow_load`) gives the registration up first ([`TimerWake::unbind`]) and makes it
//! again there. Should opening or registering it fail, the task falls back to Tokio's
//! timer, late by up to a millisecond, and says so once.

use crate::ffi::{self, TimerFd};
use crate::runtime::timer_scheduler::TimerScheduler;
use rclrs::log_warn;
use std::future::pending;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

pub(crate) struct TimerWake {
    scheduler: Arc<TimerScheduler>,
    notify: Arc<Notify>,
    fd: Registration,
    /// The instant the timerfd is armed for, until it expires.
    armed: Option<Instant>,
}

enum Registration {
    /// Not opened yet.
    Unopened,
    /// Not registered with the current thread's runtime yet.
    Unbound(TimerFd),
    Bound(AsyncFd<TimerFd>),
    /// Registration or arming failed: Tokio's own timer instead.
    Coarse,
}

impl TimerWake {
    /// Adopt `scheduler` (before any timer is added to it) for a pool Worker's task.
    /// `None` if the scheduler is driven already.
    pub(crate) fn new(scheduler: &Arc<TimerScheduler>) -> Option<Self> {
        let notify = scheduler.adopt_for_task()?;
        Some(Self {
            scheduler: Arc::clone(scheduler),
            notify,
            fd: Registration::Unopened,
            armed: None,
        })
    }

    /// Whether the Worker has timers (a Worker without any never looks).
    pub(crate) fn has_timers(&self) -> bool {
        self.scheduler.has_timers()
    }

    /// Look at the Worker's timers (see `TimerScheduler::before_park`): until when the
    /// task may wait for work, if a timer has a deadline.
    pub(crate) fn prepare(&self) -> Option<Instant> {
        if !self.has_timers() {
            return None;
        }
        self.scheduler.before_park()
    }

    /// Give up the registration with this thread's runtime (the task moves).
    pub(crate) fn unbind(&mut self) {
        let fd = std::mem::replace(&mut self.fd, Registration::Coarse);
        self.fd = match fd {
            Registration::Bound(fd) => Registration::Unbound(fd.into_inner()),
            other => other,
        };
    }

    /// Open the timerfd and register it with the current thread's runtime, if that is
    /// not done yet.
    fn bind(&mut self) {
        let fd = match std::mem::replace(&mut self.fd, Registration::Coarse) {
            Registration::Unopened => match TimerFd::new() {
                Ok(fd) => fd,
                Err(err) => return coarse_fallback(&err),
            },
            Registration::Unbound(fd) => fd,
            bound_or_coarse => {
                self.fd = bound_or_coarse;
                return;
            }
        };
        self.armed = None;
        match ffi::register_timer_fd(fd) {
            Ok(fd) => self.fd = Registration::Bound(fd),
            Err(err) => coarse_fallback(&err),
        }
    }

    /// Until `at` (arming the timerfd if it is not armed for it already).
    async fn expiry(&mut self, at: Instant) {
        self.bind();
        if let Registration::Bound(fd) = &self.fd {
            if self.armed != Some(at) {
                if let Err(err) = fd
                    .get_ref()
                    .arm(Some(at.saturating_duration_since(Instant::now())))
                {
                    coarse_fallback(&err);
                    self.fd = Registration::Coarse;
                }
                self.armed = Some(at);
            }
        }
        let failed = match &self.fd {
            Registration::Bound(fd) => match fd.readable().await {
                Ok(mut ready) => {
                    if fd.get_ref().clear() {
                        self.armed = None;
                    }
                    ready.clear_ready();
                    false
                }
                // The driver is gone (the runtime shuts down, and the task with it):
                // never ready again, so Tokio's timer until the end, unannounced.
                Err(_) => true,
            },
            _ => {
                tokio::time::sleep_until(at.into()).await;
                false
            }
        };
        if failed {
            self.fd = Registration::Coarse;
        }
    }
}

/// Wait until the Worker's timers need a look: the instant `at`, or a request. Never,
/// without a `TimerWake` or a timer.
pub(crate) async fn wait_for_timers(wake: Option<&mut TimerWake>, at: Option<Instant>) {
    let Some(wake) = wake.filter(|wake| wake.has_timers()) else {
        return pending().await;
    };
    let notify = Arc::clone(&wake.notify);
    let notified = notify.notified();
    match at {
        None => notified.await,
        Some(at) => {
            tokio::select! {
                biased;
                _ = notified => {}
                _ = wake.expiry(at) => {}
            }
        }
    }
}

fn coarse_fallback(err: &std::io::Error) {
    static LOGGED: std::sync::Once = std::sync::Once::new();
    LOGGED.call_once(|| {
        log_warn!(
            "rclrs_tokio_executor",
            "a Worker's timers wake it through Tokio's timer (up to 1 ms late): its \
             timerfd failed ({err})"
        )
    });
}
