//! CPU-bound callbacks: two subscriptions on two topics, each callback burning
//! `--work-us` of its thread's CPU time, in one Worker (`--workers 1`: they must take
//! turns) or in two (`--workers 2`: they may run at once on two threads). The publisher
//! publishes on both topics at `--rate-hz` each; the result is the callbacks completed
//! per second.

use super::publishing::{self, Schedule};
use super::spinner::Setup;
use super::stats::Stats;
use super::stream;
use super::{Config, Report};
use crate::thread_cpu_ns;
// The rmw-native message types: taken and published without a conversion copy, as
// rclcpp takes and publishes its native types.
use ros_env::rclrs_tokio_msgs::msg::rmw::BenchMessage;
use std::sync::{atomic::Ordering, Arc};
use std::time::Duration;

/// Spin until the calling thread has used `work` more CPU time.
pub fn burn(work: Duration) {
    let until = thread_cpu_ns() + work.as_nanos() as i64;
    while thread_cpu_ns() < until {
        std::hint::spin_loop();
    }
}

/// Run the parallel workload.
pub fn run(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    if config.workers > 2 {
        return Err("--workers: the parallel workload has two subscriptions (1 or 2)".into());
    }
    let setup = Setup::new(config)?;
    let node = setup.executor.create_node(
        format!("bench_parallel_{}_{}", config.executor, std::process::id()).as_str(),
    )?;
    let stats = Stats::new(false);
    let topics = [format!("{}_a", config.topic), format!("{}_b", config.topic)];
    let workers: Vec<_> = (0..config.workers)
        .map(|_| node.create_worker::<()>(()))
        .collect();
    let mut subscriptions = Vec::new();
    for (i, topic) in topics.iter().enumerate() {
        let stats = Arc::clone(&stats);
        let work = config.work;
        subscriptions.push(workers[i % workers.len()].create_subscription(
            config.qos(topic),
            move |_: &mut (), _: BenchMessage| {
                burn(work);
                stats.received.fetch_add(1, Ordering::Relaxed);
            },
        )?);
    }
    let publishers = topics
        .iter()
        .map(|t| node.create_publisher::<BenchMessage>(config.qos(t)))
        .collect::<Result<Vec<_>, _>>()?;
    for publisher in &publishers {
        publishing::wait_for_match("the subscriptions", 1, || {
            publisher.get_subscription_count()
        })?;
    }
    let spinner = setup.start()?;

    let mut msg = stream::message(config);
    let published = publishing::publish_on_thread(
        Schedule::of(config, Duration::ZERO),
        Arc::clone(&stats),
        move |seq| {
            for publisher in &publishers {
                stream::stamp(&mut msg, seq);
                publisher.publish(&msg)?;
            }
            Ok::<(), rclrs::RclrsError>(())
        },
    )?;
    let expected = 2 * published.total_sent;
    publishing::settle(&stats.received, expected);
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;
    let w = published.window;
    let report = Report::new()
        .text("executor", &config.executor)
        .text("workload", "parallel")
        .text("role", "both")
        .int("workers", config.workers as u64)
        .int("work_us", config.work.as_micros() as u64)
        .int("payload", config.payload as u64)
        .num("rate_hz", config.rate_hz, 1)
        .num("window_s", w.wall_s(), 3)
        .deliveries(expected, stats.received.load(Ordering::Relaxed))
        .int("queued_at_close", w.queued_at_close(2))
        .num("sent_per_s", 2.0 * w.sent_per_s(), 1)
        .num("received_per_s", w.received_per_s(), 1)
        .num("cpu_process_pct", w.process_cpu_pct(), 1)
        .num("cpu_executor_pct", w.executor_cpu_pct(), 1)
        .introspection(executor_stats.as_ref());
    drop(subscriptions);
    drop(workers);
    drop(executor);
    Ok(report)
}
