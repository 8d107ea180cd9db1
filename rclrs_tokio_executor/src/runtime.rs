//! The executor runtime: how notifications from rcl become callbacks on Worker threads.
//!
//! The modules are grouped by role: [`worker`] (one Worker: its task, mailbox, entities,
//! turns, async tasks), [`threads`] (where turns run: Worker threads, hand-over, load
//! balancing, the Tokio runtime), [`spin`] (a spin, its gate and signals) and
//! [`timer_scheduler`], with [`channels`] and [`shared`] at the top; the modules inside them
//! are re-exported here under short paths, as the list below names them.
//!
//! # Parts
//!
//! - [`channels`]: what rclrs talks to. `create_worker` starts a Worker task; the
//!   Worker channel only sends into that task's mailbox and control queue.
//! - [`worker_task`]: one task per rclrs Worker, run one turn at a time. It owns the
//!   Worker's payload and entities, so a Worker's callbacks are FIFO and mutually
//!   exclusive while different Workers run in parallel.
//! - [`worker_thread`]: the executor's OS threads that run Workers' turns (the pool,
//!   one per core, and dedicated Workers' threads of their own), parked on a futex
//!   between turns and woken directly by a push callback's send.
//! - [`entity`]: a push-registered entity and its coalescing counters: at most one
//!   mailbox item per entity, plus a count of arrivals; `entity/kind.rs` is the one
//!   table of what is decided per entity kind.
//! - [`mailbox`]: the lock-free queues between push callbacks and a Worker task (items,
//!   and the control messages the task takes), and how a send schedules the Worker's
//!   next turn; counted in the Worker's counters
//!   (`crate::stats`), which `spin()` and users read.
//! - [`workers`]: the executor's list of Worker tasks (which owns them) and a spin's
//!   backlog over them.
//! - [`spin_gate`]: callbacks run only while `spin()` is active, and `spin()` returns
//!   only after the callbacks in flight finish; single passes for `spin_once`.
//! - [`spin`]: one `spin()` call and its stop conditions.
//! - [`async_tasks`]: the futures rclrs hands over, gated the same way, with an inline
//!   first poll so a callback's future does not become a task when it finishes at once,
//!   and a waker that lets go of the runtime once its task is gone; [`task_counters`]
//!   count them for spins and teardown.
//! - [`fallback_waiter`]: an rcl wait set, on its own thread, for primitives that have
//!   no push path; it borrows the Worker's payload through the mailbox.
//! - [`timer_scheduler`]: the deadlines of timers (wall clock, or ROS time moved by
//!   `/clock`), looked at by each Worker for its own timers at one step of its turns;
//!   a thread of its own keeps those of Workers on a user's runtime and the
//!   [`alarms`](timer_scheduler::alarms), the precise deadlines of spins.
//! - [`turn`]: how many callbacks a Worker runs in one turn before it yields its thread
//!   (and the wake-ups of other Workers it defers to the end of its turn).
//! - [`hand_over`]: that deferred work, on a pool thread, goes out when the thread parks,
//!   and the threads it wakes wait for that park instead of preempting it.
//! - [`panics`]: how a contained panic is reported.
//! - [`signals`]: SIGINT and SIGTERM ending spins, for executors that opt in.
//! - [`threads`]: where work runs: the pool of Worker threads beside the executor's own
//!   Tokio runtime (async tasks, Tokio inside callbacks), or a runtime the user hands
//!   in; their handles are given up when the executor drops.
//! - [`load_balance`]: with `follow_load`, Workers moving between the pool's threads:
//!   light ones gather on one thread, a saturated thread hands one to an idler thread.
//!
//! # Life of a message
//!
//! 1. rmw receives a sample and calls the subscription's push callback (on a middleware
//!    thread, or inside `rcl_publish` for a publisher in the same process).
//! 2. The callback adds 1 to the entity's pending count and, if the entity is not
//!    already queued, sends it into its Worker's mailbox, which schedules a turn of the
//!    Worker on its thread's run queue and unparks the thread if the Worker was idle.
//!    Nothing else: no take, no lock of the entity, no call back into rmw. Inside a
//!    publish on the same thread, the send waits until the publish returns
//!    ([`mailbox`]'s `after_publish`).
//! 3. The Worker's turn, when the spin gate is open, claims the pending count and
//!    executes the subscription that many times (the primitive takes one message per
//!    execution), stopping at the first `TAKE_FAILED`.
//!
//! # Teardown
//!
//! Dropping the executor first closes the spin gate, so no callback starts any more,
//! and waits for the callbacks in flight (unless it is dropped on one of the executor's
//! own threads, where that would wait for itself). Then it shuts the Worker tasks down:
//! each is queued for a shutdown turn, in which it drains its mailbox, then for each
//! entity clears the push callback (after which none runs), then drops the Waitable
//! (which finalizes the rcl entity once the user's handle is gone too). The rcl context
//! outlives all of them, because every entity holds it through rclrs. Last, the drop
//! waits (up to two seconds each) for the executor's threads to end: the dedicated
//! Worker threads, the pool's threads (once they ran those turns), the Tokio runtime's
//! thread (which drops the async tasks still on it, which may hold the last nodes, so
//! the context and its DDS participant may be finalized there) and the timer
//! scheduler's. None of them outlives the drop, so a process may exit right after it.

