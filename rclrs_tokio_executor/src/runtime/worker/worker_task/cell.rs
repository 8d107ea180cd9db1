//! A Worker task's cell: the task, its mailbox, and what runs its turns when the
//! mailbox wakes it.
//!
//! The executor's list of Workers owns the cell (`WorkerEntry`) until the task ends;
//! a run queue holds it while a turn is queued, a Tokio task while it drives it on a
//! user's runtime. The mailbox holds it weakly, so the senders that outlive a Worker
//! (its entities' push callbacks, rclrs's channel) keep nothing of it alive but the
//! mailbox. When the task ends, the turn that ended it drops it, on the thread that ran
//! the turn.

use super::{Site, WorkerTask};
use crate::options::DedicatedWorkers;
use crate::runtime::{
    load_balance::WINDOW,
    mailbox::{Mailbox, Schedule},
    shared::ExecutorShared,
    worker_thread::{RunsTurns, ThreadKind, ThreadShared, TurnEnd},
    workers::WorkerEntry,
};
use futures::task::AtomicWaker;
use rclrs::log_error;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;

pub(crate) struct WorkerCell {
    mailbox: Arc<Mailbox>,
    /// `None` once the task ended.
    task: Mutex<Option<WorkerTask>>,
    driver: Driver,
}

/// Who runs the cell's turns.
enum Driver {
    /// The executor's pool: the thread the task's counters name as its home.
    Pool(Arc<[Arc<ThreadShared>]>),
    /// A dedicated Worker's thread of its own.
    Thread(Arc<ThreadShared>),
    /// A Tokio task on a runtime the user passed in.
    Task(AtomicWaker),
}

/// Assign a new Worker task its thread: a dedicated thread of its own if `dedicated` says so
/// (on the pool if the OS refuses the thread), else on the pool thread with the fewest
/// Workers, or on the user's runtime.
pub(super) fn assign_thread(
    shared: &Arc<ExecutorShared>,
    mut task: WorkerTask,
    dedicated: Option<DedicatedWorkers>,
) {
    let mailbox = Arc::clone(&task.mailbox);
    let counters = Arc::clone(&task.counters);
    let gated = task.gated;
    let mailbox_tx = task.mailbox_tx.clone();
    let make = |task: WorkerTask, driver: Driver| {
        Arc::new(WorkerCell {
            mailbox: Arc::clone(&mailbox),
            task: Mutex::new(Some(task)),
            driver,
        })
    };
    let list = |cell: &Arc<WorkerCell>| {
        let entry = Arc::new(WorkerEntry {
            gated,
            mailbox: mailbox_tx.clone(),
            counters: Arc::clone(&counters),
            cell: Arc::clone(cell) as Arc<dyn Send + Sync>,
        });
        if let Some(task) = cell.task.lock().unwrap().as_mut() {
            task.entry = Arc::downgrade(&entry);
        }
        shared.workers.add(entry);
        mailbox.set_driver(Arc::downgrade(cell) as std::sync::Weak<dyn Schedule>);
    };
    if let Some(dedicated) = dedicated {
        let thread = ThreadShared::new(ThreadKind::Dedicated);
        let cell = make(task, Driver::Thread(Arc::clone(&thread)));
        let first = Arc::clone(&cell) as Arc<dyn RunsTurns>;
        match shared.threads.start_dedicated(
            &shared.thread_template(),
            &shared.dedicated_threads,
            &thread,
            &dedicated,
            &counters,
            first,
        ) {
            Ok(true) => {
                list(&cell);
                return;
            }
            // The executor was dropped (a Worker created through a node kept beyond
            // it): the task is dropped unrun, as a pool that stopped drops it.
            Ok(false) => {
                drop(cell.task.lock().unwrap().take());
                return;
            }
            Err(err) => {
                log_error!(
                    "rclrs_tokio_executor",
                    "no thread for a dedicated Worker ({err}); it runs on the pool"
                );
                // Its own timers stay its own: a pool Worker drives them the same way.
                task = cell.task.lock().unwrap().take().expect("the task is home");
            }
        }
    }
    match shared.threads.pool() {
        Some(threads) => {
            let Some(home) = shared.threads.home_at_fewest() else {
                return;
            };
            counters.set_home_thread(Some(home.index));
            task.next_balance_check = shared.follow_load.then(|| Instant::now() + WINDOW);
            task.home = Some(home);
            let cell = make(task, Driver::Pool(threads));
            list(&cell);
        }
        None => {
            let cell = make(task, Driver::Task(AtomicWaker::new()));
            list(&cell);
            shared.threads.spawn_worker_task(drive_on_tokio(cell));
        }
    }
}

impl WorkerCell {
    /// Run one turn on the calling thread.
    fn turn(&self, site: Site<'_>) -> TurnEnd {
        self.mailbox.begin_turn();
        let mut task = self.task.lock().unwrap_or_else(|e| e.into_inner());
        let Some(running) = task.as_mut() else {
            return TurnEnd::Finished;
        };
        let end = running.turn(site);
        if matches!(end, TurnEnd::Finished) {
            // Tears the Worker down here, on its own thread.
            drop(task.take());
        }
        end
    }

    fn home(&self) -> Option<Arc<ThreadShared>> {
        match &self.driver {
            Driver::Pool(threads) => {
                let index = self.mailbox.home_thread().unwrap_or(0);
                threads.get(index).or_else(|| threads.first()).cloned()
            }
            Driver::Thread(thread) => Some(Arc::clone(thread)),
            Driver::Task(_) => None,
        }
    }
}

impl Schedule for WorkerCell {
    fn schedule(self: Arc<Self>) {
        if let Driver::Task(waker) = &self.driver {
            waker.wake();
            return;
        }
        if let Some(home) = self.home() {
            home.enqueue(self);
        }
    }
}

impl RunsTurns for WorkerCell {
    fn run_turn(&self, thread: &Arc<ThreadShared>) -> TurnEnd {
        self.turn(Site::Thread(thread))
    }

    fn wake(&self) {
        self.mailbox.wake();
    }

    fn requeue(self: Arc<Self>) {
        if let Some(home) = self.home() {
            home.enqueue(self);
        }
    }
}

/// Drive a Worker's turns from a Tokio task (a runtime the user passed in): a turn
/// whenever the mailbox wakes the task, a yield after one whose budget ran out.
pub(crate) async fn drive_on_tokio(cell: Arc<WorkerCell>) {
    loop {
        match cell.turn(Site::Task) {
            TurnEnd::Finished => return,
            TurnEnd::Yielded | TurnEnd::Nap | TurnEnd::Moved => tokio::task::yield_now().await,
            TurnEnd::Idle { .. } => {
                std::future::poll_fn(|cx| {
                    let Driver::Task(waker) = &cell.driver else {
                        return Poll::Ready(());
                    };
                    waker.register(cx.waker());
                    // A wake since the turn began set the flag: run again.
                    if cell.mailbox.is_scheduled() {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                })
                .await
            }
        }
    }
}
