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
//! - [`mailbox`]: the lock-free queue between push callbacks and a Worker task,
//!   counted in the Worker's counters (`crate::stats`), which `spin()` and users read.
//! - [`workers`]: the executor's list of Worker tasks, and the control messages they
//!   take.
//! - [`spin_gate`]: callbacks run only while `spin()` is active, and `spin()` returns
//!   only after the callbacks in flight finish; single passes for `spin_once`.
//! - [`spin`]: one `spin()` call and its stop conditions.
//! - [`async_tasks`]: the futures rclrs hands over, gated the same way, with an inline
//!   first poll so node-level callbacks do not spawn a task per message, and a waker
//!   that lets go of the runtime once its task is gone.
//! - [`fallback_waiter`]: an rcl wait set, on its own thread, for primitives that have
//!   no push path; it borrows the Worker's payload through the mailbox.
//! - [`timer_scheduler`]: one thread that watches every timer's deadline (wall clock, or
//!   ROS time moved by `/clock`) and delivers ticks into Worker mailboxes; its
//!   [`alarms`](timer_scheduler::alarms) are the precise deadlines of spins.
//! - [`turn`]: how many callbacks a Worker task runs before it yields its thread (and the
//!   wake-ups of other Workers it defers to the end of its turn).
//! - [`hand_over`]: that deferred work, on a pool thread, goes out when the thread parks,
//!   and the threads it wakes wait for that park instead of preempting it.
//! - [`panics`]: how a contained panic is reported.
//! - [`signals`]: SIGINT and SIGTERM ending spins, for executors that opt in.
//! - [`threads`]: where tasks run: a pool of single-threaded Tokio runtimes, one Worker
//!   task on exactly one of them at a time, or a runtime the user hands in; their
//!   handles are given up when the executor drops.
//! - [`placement`]: with `follow_load`, Worker tasks moving between the pool's threads:
//!   light ones gather on one thread, a saturated thread hands one to an idler thread.
//! - [`dedicated_thread`]: a Worker on an OS thread of its own (sync mode), parked on a
//!   futex between items, optionally pinned and under SCHED_FIFO; the same drain loop.
//!
//! # Life of a message
//!
//! 1. rmw receives a sample and calls the subscription's push callback (on a middleware
//!    thread, or inside `rcl_publish` for a publisher in the same process).
//! 2. The callback adds 1 to the entity's pending count and, if the entity is not
//!    already queued, sends it into its Worker's mailbox. Nothing else: no take, no
//!    lock, no call back into rmw. Inside a publish on the same thread, the send waits
//!    until the publish returns ([`mailbox`]'s `after_publish`).
//! 3. The Worker task, when the spin gate is open, claims the pending count and
//!    executes the subscription that many times (the primitive takes one message per
//!    execution), stopping at the first `TAKE_FAILED`.
//!
//! # Teardown
//!
//! Dropping the executor first closes the spin gate, so no callback starts any more,
//! and waits for the callbacks in flight (unless it is dropped on one of the executor's
//! own threads, where that would wait for itself). Then it shuts the Worker tasks down.
//! Each drains its mailbox, then for each entity clears the push callback (after which
//! none runs), then drops the Waitable (which finalizes the rcl entity once the user's
//! handle is gone too). The rcl context outlives all of them, because every entity
//! holds it through rclrs. Last, the drop waits (up to two seconds each) for the
//! executor's threads to end: the dedicated Worker threads, the pool's threads (whose
//! runtimes drop the tasks still on them, which may hold the last nodes, so the context
//! and its DDS participant may be finalized there) and the timer scheduler's. None of
//! them outlives the drop, so a process may exit right after it.

pub(crate) mod async_tasks;
pub(crate) mod channels;
pub(crate) mod dedicated_thread;
pub(crate) mod entity;
pub(crate) mod fallback_waiter;
pub(crate) mod hand_over;
pub(crate) mod mailbox;
pub(crate) mod panics;
pub(crate) mod placement;
pub(crate) mod shared;
pub(crate) mod signals;
pub(crate) mod spin;
pub(crate) mod spin_gate;
pub(crate) mod threads;
pub(crate) mod timer_scheduler;
pub(crate) mod turn;
pub(crate) mod worker_task;
pub(crate) mod workers;

