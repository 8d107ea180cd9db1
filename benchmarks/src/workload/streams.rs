//! Several named streams measured apart, for the workloads that mix them (robot_mix,
//! mixed_criticality): each stream has its own [`Stats`] (deliveries, and latencies
//! inside the window), and the window's edges snapshot every stream's count at once.

use super::stats::Stats;
use super::Report;
use std::sync::{atomic::Ordering, Arc};

/// Named streams, in the order they were given.
pub struct Streams {
    names: Vec<String>,
    stats: Vec<Arc<Stats>>,
}

impl Streams {
    /// One stream per name; `latency` records latencies inside the window.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>, latency: bool) -> Self {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        let stats = names.iter().map(|_| Stats::new(latency)).collect();
        Self { names, stats }
    }

    /// The counters of the stream called `name`.
    ///
    /// # Panics
    /// When no stream has that name: the workloads name their streams from one table.
    pub fn get(&self, name: &str) -> Arc<Stats> {
        let i = self
            .names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("no stream called {name}"));
        Arc::clone(&self.stats[i])
    }

    /// Every stream's counters, in order.
    pub fn all(&self) -> &[Arc<Stats>] {
        &self.stats
    }

    /// Open (`true`) or close the window of every stream.
    pub fn set_in_window(&self, open: bool) {
        for stats in &self.stats {
            stats.in_window.store(open, Ordering::Relaxed);
        }
    }

    /// Every stream's deliveries so far, in order.
    pub fn counts(&self) -> Vec<u64> {
        self.stats
            .iter()
            .map(|s| s.received.load(Ordering::Relaxed))
            .collect()
    }

    /// Deliveries so far, summed over the streams.
    pub fn total(&self) -> u64 {
        self.counts().iter().sum()
    }

    /// `{name: {received, received_per_s, latency_samples, latency_p50_us, ...}}`: each
    /// stream's deliveries over the whole run, its rate between the window's edges
    /// (`first` and `last`, from [`Streams::counts`], `wall_s` apart) and its latencies.
    pub fn report(&self, first: &[u64], last: &[u64], wall_s: f64) -> Report {
        self.names
            .iter()
            .enumerate()
            .fold(Report::new(), |report, (i, name)| {
                let stats = &self.stats[i];
                let stream = Report::new()
                    .int("received", stats.received.load(Ordering::Relaxed))
                    .num(
                        "received_per_s",
                        (last[i] - first[i]) as f64 / wall_s.max(1e-9),
                        1,
                    )
                    .latencies(&stats.latencies());
                report.nested(name, stream)
            })
    }
}
