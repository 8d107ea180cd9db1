//! N subscriptions, each on its own topic, in one Worker: what an executor costs while
//! nothing happens, and what one message costs when N entities are registered.
//!
//! Phase 1 (idle): after a settling pause, a window with nothing published; reports
//! the process CPU as `idle_cpu_pct`. Phase 2: one publisher on the first topic at
//! `--rate-hz`; reports the executor's CPU per delivered message as `per_message_us`.

use super::publishing::{self, Schedule};
use super::round_trips;
use super::spinner::Setup;
use super::stats::Stats;
use super::stream;
use super::{Config, Report};
// The rmw-native message types: taken and published without a conversion copy, as
// rclcpp takes and publishes its native types.
use ros_env::rclrs_tokio_msgs::msg::rmw::BenchMessage;
use std::sync::{atomic::Ordering, Arc};
use std::time::Duration;

/// Run the scaling workload.
pub fn run(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let setup = Setup::new(config)?;
    let node = setup.executor.create_node(
        format!("bench_scaling_{}_{}", config.executor, std::process::id()).as_str(),
    )?;
    let stats = Stats::new(false);
    // One subscription per topic, all in one Worker (or node-level).
    let topics: Vec<String> = (0..config.subscriptions)
        .map(|i| format!("{}_{i}", config.topic))
        .collect();
    let one_worker = Config {
        workers: 1,
        ..config.clone()
    };
    let subscriptions = stream::subscribe(&node, &one_worker, &topics, &stats)?;
    let first_topic = format!("{}_0", config.topic);
    let publisher = node.create_publisher::<BenchMessage>(config.qos(&first_topic))?;
    publishing::wait_for_match("the first subscription", 1, || {
        publisher.get_subscription_count()
    })?;
    let spinner = setup.start()?;

    // Phase 1: idle.
    let idle = round_trips::idle_window(config.window);

    // Phase 2: one topic at the rate.
    let mut msg = stream::message(config);
    let published = publishing::publish_on_thread(
        Schedule::of(config, Duration::ZERO),
        Arc::clone(&stats),
        move |seq| {
            stream::stamp(&mut msg, seq);
            publisher.publish(&msg)
        },
    )?;
    publishing::settle(&stats.received, published.total_sent);
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;
    let w = published.window;
    let per_message_us = 1e6 * w.executor_cpu_s() / w.received().max(1) as f64;
    let report = Report::new()
        .text("executor", &config.executor)
        .text("workload", "scaling")
        .text("role", "both")
        .int("subscriptions", config.subscriptions as u64)
        .int("payload", config.payload as u64)
        .num("rate_hz", config.rate_hz, 1)
        .num("window_s", w.wall_s(), 3)
        .deliveries(published.total_sent, stats.received.load(Ordering::Relaxed))
        .num("sent_per_s", w.sent_per_s(), 1)
        .num("received_per_s", w.received_per_s(), 1)
        .num("cpu_process_pct", w.process_cpu_pct(), 1)
        .num("cpu_executor_pct", w.executor_cpu_pct(), 1)
        .num("idle_cpu_pct", idle.process_cpu_pct(), 2)
        .num("per_message_us", per_message_us, 2)
        .introspection(executor_stats.as_ref());
    drop(subscriptions);
    drop(executor);
    Ok(report)
}
