//! Sleeping in ROS time, for async callbacks and tasks.
//!
//! Under `use_sim_time` a node's clock is ROS time moved by `/clock`, so a sleep must
//! wait for `/clock` to reach the target, however fast or slow simulated time runs, and
//! not for the wall clock. [`sleep_until`] registers an rcl clock jump callback that
//! wakes the sleeping task whenever ROS time changes; the task checks the time and
//! sleeps on. It never blocks a thread, so a sleeping callback does not stall its Worker
//! thread or the executor, and dropping the future (or the executor running it) cancels
//! it at once. On a clock that does not follow `/clock` (steady, system, or ROS time
//! without sim time) it is a Tokio timer for the remaining time.
//!
//! ```no_run
//! # use rclrs::*;
//! # use rclrs_tokio_executor::CreateTokioExecutor;
//! # let context = Context::default_from_env().unwrap();
//! # let executor = context.create_tokio_executor();
//! # let node = executor.create_node("sleeper").unwrap();
//! let clock = node.get_clock();
//! let _ = executor.commands().run(async move {
//!     // Five seconds of ROS time: under sim time, as /clock advances.
//!     rclrs_tokio_executor::sleep_for(&clock, std::time::Duration::from_secs(5))
//!         .await
//!         .unwrap();
//! });
//! ```

use rclrs::{
    Clock, ClockChange, ClockJump, ClockType, JumpCallbackHandle, JumpThreshold, RclrsError,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Why a ROS-time sleep ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SleepError {
    /// The clock stopped following `/clock` during the sleep (`use_sim_time` was switched
    /// off, or its time source went away), so the target, a simulated time, may never
    /// come.
    ClockChanged,
    /// The clock jump callback could not be registered.
    Rcl(String),
    /// Not called from inside a Tokio runtime (needed on clocks not driven by `/clock`).
    NoTokioRuntime,
}

impl std::fmt::Display for SleepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ClockChanged => write!(f, "the clock stopped following /clock during the sleep"),
            Self::Rcl(err) => write!(f, "cannot watch the clock: {err}"),
            Self::NoTokioRuntime => write!(f, "ROS-time sleeps need a Tokio runtime"),
        }
    }
}

impl std::error::Error for SleepError {}

/// Sleep until `clock` reads at least `until_ns` (nanoseconds of that clock).
pub fn sleep_until(clock: &Clock, until_ns: i64) -> RosSleep {
    RosSleep {
        clock: clock.clone(),
        until_ns,
        watch: None,
        wall: None,
    }
}

/// Sleep for `duration` of `clock`'s time, from now.
pub fn sleep_for(clock: &Clock, duration: Duration) -> RosSleep {
    let until = clock.now().nsec.saturating_add(duration.as_nanos() as i64);
    sleep_until(clock, until)
}

/// The future of [`sleep_until`] and [`sleep_for`].
#[must_use = "a sleep does nothing unless awaited"]
pub struct RosSleep {
    clock: Clock,
    until_ns: i64,
    watch: Option<Watch>,
    wall: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl std::fmt::Debug for RosSleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RosSleep")
            .field("until_ns", &self.until_ns)
            .finish_non_exhaustive()
    }
}

struct Watch {
    state: Arc<WatchState>,
    _handle: JumpCallbackHandle,
}

#[derive(Default)]
struct WatchState {
    waker: Mutex<Option<Waker>>,
    deactivated: AtomicBool,
}

impl RosSleep {
    fn watch(&mut self) -> Result<&Arc<WatchState>, SleepError> {
        if self.watch.is_none() {
            let state = Arc::new(WatchState::default());
            let seen = Arc::clone(&state);
            // Runs inside rcl_set_ros_time_override with the clock locked: only record
            // and wake, never touch the clock.
            let on_jump = Arc::new(move |jump: &ClockJump| {
                if jump.before_jump {
                    return;
                }
                if jump.clock_change == ClockChange::RosTimeDeactivated {
                    seen.deactivated.store(true, Ordering::Release);
                }
                if let Some(waker) = seen.waker.lock().unwrap().as_ref() {
                    waker.wake_by_ref();
                }
            });
            let handle = self
                .clock
                .add_jump_callback(JumpThreshold::any_change(), on_jump)
                .map_err(|err: RclrsError| SleepError::Rcl(err.to_string()))?;
            self.watch = Some(Watch {
                state,
                _handle: handle,
            });
        }
        Ok(&self.watch.as_ref().expect("just set").state)
    }
}

impl Future for RosSleep {
    type Output = Result<(), SleepError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if matches!(this.clock.clock_type(), ClockType::RosTime) {
            // Watch every ROS-time clock, also while sim time is off: switching it on
            // (use_sim_time set at run time) must wake the sleep too.
            let state = match this.watch() {
                Ok(state) => Arc::clone(state),
                Err(err) => return Poll::Ready(Err(err)),
            };
            // Register before reading the time, so a jump in between still wakes us.
            *state.waker.lock().unwrap() = Some(cx.waker().clone());
            if state.deactivated.load(Ordering::Acquire) {
                return Poll::Ready(Err(SleepError::ClockChanged));
            }
            if this.clock.is_ros_time_override_enabled() {
                this.wall = None;
                if this.clock.now().nsec >= this.until_ns {
                    return Poll::Ready(Ok(()));
                }
                return Poll::Pending;
            }
        }
        // Not driven by /clock: wait out the remaining time on Tokio's timer.
        let remaining = this.until_ns - this.clock.now().nsec;
        if remaining <= 0 {
            return Poll::Ready(Ok(()));
        }
        if this.wall.is_none() {
            if tokio::runtime::Handle::try_current().is_err() {
                return Poll::Ready(Err(SleepError::NoTokioRuntime));
            }
            this.wall = Some(Box::pin(tokio::time::sleep(Duration::from_nanos(
                remaining as u64,
            ))));
        }
        match this.wall.as_mut().expect("just set").as_mut().poll(cx) {
            // The wall timer ran out: check the clock again (it may be a system clock
            // that was set back), and sleep on if needed.
            Poll::Ready(()) => {
                this.wall = None;
                Pin::new(this).poll(cx)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
