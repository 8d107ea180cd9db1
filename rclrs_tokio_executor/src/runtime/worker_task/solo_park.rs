//! How a pool Worker alone on its thread waits for work: on a futex of its own, as a
//! dedicated Worker does, instead of returning to Tokio.
//!
//! # Why
//!
//! A Worker task that goes idle returns to its current-thread runtime, which parks in
//! its driver: the time driver's lock and wheel, then `epoll_wait`; the push callback's
//! wake-up goes through Tokio's inject queue and the driver's eventfd, and the woken
//! thread turns both drivers before it polls the task again. Under a steady stream that
//! is the pool Worker's cost above a dedicated one (`benchmarks/results/FINDINGS.md`,
//! "A Worker alone on its thread parks itself").
//!
//! # Protocol
//!
//! When the Worker's task is the only task alive on its pool thread, nothing but this
//! Worker can need the runtime: I/O readiness and Tokio timers wake tasks, and there is
//! no other. So the task polls its wait (mailbox, control channel, spin gate, timer
//! requests) in place with a waker that unparks the thread
//! ([`parking::poll_parked`]), and parks the thread on its own, for at most
//! [`SOLO_PATIENCE`]. It gives up, and awaits the same wait through Tokio as before, as
//! soon as:
//! - a task is spawned onto the runtime from elsewhere: the executor's own spawns (async
//!   tasks, a Worker moving here) nudge the thread ([`ThreadWake::nudge`]);
//! - the pool stops, or the runtime's handle went to a dedicated Worker's thread (whose
//!   callbacks may spawn onto it at any time): the thread parks solo no more
//!   ([`ThreadWake::end_solo_parks`]). A stop must reach the runtime even while a stream
//!   keeps the Worker from ever waiting through Tokio;
//! - another task is alive on the runtime (it is checked before every park);
//! - the patience runs out, or the Worker's own timers come due within it (their
//!   timerfd is in the driver, which hears nothing meanwhile; a Worker whose timers are
//!   due sooner does not park solo at all, so a tick keeps the timerfd's precision).
//!
//! The patience bounds the one case the protocol cannot see: a task spawned onto the
//! runtime through a handle that a callback took (`Handle::current()`) and used from a
//! thread off the pool. It waits at most that long for the thread to go back to Tokio.
//! An idle Worker pays one wake-up per patience after its last item.
//!
//! The poll runs unconstrained by Tokio's cooperative budget: the task is not returning
//! to the scheduler between items, so a budget spent would never be refilled.

use crate::runtime::{
    hand_over::ThreadWake,
    parking::{poll_parked, Park, ThreadWaker},
};
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest a solo park lasts before the thread goes back to its runtime's driver.
pub(crate) const SOLO_PATIENCE: Duration = Duration::from_millis(10);

thread_local! {
    /// This pool thread's waker for solo parks, made once.
    static WAKER: Arc<ThreadWaker> = ThreadWaker::for_current();
}

/// Wait for `wait` on this pool thread without Tokio, if the Worker's task is the only
/// one on it (see the module's protocol): its output, or `None` if the caller must await
/// it through Tokio. `timers_due` is when the Worker's own timers need a look, if they
/// do.
pub(crate) fn wait<F: Future + ?Sized>(
    wake: &ThreadWake,
    wait: Pin<&mut F>,
    timers_due: Option<Instant>,
) -> Option<F::Output> {
    let until = Instant::now() + SOLO_PATIENCE;
    if !wake.may_park_solo() || timers_due.is_some_and(|due| due <= until) || !alone() {
        return None;
    }
    let mut wait = pin!(tokio::task::unconstrained(wait));
    wake.solo_parking();
    let waited = WAKER.with(|waker| {
        poll_parked(wait.as_mut(), waker, || {
            if wake.nudged() || !alone() || Instant::now() >= until {
                Park::GiveUp
            } else {
                Park::Until(until)
            }
        })
    });
    wake.solo_unparked();
    waited
}

/// Whether the calling task is the only one alive on its runtime.
fn alone() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|runtime| runtime.metrics().num_alive_tasks() == 1)
}
