//! Publishing an executor's stats on a ROS topic, for operators of a running system
//! (`ros2 topic echo /executor_stats`).

use super::{ExecutorStats, WorkerStats};
use rclrs::{log_error, Node, Publisher, RclrsError, Timer};
use ros_env::rclrs_tokio_msgs::msg as stats_msg;
use std::time::Duration;

/// An opt-in periodic publication of an executor's stats; made by
/// [`ExecutorStats::publish_on`]. Publishing stops when this is dropped.
pub struct StatsPublication {
    _timer: Timer,
    _publisher: Publisher<stats_msg::ExecutorStats>,
}

impl std::fmt::Debug for StatsPublication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatsPublication").finish_non_exhaustive()
    }
}

impl ExecutorStats {
    /// Publish a snapshot of these stats (an `rclrs_tokio_msgs/msg/ExecutorStats`) on
    /// `topic` every `period`, from `node`. The publishing runs as a timer of `node`, so
    /// like every callback it runs only while the executor spins.
    ///
    /// ```no_run
    /// use rclrs::*;
    /// use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
    /// use std::time::Duration;
    ///
    /// let context = Context::default_from_env().unwrap();
    /// let (mut executor, stats) = context
    ///     .create_tokio_executor_with_stats(TokioExecutorOptions::new())
    ///     .unwrap();
    /// let node = executor.create_node("robot").unwrap();
    /// let _publication = stats
    ///     .publish_on(&node, "executor_stats", Duration::from_secs(1))
    ///     .unwrap();
    /// executor.spin(SpinOptions::default());
    /// ```
    pub fn publish_on(
        &self,
        node: &Node,
        topic: &str,
        period: Duration,
    ) -> Result<StatsPublication, RclrsError> {
        let publisher = node.create_publisher::<stats_msg::ExecutorStats>(topic)?;
        let stats = self.clone();
        let clock = node.get_clock();
        let timer_publisher = publisher.clone();
        let timer = node.create_timer_repeating(period, move || {
            let message = stats_msg::ExecutorStats {
                stamp: clock.now().to_ros_msg().unwrap_or_default(),
                callback_panics: stats.callback_panics(),
                workers: stats.workers().iter().map(to_message).collect(),
            };
            if let Err(err) = timer_publisher.publish(message) {
                log_error!(
                    "rclrs_tokio_executor",
                    "cannot publish executor stats: {err}"
                );
            }
        })?;
        Ok(StatsPublication {
            _timer: timer,
            _publisher: publisher,
        })
    }
}

fn to_message(worker: &WorkerStats) -> stats_msg::WorkerStats {
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    stats_msg::WorkerStats {
        id: worker.id,
        entities: worker.entities.clone(),
        pending: worker.pending,
        oldest_pending_ns: worker.oldest_pending.map_or(0, nanos),
        callbacks: worker.callbacks,
        empty_takes: worker.empty_takes,
        panics: worker.panics,
        busy_ns: nanos(worker.busy),
        lingers: worker.lingers,
    }
}