pub(crate) mod channels;
pub(crate) mod shared;
pub(crate) mod spin;
pub(crate) mod threads;
pub(crate) mod timer_scheduler;
pub(crate) mod worker;

// The role folders' modules, by their short paths (`crate::runtime::mailbox`, ...).
pub(crate) use spin::{signals, spin_gate};
pub(crate) use threads::{hand_over, load_balance, worker_thread};
pub(crate) use worker::{
    async_tasks, entity, fallback_waiter, mailbox, panics, task_counters, turn, worker_task,
    workers,
};

use crate::options::TokioExecutorOptions;
use crate::stats::ExecutorStats;
use crate::TokioExecutorError;
use futures::future::BoxFuture;
use rclrs::{ExecutorChannel, ExecutorRuntime, RclrsError, SpinConditions};
use shared::ExecutorShared;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use threads::{Blocking, ThreadTemplate, Threads};

/// Numbers executors, so that a thread can tell whose it is (0: none).
static NEXT_EXECUTOR_ID: AtomicUsize = AtomicUsize::new(1);

/// The [`ExecutorRuntime`] behind [`CreateTokioExecutor`][crate::CreateTokioExecutor].
///
/// Most users never name this type: `context.create_tokio_executor()` wraps it in an
/// [`rclrs::Executor`]. It is public for composing with `Context::create_executor`.
pub struct TokioExecutorRuntime {
    shared: Arc<ExecutorShared>,
}

impl std::fmt::Debug for TokioExecutorRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokioExecutorRuntime")
            .field("id", &self.shared.id)
            .finish_non_exhaustive()
    }
}

impl TokioExecutorRuntime {
    /// Start the threads described by `options` (or adopt the runtime it names).
    pub fn new(options: TokioExecutorOptions) -> Result<Self, TokioExecutorError> {
        // Dedicated Worker threads take their names from it too, even with a runtime
        // handle, and std panics on a name it cannot pass to the OS.
        if options.thread_name.contains('\0') {
            return Err(TokioExecutorError::InvalidThreadName(options.thread_name));
        }
        let template = ThreadTemplate {
            name: options.thread_name.clone(),
            owner: NEXT_EXECUTOR_ID.fetch_add(1, Ordering::Relaxed),
            refusal_logged: Arc::default(),
        };
        let threads = match options.runtime_handle.clone() {
            Some(handle) => Threads::external(handle),
            None => Threads::start_pool(options.worker_threads, &template)
                .map_err(TokioExecutorError::RuntimeBuild)?,
        };
        let shared =
            ExecutorShared::new(template.owner, threads, &options, template.refusal_logged);
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
        let threads = &self.shared.threads;
        let Some(runtime) = threads.owned_runtime() else {
            return match threads.blocking_here() {
                Blocking::Plain => futures::executor::block_on(spinning),
                Blocking::InPlace => {
                    tokio::task::block_in_place(|| futures::executor::block_on(spinning))
                }
                Blocking::Starves => vec![crate::error::spin_inside_runtime()],
            };
        };
        // The executor's own runtime: the spinning thread drives it (see
        // `threads::OwnedRuntime`), unless it is inside another runtime, which a
        // `block_on` of ours would enter from within.
        let errors = match threads.blocking_here() {
            Blocking::Plain if tokio::runtime::Handle::try_current().is_ok() => {
                runtime.ensure_driven();
                futures::executor::block_on(spinning)
            }
            Blocking::Plain => runtime.drive(spinning),
            Blocking::InPlace => tokio::task::block_in_place(|| runtime.drive(spinning)),
            Blocking::Starves => return vec![crate::error::spin_inside_runtime()],
        };
        runtime.after_spin(self.shared.tasks.alive());
        errors
    }

    fn spin_async(
        self: Box<Self>,
        conditions: SpinConditions,
    ) -> BoxFuture<'static, (Box<dyn ExecutorRuntime>, Vec<RclrsError>)> {
        // Runs on whatever executor awaits it, which does not drive ours: its own thread
        // does. Dropping it mid-spin closes the gate, and drops the runtime (see `Drop`).
        if let Some(runtime) = self.shared.threads.owned_runtime() {
            runtime.ensure_driven();
        }
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
        let on_worker_thread = worker_thread::runs_for(self.shared.id);
        let own_thread = self.shared.threads.is_own_thread() || on_worker_thread;
        if !gate.is_idle() && !own_thread {
            futures::executor::block_on(gate.drained());
        }
        // Worker tasks tear their entities down (deregister, then drop) and end, in
        // their shutdown turns; then the pool's threads stop.
        self.shared.shut_down();
        self.shared.threads.stop();
        // Dedicated Worker threads end once they tore their entities down: wait for
        // that (not on one of them, whose Worker task may be running this drop).
        if !on_worker_thread {
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
