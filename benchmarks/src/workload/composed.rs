//! Composed nodes: how many nodes can one process hold, and what does each cost?
//!
//! # The graph (the C++ twin, `rclcpp_events_bridge/src/workload_composed.cpp`, builds the same)
//!
//! `--nodes N` nodes `bench_nodes_<executor>_<pid>_<i>` on the executor under test, in a
//! ring: node i subscribes (node-level, `--reliability`/`--depth`) to `<t>_<i>` and
//! publishes on `<t>_<(i + 1) mod N>`, so every node has one subscription, one publisher
//! and, in phase 2, one timer.
//!
//! - Phase 1 (idle): after a settling pause, a window of `--seconds` with nothing
//!   published and no timer: `idle_cpu_pct` (the process's CPU) and `idle_threads`.
//! - Phase 2 (load): each node gets a `--timer-hz` (10 Hz) timer, and one publisher
//!   thread publishes `--rate-hz` (100) messages a second on every topic, one topic after
//!   the other (N × 100 publishes a second, spread evenly): `cpu_process_pct`,
//!   `cpu_executor_pct` (the process minus the publisher thread, which in one process
//!   also delivers), `threads` (the process's threads as the window closes, the
//!   publisher's gone, as in phase 1), the received
//!   rate and drops, and `timer_rate_hz` (each timer's mean rate over the phase).

use super::publishing::{self, Schedule};
use super::round_trips;
use super::spinner::Setup;
use super::stats::Stats;
use super::stream;
use super::{Config, Report};
use ros_env::rclrs_tokio_msgs::msg::rmw::BenchMessage;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The process's threads now (entries of `/proc/self/task`; 0 where it cannot be read).
pub fn thread_count() -> u64 {
    std::fs::read_dir("/proc/self/task").map_or(0, |tasks| tasks.count() as u64)
}

/// Run the composed-nodes workload.
pub fn run(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let setup = Setup::new(config)?;
    let n = config.nodes;
    let stats = Stats::new(false);
    let mut nodes = Vec::with_capacity(n);
    let mut subscriptions = Vec::with_capacity(n);
    let mut publishers = Vec::with_capacity(n);
    let topic = |i: usize| format!("{}_{i}", config.topic);
    for i in 0..n {
        let node = setup.executor.create_node(
            format!("bench_nodes_{}_{}_{i}", config.executor, std::process::id()).as_str(),
        )?;
        let heard = Arc::clone(&stats);
        subscriptions.push(
            node.create_subscription(config.qos(&topic(i)), move |msg: BenchMessage| {
                heard.on_message(&msg)
            })?,
        );
        publishers.push(node.create_publisher::<BenchMessage>(config.qos(&topic((i + 1) % n)))?);
        nodes.push(node);
    }
    for (i, publisher) in publishers.iter().enumerate() {
        publishing::wait_for_match(&topic((i + 1) % n), 1, || {
            publisher.get_subscription_count()
        })?;
    }
    let spinner = setup.start()?;

    // Phase 1: idle.
    let idle = round_trips::idle_window(config.window);
    let idle_threads = thread_count();

    // Phase 2: a timer per node, and every topic at the rate.
    let fires = Arc::new(AtomicU64::new(0));
    let timers = nodes
        .iter()
        .map(|node| {
            let fires = Arc::clone(&fires);
            node.create_timer_repeating(config.timer_period, move || {
                fires.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let timers_started = Instant::now();
    let mut msg = stream::message(config);
    let schedule = Schedule {
        period: Some(Duration::from_secs_f64(1.0 / (config.rate_hz * n as f64))),
        ..Schedule::of(config, Duration::ZERO)
    };
    let published = publishing::publish_on_thread(schedule, Arc::clone(&stats), move |seq| {
        stream::stamp(&mut msg, seq);
        publishers[seq as usize % n].publish(&msg)
    })?;
    // The window has just closed; the publisher thread has ended, as in phase 1.
    let threads = thread_count();
    let timer_s = timers_started.elapsed().as_secs_f64();
    let timer_fires = fires.load(Ordering::Relaxed);
    publishing::settle(&stats.received, published.total_sent);
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;
    let w = published.window;
    let report = Report::new()
        .text("executor", &config.executor)
        .text("workload", "nodes")
        .text("role", "both")
        .int("nodes", n as u64)
        .num("rate_hz", config.rate_hz, 1)
        .num("timer_hz", 1.0 / config.timer_period.as_secs_f64(), 1)
        .int("payload", config.payload as u64)
        .num("window_s", w.wall_s(), 3)
        .deliveries(published.total_sent, stats.received.load(Ordering::Relaxed))
        .int("queued_at_close", w.queued_at_close(1))
        .num("sent_per_s", w.sent_per_s(), 1)
        .num("received_per_s", w.received_per_s(), 1)
        .num("cpu_process_pct", w.process_cpu_pct(), 1)
        .num("cpu_executor_pct", w.executor_cpu_pct(), 1)
        .opt("context_switches_per_msg", w.context_switches_per_msg(), 3)
        .num("idle_cpu_pct", idle.process_cpu_pct(), 3)
        .int("idle_threads", idle_threads)
        .int("threads", threads)
        .num(
            "timer_rate_hz",
            timer_fires as f64 / timer_s.max(1e-9) / n as f64,
            2,
        )
        .introspection(executor_stats.as_ref());
    drop(timers);
    drop(subscriptions);
    drop(nodes);
    drop(executor);
    Ok(report)
}
