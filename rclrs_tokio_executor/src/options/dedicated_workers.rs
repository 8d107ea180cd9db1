//! Which Workers run on an OS thread of their own, and how that thread is placed.

use std::any::{Any, TypeId};
use std::fmt;

/// Dedicated-thread Workers: a Worker runs on an OS thread of its own instead of
/// sharing the pool's threads with other Workers. The thread runs the same turns as a
/// pool thread (parked on a futex between them, woken directly by the push callback's
/// send), so what it adds is isolation: no other Worker's callback runs there, and the
/// thread can be pinned to cores and given a real-time priority. Its timers wake it
/// directly too: the thread itself sleeps until the Worker's next timer is due, so a
/// control loop's timer crosses no other thread.
///
/// The contract is unchanged: a Worker's callbacks stay FIFO and mutually exclusive,
/// nothing runs unless the executor is spinning, panics are contained, and dropping
/// the executor tears the Worker down in the same order. Inside callbacks the
/// executor's Tokio runtime is entered, so `tokio::spawn`, timers and I/O work; spawned
/// tasks and the continuation of an async callback that awaits run on the runtime's
/// thread, not on the dedicated one. The executor's clock task (which serves `/clock`)
/// always stays on the pool.
///
/// CPU affinity and SCHED_FIFO are Linux only. If the OS refuses either (a core that
/// does not exist, no `CAP_SYS_NICE`), the executor logs it once and the thread runs
/// unpinned at normal priority; [`WorkerStats::dedicated`](crate::WorkerStats) says
/// what was applied. Elsewhere both are no-ops.
///
/// ```no_run
/// use rclrs::*;
/// use rclrs_tokio_executor::{CreateTokioExecutor, DedicatedWorkers, TokioExecutorOptions};
///
/// struct ControlLoop { setpoint: f64 }
///
/// let context = Context::default_from_env().unwrap();
/// // Only Workers whose payload is a `ControlLoop` get a thread, on core 1, SCHED_FIFO 80.
/// let dedicated = DedicatedWorkers::for_payload::<ControlLoop>()
///     .cpus([1])
///     .fifo_priority(80);
/// let mut executor = context
///     .create_tokio_executor_with(TokioExecutorOptions::new().dedicated_workers(dedicated))
///     .unwrap();
/// let node = executor.create_node("controller").unwrap();
/// let worker = node.create_worker(ControlLoop { setpoint: 0.0 });
/// executor.spin(SpinOptions::default());
/// ```
#[derive(Clone)]
pub struct DedicatedWorkers {
    pub(crate) payload: Option<(TypeId, &'static str)>,
    pub(crate) cpus: Vec<usize>,
    pub(crate) fifo_priority: Option<u8>,
}

impl DedicatedWorkers {
    /// Every Worker, the nodes' own Workers (node-level callbacks) included.
    pub fn all() -> Self {
        Self {
            payload: None,
            cpus: Vec::new(),
            fifo_priority: None,
        }
    }

    /// Only Workers whose payload is a `T` (created with `node.create_worker(t)`).
    /// Node-level callbacks run on Workers whose payload is `()`.
    pub fn for_payload<T: Any>() -> Self {
        Self {
            payload: Some((TypeId::of::<T>(), std::any::type_name::<T>())),
            ..Self::all()
        }
    }

    /// Pin each dedicated thread to these cores (default: no pinning). An empty list
    /// means no pinning.
    pub fn cpus(mut self, cpus: impl IntoIterator<Item = usize>) -> Self {
        self.cpus = cpus.into_iter().collect();
        self
    }

    /// Run each dedicated thread under SCHED_FIFO with this priority (0, the default,
    /// means the normal scheduler). Linux accepts 1–99 with root or `CAP_SYS_NICE`; a
    /// value it refuses is logged and the thread runs at normal priority.
    pub fn fifo_priority(mut self, priority: u8) -> Self {
        self.fifo_priority = (priority > 0).then_some(priority);
        self
    }

    /// Whether a Worker with this payload gets a dedicated thread.
    pub(crate) fn applies_to(&self, payload: &dyn Any) -> bool {
        self.payload.is_none_or(|(id, _)| payload.type_id() == id)
    }
}

impl fmt::Debug for DedicatedWorkers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DedicatedWorkers")
            .field("payload", &self.payload.map_or("any", |(_, name)| name))
            .field("cpus", &self.cpus)
            .field("fifo_priority", &self.fifo_priority)
            .finish()
    }
}

/// One setting a dedicated thread asked for, and whether it got it (in
/// [`WorkerStats::dedicated`](crate::WorkerStats)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadSetting {
    /// Not asked for.
    NotRequested,
    /// Asked for and in effect.
    Applied,
    /// Asked for and refused by the OS (logged once); the thread runs without it.
    Refused,
}

/// What a dedicated Worker thread got of its settings: CPU affinity and SCHED_FIFO priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DedicatedThread {
    /// The [`DedicatedWorkers::cpus`] request.
    pub affinity: ThreadSetting,
    /// The [`DedicatedWorkers::fifo_priority`] request.
    pub fifo_priority: ThreadSetting,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_filter_picks_workers_by_payload_type() {
        struct Mine;
        let only_mine = DedicatedWorkers::for_payload::<Mine>();
        assert!(only_mine.applies_to(&Mine));
        assert!(!only_mine.applies_to(&()));
        assert!(DedicatedWorkers::all().applies_to(&()));
        assert_eq!(DedicatedWorkers::all().fifo_priority(0).fifo_priority, None);
        assert_eq!(
            DedicatedWorkers::all().fifo_priority(80).fifo_priority,
            Some(80)
        );
    }
}
