//! Shared pieces of the benchmark and test nodes: a clock all processes agree on,
//! latency statistics, a tiny `--key value` argument reader, and the reliability suite.
#![warn(missing_docs)]

mod ffi;
pub mod raw_rcl;
pub mod stress;
pub mod workload;

use std::collections::HashMap;

/// `CLOCK_MONOTONIC` in nanoseconds. One clock for every process on the machine, so a
/// receiver can compute latency from a sender's `send_time_ns` across processes.
pub fn monotonic_ns() -> i64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

/// CPU time of the whole process (`CLOCK_PROCESS_CPUTIME_ID`) in nanoseconds.
pub fn process_cpu_ns() -> i64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`) in nanoseconds.
pub fn thread_cpu_ns() -> i64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

/// Upper edges (µs) of the timer jitter histogram (`timer_jitter_hist`), shared with the
/// C++ timer node and the harness.
pub const JITTER_HISTOGRAM_EDGES_US: [f64; 10] =
    [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];

/// Latency samples in nanoseconds, summarised as percentiles.
#[derive(Default, Debug, Clone)]
pub struct Latencies {
    samples_ns: Vec<i64>,
}

impl Latencies {
    /// Record one sample.
    pub fn push(&mut self, ns: i64) {
        self.samples_ns.push(ns);
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples_ns.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.samples_ns.is_empty()
    }

    /// How many samples fall at or below each upper edge (µs) and above the previous
    /// one; a last count for those above every edge.
    pub fn histogram(&self, upper_edges_us: &[f64]) -> Vec<u64> {
        let mut counts = vec![0u64; upper_edges_us.len() + 1];
        for &ns in &self.samples_ns {
            let us = ns as f64 / 1000.0;
            counts[upper_edges_us.partition_point(|&edge| edge < us)] += 1;
        }
        counts
    }

    /// The `q` quantile (0.0..=1.0) in microseconds, nearest-rank; `None` when empty.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.samples_ns.is_empty() {
            return None;
        }
        let mut sorted = self.samples_ns.clone();
        sorted.sort_unstable();
        let rank = ((q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize).max(1);
        Some(sorted[rank - 1] as f64 / 1000.0)
    }
}

/// `--key value` and `--flag` arguments after the ROS arguments are removed.
pub struct Args {
    values: HashMap<String, String>,
}

impl Args {
    /// Read `std::env::args()`, ignoring everything from `--ros-args` to `--`.
    pub fn from_env() -> Self {
        let mut values = HashMap::new();
        let mut in_ros_args = false;
        let mut it = std::env::args().skip(1).peekable();
        while let Some(arg) = it.next() {
            if arg == "--ros-args" {
                in_ros_args = true;
                continue;
            }
            if in_ros_args {
                if arg == "--" {
                    in_ros_args = false;
                }
                continue;
            }
            if let Some(key) = arg.strip_prefix("--") {
                let value = match it.peek() {
                    Some(next) if !next.starts_with("--") => it.next().unwrap(),
                    _ => "true".to_string(),
                };
                values.insert(key.to_string(), value);
            }
        }
        Self { values }
    }

    /// The value of `--key`, parsed, or `default`. A value that does not parse is an
    /// error naming the argument.
    pub fn get<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        match self.values.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{key}: cannot parse {v:?}")),
        }
    }

    /// The string value of `--key`, or `default`.
    pub fn string(&self, key: &str, default: &str) -> String {
        self.values
            .get(key)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_nearest_rank() {
        let mut l = Latencies::default();
        for ns in [5_000, 1_000, 3_000, 2_000, 4_000] {
            l.push(ns);
        }
        assert_eq!(l.quantile_us(0.5), Some(3.0));
        assert_eq!(l.quantile_us(0.99), Some(5.0));
        assert_eq!(l.quantile_us(0.0), Some(1.0));
        assert_eq!(Latencies::default().quantile_us(0.5), None);
    }

    #[test]
    fn histogram_counts_each_sample_once_in_its_bucket() {
        let mut l = Latencies::default();
        for ns in [500, 1_000, 1_001, 7_000, 2_000_000] {
            l.push(ns);
        }
        // (..1], (1..2], (2..5], (5..10], ..., (1000..)
        assert_eq!(
            l.histogram(&JITTER_HISTOGRAM_EDGES_US),
            vec![2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1]
        );
    }

    #[test]
    fn monotonic_clock_advances() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(monotonic_ns() - a >= 2_000_000);
    }
}
