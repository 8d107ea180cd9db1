//! Shared pieces of the benchmark and test nodes: a clock all processes agree on,
//! latency statistics, the command line without ROS arguments, SIGINT/SIGTERM handling
//! ([`interrupt`]), and the reliability suite.
#![warn(missing_docs)]

pub mod cli;
mod ffi;
pub mod interrupt;
pub mod raw_push;
pub mod raw_rcl;
pub mod sim_clock;
pub mod stress;
pub mod thread_cpu;
pub mod workload;

use hdrhistogram::Histogram;

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

/// Whether `error` is the `Timeout` a timed spin (or an rcl wait) ends with, rather than
/// a fault.
pub fn is_timeout(error: &rclrs::RclrsError) -> bool {
    matches!(
        error,
        rclrs::RclrsError::RclError {
            code: rclrs::RclReturnCode::Timeout,
            ..
        }
    )
}

/// Upper edges (µs) of the timer jitter histogram (`timer_jitter_hist`), shared with the
/// C++ timer node and the harness.
pub const JITTER_HISTOGRAM_EDGES_US: [f64; 10] =
    [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];

/// Latency samples in nanoseconds: an HDR histogram (3 significant digits, so a
/// quantile is exact to 0.1%), plus exact counts per jitter bucket.
#[derive(Debug, Clone)]
pub struct Latencies {
    histogram: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        Self {
            // 1 ns to an hour at 3 significant digits; a longer sample counts as an hour.
            histogram: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid bounds and significant digits"),
        }
    }
}

impl Latencies {
    /// Record one sample; a negative one (clock skew) counts as zero, one over an hour
    /// as an hour.
    pub fn push(&mut self, ns: i64) {
        self.histogram.saturating_record(ns.max(0) as u64);
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.histogram.len() as usize
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.histogram.is_empty()
    }

    /// How many samples fall at or below each upper edge (µs) and above the previous
    /// one; a last count for those above every edge. A sample counts at the midpoint of
    /// its histogram bucket (exact below 2 µs, within 0.1% above).
    pub fn histogram(&self, upper_edges_us: &[f64]) -> Vec<u64> {
        let mut counts = vec![0u64; upper_edges_us.len() + 1];
        for bucket in self.histogram.iter_recorded() {
            let ns = self.histogram.median_equivalent(bucket.value_iterated_to());
            let us = ns as f64 / 1000.0;
            counts[upper_edges_us.partition_point(|&edge| edge < us)] += bucket.count_at_value();
        }
        counts
    }

    /// The `q` quantile (0.0..=1.0) in microseconds; `None` when empty. The maximum
    /// (`q` = 1) is the largest sample's bucket.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.histogram.is_empty() {
            return None;
        }
        let ns = self.histogram.value_at_quantile(q.clamp(0.0, 1.0));
        Some(self.histogram.median_equivalent(ns) as f64 / 1000.0)
    }
}

/// The command line without the ROS arguments (`--ros-args ... --`), program name
/// first, for `clap`'s `parse_from`.
pub fn non_ros_args() -> Vec<String> {
    // Arguments that are not valid C strings cannot be ROS arguments: keep them all
    // and let the parser reject what it does not know.
    rclrs::extract_non_ros_args(std::env::args()).unwrap_or_else(|_| std::env::args().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_exact_to_a_tenth_of_a_percent() {
        let mut l = Latencies::default();
        for ns in [5_000, 1_000, 3_000, 2_000, 4_000] {
            l.push(ns);
        }
        let near = |got: Option<f64>, want: f64| {
            let got = got.unwrap();
            assert!((got - want).abs() <= want * 0.001, "{got} vs {want}");
        };
        near(l.quantile_us(0.5), 3.0);
        near(l.quantile_us(0.99), 5.0);
        near(l.quantile_us(1.0), 5.0);
        near(l.quantile_us(0.0), 1.0);
        assert_eq!(Latencies::default().quantile_us(0.5), None);
        l.push(-7);
        assert_eq!(l.len(), 6);
        assert_eq!(l.quantile_us(0.0), Some(0.0));
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
