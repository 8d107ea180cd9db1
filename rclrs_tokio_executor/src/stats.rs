//! What an executor counts about itself, readable while it runs: contained panics, and
//! per Worker its backlog, how old its oldest pending item is, and where its time goes.
//!
//! Submodules: [`worker_counters`] (the counters one Worker task keeps),
//! [`stage_latencies`] (where a message's time goes, while stage tracing is on) and
//! [`publication`] (publishing the counters on a ROS topic).

#[cfg(feature = "stats-msg")]
mod publication;
pub(crate) mod stage_latencies;
pub(crate) mod worker_counters;

#[cfg(feature = "stats-msg")]
pub use publication::StatsPublication;
pub use stage_latencies::{Stage, StageLatencies, StageSummary};

use std::collections::BTreeMap;
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex, Weak,
};
use std::time::Duration;
use worker_counters::WorkerCounters;

/// A live view of an executor's counters. Cheap to clone; every clone reads the same
/// executor. Get one from [`TokioExecutorRuntime::stats`](crate::TokioExecutorRuntime::stats)
/// or [`CreateTokioExecutor::create_tokio_executor_with_stats`](crate::CreateTokioExecutor::create_tokio_executor_with_stats).
///
/// ```no_run
/// use rclrs::*;
/// use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
///
/// let context = Context::default_from_env().unwrap();
/// let (mut executor, stats) = context
///     .create_tokio_executor_with_stats(TokioExecutorOptions::new())
///     .unwrap();
/// let node = executor.create_node("watched").unwrap();
/// executor.spin(SpinOptions::default().timeout(std::time::Duration::from_secs(1)));
/// for (entity, panics) in stats.panics_by_entity() {
///     println!("{entity}: {panics} callback panics");
/// }
/// ```
#[derive(Clone, Default)]
pub struct ExecutorStats {
    inner: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    panics: AtomicU64,
    /// Panics per entity (topic or service name; `<timer>`, `a payload task`, ...).
    panics_by_entity: Mutex<BTreeMap<String, u64>>,
    /// The Worker tasks' counters; a task's entry dies with it.
    workers: Mutex<Vec<Weak<WorkerCounters>>>,
    next_worker: AtomicU64,
    /// Stage tracing on or off; every Worker's counters share it.
    tracing: Arc<AtomicBool>,
}

/// One Worker at one moment, from [`ExecutorStats::workers`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Numbers Workers in creation order, within the executor.
    pub id: u64,
    /// Topic and service names of the Worker's subscriptions, services and clients, and
    /// `<timer>` for each timer. The executor's clock task, which serves `/clock`
    /// between spins, is a Worker too.
    pub entities: Vec<String>,
    /// Mailbox items queued or running: an entity with arrivals (at most one item per
    /// entity, however many messages), a timer tick, a payload task.
    pub pending: u64,
    /// How long the oldest pending item has waited (a lower bound when more than 128
    /// items are pending); `None` when nothing is pending.
    pub oldest_pending: Option<Duration>,
    /// Callbacks run: messages, requests, responses, timer fires and payload tasks.
    pub callbacks: u64,
    /// Takes that found rmw's queue empty (the arrival was already taken by an earlier
    /// drain of the same entity).
    pub empty_takes: u64,
    /// Callbacks of this Worker that panicked (and were contained).
    pub panics: u64,
    /// Time spent running callbacks, takes included.
    pub busy: Duration,
    /// Times the Worker waited on its mailbox instead of parking: a short sleep after
    /// finding a backlog, or a watch under a sustained stream with the
    /// `experimental-linger` feature's `TokioExecutorOptions::linger`.
    pub lingers: u64,
    /// `Some` for a Worker on a dedicated thread
    /// ([`TokioExecutorOptions::dedicated_workers`](crate::TokioExecutorOptions::dedicated_workers)),
    /// once the thread started: what it got of the affinity and priority it asked for.
    pub dedicated: Option<crate::DedicatedThread>,
    /// Where this Worker's time per item and per message went, while stage tracing was
    /// on ([`ExecutorStats::set_stage_tracing`]); `None` if it never recorded.
    pub stages: Option<StageLatencies>,
}

impl ExecutorStats {
    /// Callbacks (and async tasks) that panicked since the executor was created. The
    /// executor contained every one of them: the entity keeps being served.
    pub fn callback_panics(&self) -> u64 {
        self.inner.panics.load(Ordering::Relaxed)
    }

    /// The same count per entity: its topic or service name (`<timer>` for timers, `an
    /// async task`, `a payload task` for work without an entity), in name order.
    pub fn panics_by_entity(&self) -> Vec<(String, u64)> {
        let by_entity = self
            .inner
            .panics_by_entity
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        by_entity.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// Every Worker task running now, in creation order.
    ///
    /// ```no_run
    /// # use rclrs::*;
    /// # use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
    /// # let context = Context::default_from_env().unwrap();
    /// # let (mut executor, stats) = context
    /// #     .create_tokio_executor_with_stats(TokioExecutorOptions::new())
    /// #     .unwrap();
    /// for worker in stats.workers() {
    ///     if let Some(age) = worker.oldest_pending.filter(|age| age.as_millis() > 100) {
    ///         println!("{:?} is {age:?} behind", worker.entities);
    ///     }
    /// }
    /// ```
    pub fn workers(&self) -> Vec<WorkerStats> {
        let mut workers = self.inner.workers.lock().unwrap_or_else(|e| e.into_inner());
        workers.retain(|w| w.strong_count() > 0);
        workers
            .iter()
            .filter_map(Weak::upgrade)
            .map(|w| w.snapshot())
            .collect()
    }

    /// Turn per-stage latency tracing on or off, for every Worker of the executor (also
    /// [`TokioExecutorOptions::stage_tracing`](crate::TokioExecutorOptions::stage_tracing)).
    /// While off it costs one relaxed atomic load per mailbox item; while on, a few clock
    /// readings per message. See [`StageLatencies`] for the stages.
    pub fn set_stage_tracing(&self, on: bool) {
        self.inner.tracing.store(on, Ordering::Relaxed);
    }

    /// Whether stage tracing is on.
    pub fn stage_tracing(&self) -> bool {
        self.inner.tracing.load(Ordering::Relaxed)
    }

    /// Every running Worker's stage histograms added up; `None` if none recorded.
    pub fn stage_latencies(&self) -> Option<StageLatencies> {
        self.workers()
            .into_iter()
            .filter_map(|w| w.stages)
            .reduce(|mut sum, stages| {
                sum.add(&stages);
                sum
            })
    }

    /// Counters for a new Worker task.
    pub(crate) fn new_worker(&self) -> Arc<WorkerCounters> {
        let id = self.inner.next_worker.fetch_add(1, Ordering::Relaxed);
        let counters = Arc::new(WorkerCounters::new(id, Arc::clone(&self.inner.tracing)));
        let mut workers = self.inner.workers.lock().unwrap_or_else(|e| e.into_inner());
        workers.retain(|w| w.strong_count() > 0);
        workers.push(Arc::downgrade(&counters));
        counters
    }

    /// Count one contained panic of `entity`.
    pub(crate) fn record_panic(&self, entity: &str) {
        self.inner.panics.fetch_add(1, Ordering::Relaxed);
        let mut by_entity = self
            .inner
            .panics_by_entity
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *by_entity.entry(entity.to_string()).or_default() += 1;
    }
}

impl std::fmt::Debug for ExecutorStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutorStats")
            .field("callback_panics", &self.callback_panics())
            .finish()
    }
}
