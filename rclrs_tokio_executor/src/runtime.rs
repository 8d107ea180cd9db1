//! The executor runtime: how notifications from rcl become callbacks on Tokio.
//!
//! # Parts
//!
//! - [`channels`]: what rclrs talks to. `create_worker` spawns a Worker task; the
//!   Worker channel only sends into that task's control channel and mailbox.
//! - [`worker_task`]: one Tokio task per rclrs Worker, draining its mailbox. It owns the
//!   Worker's payload and entities, so a Worker's callbacks are FIFO and mutually
//!   exclusive while different Workers run in parallel.
//! - [`entity`]: a push-registered entity and its coalescing counters: at most one
//!   mailbox item per entity, plus a count of arrivals.
//! - [`mailbox`]: the lock-free queue between push callbacks and a Worker task.
//! - [`spin_gate`]: callbacks run only while `spin()` is active, and `spin()` returns
//!   only after the callbacks in flight finish.
//! - [`spin`]: one `spin()` call and its stop conditions.
//! - [`async_tasks`]: the futures rclrs hands over, gated the same way, with an inline
//!   first poll so node-level callbacks do not spawn a task per message.
//! - [`fallback_waiter`]: an rcl wait set, on its own thread, for primitives that have
//!   no push path; it borrows the Worker's payload through the mailbox.
//! - [`timer_scheduler`]: one thread that watches every timer's deadline (wall clock, or
//!   ROS time moved by `/clock`) and delivers ticks into Worker mailboxes.
//! - [`threads`]: where tasks run: a pool of single-threaded Tokio runtimes, one Worker
//!   task on exactly one of them, or a runtime the user hands in.
//!
//! # Life of a message
//!
//! 1. rmw receives a sample and calls the subscription's push callback (on a middleware
//!    thread, or inside `rcl_publish` for a publisher in the same process).
//! 2. The callback adds 1 to the entity's pending count and, if the entity is not
//!    already queued, sends it into its Worker's mailbox. Nothing else: no take, no
//!    lock, no call back into rmw.
//! 3. The Worker task, when the spin gate is open, claims the pending count and
//!    executes the subscription that many times (the primitive takes one message per
//!    execution), stopping at the first `TAKE_FAILED`.
//!
//! # Teardown
//!
//! Dropping the executor shuts the Worker tasks down. Each drains its mailbox, then for
//! each entity clears the push callback (after which none runs), then drops the
//! Waitable (which finalizes the rcl entity once the user's handle is gone too). The
//! rcl context outlives all of them, because every entity holds it through rclrs.

pub(crate) mod async_tasks;
pub(crate) mod channels;
pub(crate) mod entity;
pub(crate) mod fallback_waiter;
pub(crate) mod mailbox;
pub(crate) mod shared;
pub(crate) mod spin;
pub(crate) mod spin_gate;
pub(crate) mod threads;
pub(crate) mod timer_scheduler;
pub(crate) mod worker_task;

use crate::options::TokioExecutorOptions;
use crate::TokioExecutorError;
use futures::future::BoxFuture;
use rclrs::{ExecutorChannel, ExecutorRuntime, RclrsError, SpinConditions};
use shared::ExecutorShared;
use std::sync::Arc;
use threads::Threads;

/// The [`ExecutorRuntime`] behind [`CreateTokioExecutor`][crate::CreateTokioExecutor].
///
/// Most users never name this type: `context.create_tokio_executor()` wraps it in an
/// [`rclrs::Executor`]. It is public for composing with `Context::create_executor`.
pub struct TokioExecutorRuntime {
    shared: Arc<ExecutorShared>,
}

impl TokioExecutorRuntime {
    /// Start the threads described by `options` (or adopt the runtime it names).
    pub fn new(options: TokioExecutorOptions) -> Result<Self, TokioExecutorError> {
        let threads = match options.runtime_handle {
            Some(handle) => Threads::external(handle),
            None => Threads::start_pool(options.worker_threads, &options.thread_name)
                .map_err(TokioExecutorError::RuntimeBuild)?,
        };
        Ok(Self {
            shared: ExecutorShared::new(threads),
        })
    }
}

impl ExecutorRuntime for TokioExecutorRuntime {
    fn channel(&self) -> Arc<dyn ExecutorChannel> {
        Arc::new(channels::TokioExecutorChannel {
            shared: Arc::clone(&self.shared),
        })
    }

    fn spin(&mut self, conditions: SpinConditions) -> Vec<RclrsError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return vec![crate::error::spin_inside_runtime()];
        }
        let spinning = self
            .shared
            .threads
            .spawn(spin::spin(Arc::clone(&self.shared), conditions));
        futures::executor::block_on(spinning).unwrap_or_else(|join_error| {
            rclrs::log_error!(
                "rclrs_tokio_executor",
                "the spin task ended abnormally: {join_error}"
            );
            Vec::new()
        })
    }

    fn spin_async(
        self: Box<Self>,
        conditions: SpinConditions,
    ) -> BoxFuture<'static, (Box<dyn ExecutorRuntime>, Vec<RclrsError>)> {
        // The spin future runs on our threads (its timers need our time driver); the
        // caller may await it from any executor.
        let spinning = self
            .shared
            .threads
            .spawn(spin::spin(Arc::clone(&self.shared), conditions));
        Box::pin(async move {
            let errors = spinning.await.unwrap_or_else(|join_error| {
                rclrs::log_error!(
                    "rclrs_tokio_executor",
                    "the spin task ended abnormally: {join_error}"
                );
                Vec::new()
            });
            (self as Box<dyn ExecutorRuntime>, errors)
        })
    }
}

impl Drop for TokioExecutorRuntime {
    fn drop(&mut self) {
        // Worker tasks tear their entities down (deregister, then drop) and end; then
        // the pool's threads stop. Neither blocks, so dropping inside async code is fine.
        self.shared.shut_down();
        self.shared.threads.stop();
    }
}
