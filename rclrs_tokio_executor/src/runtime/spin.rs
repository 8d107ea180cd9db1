//! One `spin()`: open the gate, wait for a stop condition, close the gate, wait for the
//! callbacks in flight. Every wait is a notification; nothing sleeps in a loop.
//!
//! The spin future needs no runtime of its own: the blocking `spin()` runs it on the
//! caller's thread and `spin_async` on whatever executor awaits it. Its deadline is an
//! [`Alarm`](crate::runtime::timer_scheduler::alarms) of the timer scheduler's thread, precise to the
//! kernel's wake-up latency rather than Tokio's 1 ms timer tick.
//!
//! Stop conditions, as with the rclrs basic executor:
//! - `halt_spinning` (rclrs calls `wake_all_wait_sets`, which wakes this future);
//! - the context is no longer valid (checked whenever the future wakes);
//! - SIGINT or SIGTERM, for an executor with `stop_on_signals` (see `signals`):
//!   reported with the error `is_interrupted_error` recognises;
//! - `until_promise_resolved`: the promise resolves or its sender is dropped;
//! - `timeout`: reported as `RclReturnCode::Timeout` (one per Worker, as the basic
//!   executor reports one per wait set), even if work was done; each equal to the basic
//!   executor's error for a Worker that was idle, or busy, when the time ran out (see
//!   `error::timed_out`). A timeout too large for rcl (above `i64::MAX` nanoseconds) is
//!   refused with `InvalidArgument`, as the basic executor refuses it;
//! - `only_next_available_work`: once a unit of work has run and the backlog (below)
//!   has had its pass. Entities added since the previous spin count as a unit of work,
//!   as the guard condition they trigger does for the basic executor's wait set; an
//!   async task does not, as the basic executor runs its tasks beside its wait set;
//! - a runtime passed as `runtime_handle` that has not run a task of ours after
//!   [`RUNTIME_PROBE`]: reported with the error [`is_runtime_not_driven_error`]
//!   recognises, instead of waiting for ever.
//!
//! [`is_runtime_not_driven_error`]: crate::is_runtime_not_driven_error
//!
//! A halt or a promise resolved from inside a callback makes that callback the last to
//! start in the spin (see "Ending a spin from inside" in `spin_gate`).
//!
//! # One pass, and the backlog
//!
//! `spin_once` and a zero timeout run a *single pass*: each entity that is ready runs
//! its callback at most once, the rest of its arrivals wait for the next spin (see the
//! spin gate). What was already waiting when the spin began, in the Workers' mailboxes,
//! deferred by the last single pass, or spawned as an async task (the backlog, a
//! snapshot of their counters) still gets its pass after a deadline
//! that came first, such as a zero timeout, as the basic executor's non-blocking wait
//! runs what is ready. That wait ends as soon as the backlog is processed or a callback
//! ends the spin from inside, and never lasts longer than [`BACKLOG_STALL`] without a
//! Worker making progress on it, so a busy or stalled Worker cannot hold a timed spin
//! past its deadline.

pub(crate) mod signals;
pub(crate) mod spin_gate;

