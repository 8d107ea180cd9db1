//! The hub of a fan-out subscription: the one callback of its rcl subscription, which
//! wraps each message taken into an `Arc` once and offers it to every Worker group.

use super::worker_group::{lock, GroupSink, RetiredMessages, WorkerGroup};
use rclrs::Worker;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The Worker groups of one fan-out subscription.
pub(crate) struct Router<T> {
    pub(crate) topic: Arc<str>,
    /// Each Worker group's queue length (the subscription's history depth).
    capacity: usize,
    groups: Mutex<Vec<Arc<dyn GroupSink<T>>>>,
    taken: AtomicU64,
    retired: Arc<RetiredMessages<T>>,
}

impl<T: Send + Sync + 'static> Router<T> {
    pub(crate) fn new(topic: &str, capacity: usize) -> Self {
        Self {
            topic: Arc::from(topic),
            capacity,
            groups: Mutex::new(Vec::new()),
            taken: AtomicU64::new(0),
            retired: Arc::new(RetiredMessages::new()),
        }
    }

    /// The hub's callback: one message taken from the rcl subscription, offered to
    /// every queued group, then given to `inline` (the taking Worker's own callbacks)
    /// with no lock held.
    pub(crate) fn deliver(&self, message: T, inline: impl FnOnce(&Arc<T>)) {
        self.taken.fetch_add(1, Ordering::Relaxed);
        self.retired.release();
        let message = Arc::new(message);
        for group in lock(&self.groups).iter() {
            group.offer(&message);
        }
        inline(&message);
    }

    /// The group of the Worker that takes, whose callbacks run inline in the take.
    pub(crate) fn inline_group<P>(&self, worker: &Worker<P>) -> Arc<WorkerGroup<T, P>>
    where
        P: 'static + Send + Sync,
    {
        let group = self.new_group(worker, true);
        lock(&self.groups).push(Arc::clone(&group) as Arc<dyn GroupSink<T>>);
        group
    }

    fn new_group<P>(&self, worker: &Worker<P>, inline: bool) -> Arc<WorkerGroup<T, P>>
    where
        P: 'static + Send + Sync,
    {
        WorkerGroup::new(
            Arc::clone(worker),
            Arc::clone(&self.topic),
            self.capacity,
            Arc::clone(&self.retired),
            inline,
        )
    }

    pub(crate) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// The group serving `worker`, created if it has none yet, given to `f` while the
    /// groups are locked (so a group found here cannot be removed meanwhile).
    pub(crate) fn with_group<P, R>(
        &self,
        worker: &Worker<P>,
        f: impl FnOnce(&Arc<WorkerGroup<T, P>>) -> R,
    ) -> R
    where
        P: 'static + Send + Sync,
    {
        let mut groups = lock(&self.groups);
        let found = groups.iter().find_map(|group| {
            let group = Arc::clone(group)
                .as_any()
                .downcast::<WorkerGroup<T, P>>()
                .ok()?;
            group.serves(worker).then_some(group)
        });
        let group = found.unwrap_or_else(|| {
            let group = self.new_group(worker, false);
            groups.push(Arc::clone(&group) as Arc<dyn GroupSink<T>>);
            group
        });
        f(&group)
    }

    /// Run `f` on `group` with the groups locked, then forget the group if it has no
    /// callback left (but for the taking Worker's own group).
    pub(crate) fn update_group<P>(&self, group: &Arc<WorkerGroup<T, P>>, f: impl FnOnce())
    where
        P: 'static + Send + Sync,
    {
        let mut groups = lock(&self.groups);
        f();
        if group.is_empty() && !group.is_inline() {
            let target = Arc::as_ptr(group) as *const ();
            groups.retain(|g| Arc::as_ptr(g) as *const () != target);
        }
    }
}
