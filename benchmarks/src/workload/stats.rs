//! The counters the subscription callbacks and the publisher loop share.

use crate::{monotonic_ns, Latencies};
use ros_env::rclrs_tokio_msgs::msg::rmw::BenchMessage;
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex,
};

/// What every subscription callback records.
pub struct Stats {
    /// Deliveries, summed over subscriptions.
    pub received: AtomicU64,
    /// True while the window is open.
    pub in_window: AtomicBool,
    latency: bool,
    latencies: Mutex<Latencies>,
}

impl Stats {
    /// Counters for a run; `latency` records latencies inside the window.
    pub fn new(latency: bool) -> Arc<Self> {
        Arc::new(Self {
            received: AtomicU64::new(0),
            in_window: AtomicBool::new(false),
            latency,
            latencies: Mutex::default(),
        })
    }

    /// Count one delivery.
    pub fn on_message(&self, msg: &BenchMessage) {
        self.on_arrival(msg.header.send_time_ns);
    }

    /// Count one arrival of something sent at `send_time_ns` (CLOCK_MONOTONIC): a
    /// message, or the response to a call sent then.
    pub fn on_arrival(&self, send_time_ns: i64) {
        self.received.fetch_add(1, Ordering::Relaxed);
        if self.latency && self.in_window.load(Ordering::Relaxed) {
            let ns = monotonic_ns() - send_time_ns;
            self.latencies.lock().unwrap().push(ns);
        }
    }

    /// The latencies recorded so far.
    pub fn latencies(&self) -> Latencies {
        self.latencies.lock().unwrap().clone()
    }
}