use crate::runtime::{shared::ExecutorShared, spin_gate::Watching, workers::Backlog};
use rclrs::{Promise, RclReturnCode, RclrsError, SpinConditions};
use std::future::Future;
use std::pin::Pin;
use std::sync::{atomic::Ordering, Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// How long the backlog may go without progress after the deadline (see module docs).
const BACKLOG_STALL: Duration = Duration::from_millis(20);

/// How long a user's runtime (`runtime_handle`) may take to run its first task of ours
/// before a spin reports it as not driven.
const RUNTIME_PROBE: Duration = Duration::from_secs(1);

pub(crate) async fn spin(
    shared: Arc<ExecutorShared>,
    conditions: SpinConditions,
) -> Vec<RclrsError> {
    let SpinConditions {
        options,
        halt_spinning,
        context,
        ..
    } = conditions;
    if !context.ok() || shared.is_shut_down() {
        return Vec::new();
    }
    if signals::interrupted(&shared) {
        return vec![crate::error::interrupted()];
    }
    if options
        .timeout
        .is_some_and(|t| t.as_nanos() > i64::MAX as u128)
    {
        return vec![RclrsError::RclError {
            code: RclReturnCode::InvalidArgument,
            msg: None,
        }];
    }
    let started = Instant::now();
    let deadline = options.timeout.and_then(|t| started.checked_add(t));
    let only_next = options.only_next_available_work;
    let single_pass = only_next || options.timeout == Some(Duration::ZERO);
    let mut promise = options.until_promise_resolved;
    let gate = &shared.gate;
    // The pass this spin opens below (spins never overlap). The promise's waker is
    // registered before the gate opens, so a callback that resolves it at once ends the
    // pass too; a promise already resolved ends the spin before anything runs, as the
    // basic executor checks it before its first wait.
    let pass = gate.pass() + 1;
    if let Some(promise) = promise.as_mut() {
        let resolved = std::future::poll_fn(|cx| {
            Poll::Ready(poll_ending_pass(promise, &shared, pass, cx).is_ready())
        })
        .await;
        if resolved {
            return Vec::new();
        }
    }

    // Only `spin_once` needs to hear of every finished item (and every spin pays a
    // wake-up per callback while it listens). Watch before taking the snapshot, so no
    // progress on it goes unannounced.
    let watching = only_next.then(|| gate.watch());
    if single_pass {
        shared.tick_timers_due_now();
    }
    let backlog = shared.workers.backlog(&shared.tasks);
    let work_seen = gate.work_done();
    // Entities added since the last spin are a unit of work for the basic executor (its
    // wait set's guard condition): every spin consumes that, and a spin_once that finds
    // it returns after its pass, as the basic executor's does.
    let mut entities_changed = shared.take_entities_changed();
    // What a single pass's timeout reports depends on whether each Worker ran something
    // in the pass (see `error::timed_out`): count from before the gate opens. Entities
    // added since the last spin are work for every Worker in the pass that follows, as
    // for the basic executor's wait sets, whose guard conditions they triggered.
    let setup_work = single_pass && entities_changed;
    let pass_marks = single_pass.then(|| shared.workers.callback_marks());
    let _close_if_dropped = CloseGateOnDrop(&shared);
    gate.watch_halt(&halt_spinning);
    let opened = gate.open(single_pass);
    debug_assert_eq!(opened, pass, "spins never overlap");

    let mut alarm = deadline.map(|at| shared.timers.alarm(at));
    // A runtime handed in as `runtime_handle` that never runs our tasks would leave an
    // unbounded spin waiting for ever: check once that it runs them.
    let probe_at = started + RUNTIME_PROBE;
    let mut runtime_probe = shared
        .threads
        .runtime_probe()
        .map(|ran| (ran, shared.timers.alarm(probe_at)));
    let mut errors = Vec::new();
    let mut timed_out = false;
    loop {
        let progress = watching.as_ref().map(Watching::next);
        tokio::pin!(progress);
        if let Some(progress) = progress.as_mut().as_pin_mut() {
            progress.enable();
        }
        let woken = shared.wake_spin.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if halt_spinning.load(Ordering::Acquire) || !context.ok() || shared.is_shut_down() {
            break;
        }
        if signals::interrupted(&shared) {
            errors.push(crate::error::interrupted());
            break;
        }
        entities_changed |= shared.take_entities_changed();
        let unit_of_work = gate.work_done() > work_seen || entities_changed;
        if only_next && unit_of_work && backlog.is_processed() {
            // As the basic executor: a pass that ends after the deadline (a zero
            // timeout) still reports the timeout.
            timed_out = deadline.is_some_and(|at| Instant::now() >= at);
            break;
        }
        if deadline.is_some_and(|at| Instant::now() >= at) {
            timed_out = true;
            break;
        }
        if let Some((ran, _)) = &runtime_probe {
            if ran.load(Ordering::Acquire) {
                runtime_probe = None;
            } else if Instant::now() >= probe_at {
                errors.push(crate::error::runtime_not_driven());
                break;
            }
        }
        let promise_resolved = async {
            match promise.as_mut() {
                Some(promise) => {
                    std::future::poll_fn(|cx| poll_ending_pass(promise, &shared, pass, cx)).await
                }
                None => std::future::pending().await,
            }
        };
        let rung = async {
            match alarm.as_mut() {
                Some(alarm) => alarm.await,
                None => std::future::pending().await,
            }
        };
        let probe_due = async {
            match runtime_probe.as_mut() {
                Some((_, alarm)) => alarm.await,
                None => std::future::pending().await,
            }
        };
        let progressed = async {
            match progress.as_mut().as_pin_mut() {
                Some(progress) => progress.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = woken => {}
            _ = progressed => {}
            _ = promise_resolved => break,
            _ = rung => {}
            _ = probe_due => {}
        }
    }
    // A Worker busy when the time ran out finishes what it runs, and what was waiting,
    // after this mark; its count is read once the callbacks in flight have finished.
    let timeout_marks =
        timed_out.then(|| pass_marks.unwrap_or_else(|| shared.workers.callback_marks()));
    if timed_out {
        wait_for_backlog(&shared, &backlog).await;
    }
    gate.close();
    gate.drained().await;
    if let Some(marks) = timeout_marks {
        errors.extend(shared.workers.timeouts((!setup_work).then_some(&marks)));
    }
    errors
}

/// Poll `promise` with a waker that ends the gate's `pass` before it wakes `cx`'s: when
/// the promise resolves, the pass ends on the thread that resolves it (a callback's,
/// typically), so that callback is the last to start, before the spin future even runs.
/// A oneshot wakes its receiver only when it resolves or its sender is dropped, both of
/// which end the spin.
fn poll_ending_pass(
    promise: &mut Promise<()>,
    shared: &Arc<ExecutorShared>,
    pass: u64,
    cx: &mut Context<'_>,
) -> Poll<()> {
    let waker = Waker::from(Arc::new(EndPassOnWake {
        shared: Arc::downgrade(shared),
        pass,
        inner: cx.waker().clone(),
    }));
    Pin::new(promise)
        .poll(&mut Context::from_waker(&waker))
        .map(|_| ())
}

/// The promise's waker: ends a pass of the spin gate, then wakes the spin future.
struct EndPassOnWake {
    shared: Weak<ExecutorShared>,
    pass: u64,
    inner: Waker,
}

impl Wake for EndPassOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.gate.end_pass(self.pass);
        }
        self.inner.wake_by_ref();
    }
}

