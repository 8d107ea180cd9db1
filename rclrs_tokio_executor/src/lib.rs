//! An event-driven, multi-threaded [Tokio](https://tokio.rs) executor for
//! [rclrs](https://crates.io/crates/rclrs) 0.8.
//!
//! Replace `context.create_basic_executor()` with `context.create_tokio_executor()`:
//!
//! ```no_run
//! use rclrs::*;
//! use rclrs_tokio_executor::CreateTokioExecutor;
//!
//! let context = Context::default_from_env().unwrap();
//! let mut executor = context.create_tokio_executor();
//! let node = executor.create_node("listener").unwrap();
//! executor.spin(SpinOptions::default());
//! ```
//!
//! # How it works
//!
//! Instead of polling `rcl_wait`, the executor registers rcl push callbacks
//! (`rcl_subscription_set_on_new_message_callback` and the service and client
//! equivalents) for every entity. A push callback only counts the arrival and, if the
//! entity is not already queued, sends it into its Worker's mailbox, which wakes the
//! Worker's thread directly (a futex, no scheduler in between). Each rclrs `Worker`
//! drains its mailbox one turn at a time, so its callbacks are FIFO and mutually
//! exclusive, while different Workers run in parallel on the executor's Worker threads
//! (one per core by default). Tokio runs beside them, for async tasks and for the Tokio
//! code inside callbacks. See [`runtime`](crate::TokioExecutorRuntime) for the protocol.
//!
//! # Contract
//!
//! It behaves like the rclrs basic executor:
//! - callbacks run only while `spin()` (or `spin_async`) is active, and `spin()` returns
//!   only after callbacks in flight have finished;
//! - `SpinOptions` mean the same: until a promise resolves, `halt_spinning`, a timeout
//!   (reported as one `RclReturnCode::Timeout` per Worker, each equal to the basic
//!   executor's for a wait set in the same state, and kept to well under a millisecond
//!   whatever was queued when the spin began), and spin-once: `spin_once()` or a zero
//!   timeout makes one pass in which each entity with work waiting runs its callback
//!   once;
//! - a timeout that does not fit after `Instant::now()` is refused with
//!   `RclReturnCode::InvalidArgument`.
//!
//! Beyond it:
//! - a panicking callback is contained: the entity keeps being served, the first panic
//!   of each entity is logged with its topic or service name, and every one is counted
//!   in [`ExecutorStats`];
//! - per Worker, [`ExecutorStats::workers`] tells its backlog, the age of its oldest
//!   pending item, callbacks run, empty takes, panics, busy time and lingers, and
//!   [`ExecutorStats::publish_on`] publishes them on a ROS topic;
//! - dropping the executor waits for the callbacks already running, and none starts
//!   after the drop returns; nor does any of its threads outlive the drop;
//! - an entity whose last handle is dropped, even from inside its own callback, runs no
//!   further callback, whatever was still waiting for it;
//! - a callback that calls `halt_spinning`, or resolves the promise the spin waits for,
//!   is the last to start in that spin; what is still queued runs at the next spin, in
//!   order;
//! - [`FanoutSubscription`] (from [`CreateFanoutSubscription`]) takes each message of a
//!   topic once and hands the same `Arc<T>` to callbacks on any number of Workers, with
//!   a bounded queue per Worker so a slow one cannot hold back the others; created on a
//!   Worker instead of a node, it takes there and runs that Worker's callbacks inline;
//! - [`TokioExecutorOptions::dedicated_workers`] runs chosen Workers on OS threads of
//!   their own (optionally pinned and under SCHED_FIFO), with the same contract;
//! - with [`TokioExecutorOptions::runtime_handle`], a runtime that does not run the
//!   executor's tasks ends a spin with the error recognised by
//!   [`is_runtime_not_driven_error`] instead of hanging;
//! - with [`set_ros2_tracing`] (or `RCLRS_TOKIO_ROS2_TRACING=1`), an LTTng trace of the
//!   process holds ros2_tracing's `callback_start`/`callback_end` around every callback
//!   and the registration events that tie each callback to its rcl entity, as for
//!   rclcpp; off, it costs one relaxed load per callback.
//!
//! # Timers and ROS time
//!
//! Timers keep kernel-precise deadlines (not Tokio's 1 ms timer wheel): each Worker
//! looks at its own timers at one step of each turn, and its thread parks until the
//! next deadline, so a tick wakes only the thread that runs the callback; a tick goes
//! into the Worker's mailbox like any event, at most one pending per timer. Under
//! `use_sim_time`, ROS-time timers are driven by `/clock` through rcl clock jump
//! callbacks: every due fire happens at any simulation speed, a paused clock costs no
//! CPU, and backward jumps follow rcl's rules. `/clock` itself is served on a task of
//! its own, so a Worker stuck in a long callback cannot stop time. [`sleep_until`] and
//! [`sleep_for`] sleep in ROS time inside async code.
//!
//! Callbacks run inside the executor's Tokio runtime, so they may use the Tokio
//! ecosystem (spawn, timers, I/O); what they spawn runs on the runtime's own thread.
//! Inside async code, `spin_async().await` spins without blocking. The blocking `spin()`
//! blocks the calling thread wherever it is called, as the basic executor's does: on a
//! multi-thread Tokio runtime through `block_in_place`, so the runtime's other tasks
//! move to its other threads. Only where it would block a thread that the spin waits
//! for (one of the executor's own, or a current-thread runtime passed as
//! `runtime_handle`) does it return, at once, the error recognised by
//! [`is_spin_inside_runtime_error`].
//!
//! # Threading and ownership
//!
//! Push callbacks run on middleware threads and only touch atomics and a lock-free
//! queue. Entities are owned by their Worker's task and held weakly by their push
//! callbacks; dropping the executor deregisters every callback before any rcl entity
//! is finalized.
//!
//! # Architecture
//!
//! The life of a message: the middleware calls the entity's push callback, which counts
//! the arrival and, if the entity is not queued yet, queues it in its Worker's mailbox;
//! a mailbox that was idle schedules its Worker on its Worker thread and unparks it.
//! The thread runs the Worker's turn: control messages first (new entities, shutdown),
//! then due timer ticks, then the mailbox's items, each entity drained through rclrs's
//! own take and callback path, within the turn's budget. Only the spin gate lets a turn
//! run callbacks: it is open while a spin is active, and a spin ends once every turn in
//! flight has left it. `docs/architecture.md` in the repository follows a message, a
//! timer tick, a spin and a teardown through the modules, and says where to change what.
//!
//! # Cargo features
//!
//! - `stats-msg` (default): [`ExecutorStats::publish_on`] and `StatsPublication`, which
//!   publish the stats as `rclrs_tokio_msgs/msg/ExecutorStats` and so need that package
//!   installed where ros-env finds it. Without it the crate needs only rclrs and ros-env.
//! - `capture`: the `capture` module, an `ExecutorRuntime` that runs nothing and hands
//!   over rclrs's Workers, primitives and tasks (benchmark floors, tests).
//! - `experimental-linger`: `TokioExecutorOptions::linger`, watching the mailbox
//!   before parking; it may change or go.
#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks, missing_debug_implementations)]

