//! A dedicated-thread Worker (sync mode): the Worker task's future, driven on an OS
//! thread of its own.
//!
//! # Protocol
//!
//! The thread runs the same drain loop as a Worker on the Tokio threads
//! (`WorkerTask::run`); only what drives it differs. [`block_on`] (`parking.rs`) polls
//! the future and, when it is pending, parks the thread with `std::thread::park` (a
//! futex on Linux). The future's waker sets a `notified` flag and unparks the thread
//! only if the flag was clear, so a burst of arrivals costs one unpark, and a wake that
//! comes while the future is being polled is not lost: the flag is checked before
//! parking.
//! A push callback's send into the mailbox wakes this waker directly, with no Tokio
//! scheduler between the middleware thread and the Worker.
//!
//! The thread also drives the Worker's own timer scheduler: before parking it looks at
//! the Worker's timers that are due or changed and parks at most until the next one,
//! and while the Worker stays busy it looks between mailbox items and callbacks (see
//! `timer_scheduler`), so a timer wakes this thread and no other, and a stream that
//! never lets the thread park does not starve it.
//!
//! Before polling, the thread enters a Tokio runtime handle (one of the executor's
//! threads, or the user's runtime), so callbacks can spawn, sleep and do I/O; what
//! they spawn runs there. The thread applies its CPU affinity and SCHED_FIFO priority
//! first; a refusal is logged once per executor and the thread goes on without it.
//!
//! The thread ends when the future does: the Worker task ends on executor shutdown or
//! when its rclrs Worker is gone, after tearing down its entities. Dropping the
//! executor waits (up to `threads::TEARDOWN_PATIENCE`) for its dedicated threads to end, so
//! their entities are finalized before the drop returns, as the pool's are.

mod parking;

use parking::block_on;

use crate::ffi;
use crate::options::{DedicatedThread, DedicatedWorkers, Placement};
use crate::runtime::{
    shared::ExecutorShared,
    threads,
    timer_scheduler::{self, TimerScheduler},
};
use crate::stats::worker_counters::WorkerCounters;
use rclrs::log_warn;
use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

thread_local! {
    /// On a dedicated Worker thread: the executor it belongs to (its shared state's
    /// address); 0 elsewhere.
    static OWNER: Cell<usize> = const { Cell::new(0) };
}

/// Whether the calling thread is a dedicated Worker thread of the executor whose shared
/// state is at `owner` (its drop must not wait for the callback it is running).
pub(crate) fn runs_for(owner: *const ExecutorShared) -> bool {
    OWNER.with(Cell::get) == owner as usize
}

/// Start `task` on a new thread, placed as the executor's `dedicated_workers` ask,
/// inside the runtime context of one of the executor's Tokio threads (or the user's
/// runtime).
///
/// If the OS refuses the thread, the task comes back with the error, to run elsewhere.
pub(crate) fn spawn<F>(
    shared: &Arc<ExecutorShared>,
    dedicated: &DedicatedWorkers,
    counters: Arc<WorkerCounters>,
    timers: Arc<TimerScheduler>,
    task: F,
) -> Result<(), (std::io::Error, F)>
where
    F: Future<Output = ()> + Send + 'static,
{
    let cpus = dedicated.cpus.clone();
    let priority = dedicated.fifo_priority;
    let Some(handle) = shared.threads.handle_for_dedicated() else {
        // The executor was dropped (a Worker created through a node kept beyond it):
        // the task is dropped unrun, as a pool runtime that shut down drops it.
        return Ok(());
    };
    let owner = Arc::as_ptr(shared) as usize;
    // Shared by the executor's dedicated threads, so a refusal is logged once.
    let refusal_logged = Arc::clone(&shared.dedicated_refusal_logged);
    let name = format!("{}-d{}", shared.thread_name, counters.id);
    // The thread takes the task out of the slot; if it never starts, the slot still
    // holds it.
    let slot = Arc::new(Mutex::new(Some(task)));
    let theirs = Arc::clone(&slot);
    let started = std::thread::Builder::new().name(name).spawn(move || {
        let Some(task) = theirs.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        OWNER.with(|on| on.set(owner));
        let placed = place(&cpus, priority, &refusal_logged);
        counters.set_dedicated(placed);
        let _runtime = handle.enter();
        timers.adopt();
        block_on(task, timer_scheduler::before_park_adopted);
    });
    match started {
        Ok(thread) => {
            threads::keep_for_join(&shared.dedicated_threads, thread);
            Ok(())
        }
        Err(err) => {
            let task = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            Err((
                err,
                task.expect("a thread that never started left its task"),
            ))
        }
    }
}

/// Apply the affinity and priority asked for, each independently.
fn place(cpus: &[usize], priority: Option<u8>, refusal_logged: &AtomicBool) -> DedicatedThread {
    let mut refusals = Vec::new();
    let affinity = if cpus.is_empty() {
        Placement::NotRequested
    } else {
        match ffi::set_affinity(cpus) {
            Ok(()) => Placement::Applied,
            Err(err) => {
                refusals.push(format!("CPU affinity {cpus:?}: {err}"));
                Placement::Refused
            }
        }
    };
    let fifo_priority = match priority {
        None => Placement::NotRequested,
        Some(priority) => match ffi::set_fifo_priority(priority) {
            Ok(()) => Placement::Applied,
            Err(err) => {
                refusals.push(format!("SCHED_FIFO priority {priority}: {err}"));
                Placement::Refused
            }
        },
    };
    if !refusals.is_empty() && !refusal_logged.swap(true, Ordering::Relaxed) {
        log_warn!(
            "rclrs_tokio_executor",
            "a dedicated Worker thread runs without {} (logged once per executor)",
            refusals.join(" and ")
        );
    }
    DedicatedThread {
        affinity,
        fifo_priority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn block_on_wakes_for_a_send_from_another_thread() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
        let sender = std::thread::spawn(move || {
            for i in 0..1000 {
                tx.send(i).unwrap();
                if i % 100 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
        let received = block_on(
            async move {
                let mut all = Vec::new();
                while let Some(i) = rx.recv().await {
                    all.push(i);
                }
                all
            },
            || None,
        );
        sender.join().unwrap();
        assert_eq!(received, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_refused_placement_is_reported_and_logged_once() {
        let logged = AtomicBool::new(false);
        let placed = std::thread::spawn(move || {
            let first = place(&[100_000], None, &logged);
            let second = place(&[4095], None, &logged);
            (first, second, logged.load(Ordering::Relaxed))
        })
        .join()
        .unwrap();
        assert_eq!(placed.0.affinity, Placement::Refused);
        assert_eq!(placed.0.fifo_priority, Placement::NotRequested);
        // A core number the machine does not have is refused too.
        assert_eq!(placed.1.affinity, Placement::Refused);
        assert!(placed.2);
    }
}