/// Let the backlog have its pass: until it is processed, a Worker stalls on it, or the
/// gate admits no more callbacks (a callback halted the spin or resolved its promise,
/// so nothing more of the backlog may start in it).
async fn wait_for_backlog(shared: &ExecutorShared, backlog: &Backlog) {
    let watching = shared.gate.watch();
    let mut finished = backlog.finished();
    let mut stall_at = Instant::now() + BACKLOG_STALL;
    loop {
        let progress = watching.next();
        tokio::pin!(progress);
        progress.as_mut().enable();
        if backlog.is_processed() || shared.is_shut_down() || !shared.gate.admits() {
            return;
        }
        let now_finished = backlog.finished();
        if now_finished != finished {
            finished = now_finished;
            stall_at = Instant::now() + BACKLOG_STALL;
        } else if Instant::now() >= stall_at {
            return;
        }
        let stalled = shared.timers.alarm(stall_at);
        tokio::select! {
            biased;
            _ = progress => {}
            _ = stalled => {}
        }
    }
}

/// Closes the gate when the spin future is dropped before it finished (a `spin_async`
/// future dropped mid-spin), so no callback starts for a spin nobody awaits.
struct CloseGateOnDrop<'a>(&'a ExecutorShared);

impl Drop for CloseGateOnDrop<'_> {
    fn drop(&mut self) {
        self.0.gate.close();
    }
}