use crate::options::TokioExecutorOptions;
use crate::stats::ExecutorStats;
use crate::TokioExecutorError;
use futures::future::BoxFuture;
use rclrs::{ExecutorChannel, ExecutorRuntime, RclrsError, SpinConditions};
use shared::ExecutorShared;
use std::sync::Arc;
use threads::{Blocking, Threads};

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
        // Dedicated Worker threads take their names from it too, even with a runtime
        // handle, and std panics on a name it cannot pass to the OS.
        if options.thread_name.contains('\0') {
            return Err(TokioExecutorError::InvalidThreadName(options.thread_name));
        }
        let threads = match options.runtime_handle.clone() {
            Some(handle) => Threads::external(handle),
            None => Threads::start_pool(options.worker_threads, &options.thread_name)
                .map_err(TokioExecutorError::RuntimeBuild)?,
        };
        let shared = ExecutorShared::new(threads, &options);
        shared.stats.set_stage_tracing(options.stage_tracing);
        if options.stop_on_signals {
            signals::stop_spins_of(&shared).map_err(TokioExecutorError::Signals)?;
        }
        Ok(Self { shared })
    }

    /// A live view of this executor's counters (panics contained, ...).
    pub fn stats(&self) -> ExecutorStats {
        self.shared.stats.clone()
    }
}

impl ExecutorRuntime for TokioExecutorRuntime {
    fn channel(&self) -> Arc<dyn ExecutorChannel> {
        Arc::new(channels::TokioExecutorChannel {
            shared: Arc::clone(&self.shared),
        })
    }

    fn spin(&mut self, conditions: SpinConditions) -> Vec<RclrsError> {
        // The spin future needs no runtime: it runs right here, on the caller's thread,
        // which it blocks, as the basic executor's spin does, wherever that is called.
        let spinning = spin::spin(Arc::clone(&self.shared), conditions);
        match self.shared.threads.blocking_here() {
            Blocking::Plain => futures::executor::block_on(spinning),
            Blocking::InPlace => {
                tokio::task::block_in_place(|| futures::executor::block_on(spinning))
            }
            Blocking::Starves => vec![crate::error::spin_inside_runtime()],
        }
    }

    fn spin_async(
        self: Box<Self>,
        conditions: SpinConditions,
    ) -> BoxFuture<'static, (Box<dyn ExecutorRuntime>, Vec<RclrsError>)> {
        // Runs on whatever executor awaits it. Dropping it mid-spin closes the gate, and
        // drops the runtime (see `Drop`).
        Box::pin(async move {
            let errors = spin::spin(Arc::clone(&self.shared), conditions).await;
            (self as Box<dyn ExecutorRuntime>, errors)
        })
    }
}

impl Drop for TokioExecutorRuntime {
    fn drop(&mut self) {
        // No callback starts from here on; those in flight finish before drop returns,
        // unless this thread is one of ours (a callback may be the one dropping us).
        let gate = &self.shared.gate;
        gate.close();
        let on_dedicated_thread = dedicated_thread::runs_for(Arc::as_ptr(&self.shared));
        let own_thread = self.shared.threads.is_pool_thread() || on_dedicated_thread;
        if !gate.is_idle() && !own_thread {
            futures::executor::block_on(gate.drained());
        }
        // Worker tasks tear their entities down (deregister, then drop) and end; then
        // the pool's threads stop, and drop what is still on them.
        self.shared.shut_down();
        self.shared.threads.stop();
        // Dedicated Worker threads end once they tore their entities down: wait for
        // that (not on one of them, whose Worker task is still running this drop).
        if !on_dedicated_thread {
            threads::join_listed(&self.shared.dedicated_threads);
        }
        // So do the pool's threads (but the calling one): what they drop may finalize
        // the last rcl entities and the context, which must be done when this returns.
        // Then the fallback waiters' threads, which their Worker tasks stopped as they
        // ended (unless the calling thread runs one of those tasks), and the timer
        // scheduler's, so that none of ours outlives the drop.
        self.shared.threads.join();
        if !own_thread {
            threads::join_listed(&self.shared.fallback_threads);
        }
        self.shared.join_timers();
    }
}
