//! Counts of the gated async tasks (`async_tasks.rs`): spawned, polled once, ended. A
//! spin's backlog reads them (`workers.rs`), and the executor's drop asks whether
//! foreign tasks are still alive; the tasks themselves update them through [`Unpolled`]
//! and [`Alive`] guards.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Gated tasks spawned, and those polled for the first time (or dropped unpolled).
#[derive(Default)]
pub(crate) struct TaskCounters {
    spawned: AtomicU64,
    first_polled: AtomicU64,
    /// Those that ended (finished, panicked, or dropped with their runtime).
    ended: AtomicU64,
}

impl TaskCounters {
    /// Tasks spawned so far, if some of them have not been polled yet.
    pub(crate) fn backlog_target(&self) -> Option<u64> {
        let spawned = self.spawned.load(Ordering::SeqCst);
        (spawned > self.first_polled()).then_some(spawned)
    }

    pub(crate) fn first_polled(&self) -> u64 {
        self.first_polled.load(Ordering::SeqCst)
    }

    /// Gated tasks alive now.
    pub(crate) fn alive(&self) -> u64 {
        let ended = self.ended.load(Ordering::SeqCst);
        self.spawned.load(Ordering::SeqCst).saturating_sub(ended)
    }
}

/// A spawned task, counted as ended when dropped.
pub(crate) struct Alive(pub(crate) Arc<TaskCounters>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
    }
}

/// A spawned task not polled yet; counted as polled when dropped.
pub(crate) struct Unpolled(Arc<TaskCounters>);

impl Unpolled {
    pub(crate) fn new(tasks: &Arc<TaskCounters>) -> Self {
        tasks.spawned.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(tasks))
    }
}

impl Drop for Unpolled {
    fn drop(&mut self) {
        self.0.first_polled.fetch_add(1, Ordering::SeqCst);
    }
}
