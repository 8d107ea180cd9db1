//! Closed-loop round trips, shared by the service and action workloads: the driver
//! (the calling thread) starts one, waits for it to end, starts the next, for warm-up +
//! window, and takes the window's edges itself, so the executor's CPU is the process
//! minus the driver. Also the idle window both the action and scaling workloads open
//! before their busy phase.

use super::publishing::{Edge, Window};
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