#[cfg(feature = "capture")]
pub mod capture;
mod error;
mod fanout;
mod ffi;
mod options;
mod ros2_tracing;
mod runtime;
mod sim_clock;
mod stats;

pub use crate::error::{
    is_interrupted_error, is_runtime_not_driven_error, is_spin_inside_runtime_error,
    TokioExecutorError,
};
pub use crate::fanout::{
    CreateFanoutSubscription, FanoutCallback, FanoutSubscription, IntoNodeFanoutCallback,
    IntoWorkerFanoutCallback,
};
pub use crate::options::{DedicatedThread, DedicatedWorkers, ThreadSetting, TokioExecutorOptions};
pub use crate::ros2_tracing::{ros2_tracing, set_ros2_tracing, ROS2_TRACING_ENV};
pub use crate::runtime::TokioExecutorRuntime;
pub use crate::sim_clock::{sleep_for, sleep_until, RosSleep, SleepError};
#[cfg(feature = "stats-msg")]
pub use crate::stats::StatsPublication;
pub use crate::stats::{ExecutorStats, Stage, StageLatencies, StageSummary, WorkerStats};

use rclrs::{Context, Executor};

/// Create Tokio executors from an rclrs [`Context`], like
/// [`rclrs::CreateBasicExecutor`].
pub trait CreateTokioExecutor {
    /// An executor with the default [`TokioExecutorOptions`].
    ///
    /// # Panics
    /// If the executor's threads cannot be started (the OS refuses them); use
    /// [`Self::create_tokio_executor_with`] to handle that as an error.
    fn create_tokio_executor(&self) -> Executor;

    /// An executor built with `options`.
    fn create_tokio_executor_with(
        &self,
        options: TokioExecutorOptions,
    ) -> Result<Executor, TokioExecutorError>;

    /// An executor built with `options`, and a live view of its counters.
    fn create_tokio_executor_with_stats(
        &self,
        options: TokioExecutorOptions,
    ) -> Result<(Executor, ExecutorStats), TokioExecutorError>;
}

impl CreateTokioExecutor for Context {
    fn create_tokio_executor(&self) -> Executor {
        self.create_tokio_executor_with(TokioExecutorOptions::default())
            .expect("cannot start the threads of the rclrs Tokio executor")
    }

    fn create_tokio_executor_with(
        &self,
        options: TokioExecutorOptions,
    ) -> Result<Executor, TokioExecutorError> {
        Ok(self.create_executor(TokioExecutorRuntime::new(options)?))
    }

    fn create_tokio_executor_with_stats(
        &self,
        options: TokioExecutorOptions,
    ) -> Result<(Executor, ExecutorStats), TokioExecutorError> {
        let runtime = TokioExecutorRuntime::new(options)?;
        let stats = runtime.stats();
        Ok((self.create_executor(runtime), stats))
    }
}
