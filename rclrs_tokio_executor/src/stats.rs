//! What an executor counts about itself, readable while it runs.

use std::collections::BTreeMap;
use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc, Mutex,
};

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
        let by_entity = self.inner.panics_by_entity.lock().unwrap();
        by_entity.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// Count one contained panic of `entity`.
    pub(crate) fn record_panic(&self, entity: &str) {
        self.inner.panics.fetch_add(1, Ordering::Relaxed);
        let mut by_entity = self.inner.panics_by_entity.lock().unwrap();
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
