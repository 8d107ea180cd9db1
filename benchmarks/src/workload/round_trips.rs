//! Closed-loop round trips, shared by the service and action workloads: the driver
//! (the calling thread) starts one, waits for it to end, starts the next, for warm-up +
//! window, and takes the window's edges itself, so the executor's CPU is the process
//! minus the driver. Also the idle window both the action and scaling workloads open
//! before their busy phase.

use super::publishing::{Edge, Window};
use super::report::Report;
use super::Config;
use crate::{interrupt, Latencies};
use std::time::{Duration, Instant};

/// What the driver did.
pub struct RoundTrips {
    /// The measured window (its edges count completed round trips).
    pub window: Window,
    /// Round trips completed, warm-up included.
    pub completed: u64,
    /// The round trips inside the window, in nanoseconds.
    pub latencies: Latencies,
}

impl RoundTrips {
    /// The keys every round-trip workload reports: `executor`, `workload`, the window,
    /// the round trips completed as both sent and received (a closed loop loses none;
    /// warm-up included, as the message workloads count), their rate, CPU and
    /// latencies. `payload` (bytes per request) where the workload has one. Callers add
    /// their own keys.
    pub fn report(&self, executor: &str, workload: &str, payload: Option<usize>) -> Report {
        let window = &self.window;
        let report = Report::new()
            .text("executor", executor)
            .text("workload", workload)
            .text("role", "both");
        let report = match payload {
            Some(bytes) => report.int("payload", bytes as u64),
            None => report,
        };
        report
            .num("window_s", window.wall_s(), 3)
            .deliveries(self.completed, self.completed)
            .num("sent_per_s", window.received_per_s(), 1)
            .num("received_per_s", window.received_per_s(), 1)
            .num("cpu_process_pct", window.process_cpu_pct(), 1)
            .num("cpu_executor_pct", window.executor_cpu_pct(), 1)
            .latencies(&self.latencies)
    }
}

/// Run `round_trip` (which returns its round trip in nanoseconds) back to back for the
/// warm-up and the window, or until interrupted.
pub fn drive(
    config: &Config,
    mut round_trip: impl FnMut(u64) -> Result<i64, String>,
) -> Result<RoundTrips, String> {
    let start = Instant::now();
    let (opens, closes) = (start + config.warmup, start + config.warmup + config.window);
    let mut first = None;
    let mut latencies = Latencies::default();
    let mut completed = 0u64;
    loop {
        let now = Instant::now();
        if first.is_none() && now >= opens {
            first = Some(Edge::now(completed, completed));
        }
        if now >= closes || interrupt::interrupted() {
            let last = Edge::now(completed, completed);
            let window = Window {
                first: first.unwrap_or(last),
                last,
            };
            return Ok(RoundTrips {
                window,
                completed,
                latencies,
            });
        }
        let rtt = round_trip(completed)?;
        if first.is_some() {
            latencies.push(rtt);
        }
        completed += 1;
    }
}

/// Settle for half a second, then measure a window of `length` in which the driver only
/// sleeps (cut short by a signal).
pub fn idle_window(length: Duration) -> Window {
    interrupt::sleep_until(Instant::now() + Duration::from_millis(500));
    let first = Edge::now(0, 0);
    interrupt::sleep_until(Instant::now() + length);
    Window {
        first,
        last: Edge::now(0, 0),
    }
}
