//! A stream of `BenchMessage`s from one publisher to N subscriptions on one topic,
//! spread over M Workers.
//!
//! - `--role both`: the publisher thread and the executor in one process. Fast DDS
//!   delivers inside `publish()`, so this measures the executor's push path.
//! - `--role sub` / `--role pub`: two processes sharing `--topic`. Delivery runs on the
//!   middleware's receive thread; the subscriber process measures its own window,
//!   which opens `--warmup-s` after the first arrival and lasts `--seconds`, then counts
//!   on until nothing arrived for `--idle-exit-s` and reports. The publisher publishes
//!   for warm-up + window + a tail and reports what it sent; the harness joins the two.

use super::publishing::{self, Edge, Schedule, Window};
use super::spinner::Setup;
use super::stats::Stats;
use super::{Config, Report, Role};
use crate::{interrupt, monotonic_ns};
use rclrs::{CreateBasicExecutor, Executor, Node};
use rclrs_tokio_executor::{CreateFanoutSubscription, FanoutCallback, FanoutSubscription};
// The rmw-native message types: taken and published without a conversion copy, as
// rclcpp takes and publishes its native types.
use ros_env::rclrs_tokio_msgs::msg::rmw::{BenchHeader, BenchMessage};
use std::any::Any;
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc,
};
use std::time::{Duration, Instant};

/// Create one subscription per entry of `topics`, round-robin over `config.workers`
/// Workers (node-level ones for `--callback node` with one Worker; raw_rcl and raw_push
/// always one Worker, the one their take loop drains). The returned handles keep them
/// alive.
pub fn subscribe(
    node: &Node,
    config: &Config,
    topics: &[String],
    stats: &Arc<Stats>,
) -> Result<Vec<Box<dyn Any>>, rclrs::RclrsError> {
    if config.shared_subscription {
        return subscribe_shared(node, config, &topics[0], stats);
    }
    let raw = matches!(config.executor.as_str(), "raw_rcl" | "raw_push");
    let mut handles: Vec<Box<dyn Any>> = Vec::new();
    if config.node_callback && config.workers == 1 && !raw {
        for topic in topics {
            let stats = Arc::clone(stats);
            handles.push(Box::new(
                node.create_subscription(config.qos(topic), move |m: BenchMessage| {
                    stats.on_message(&m)
                })?,
            ));
        }
        return Ok(handles);
    }
    let workers: Vec<_> = (0..if raw { 1 } else { config.workers })
        .map(|_| node.create_worker::<()>(()))
        .collect();
    for (i, topic) in topics.iter().enumerate() {
        let stats = Arc::clone(stats);
        handles.push(Box::new(workers[i % workers.len()].create_subscription(
            config.qos(topic),
            move |_: &mut (), m: BenchMessage| stats.on_message(&m),
        )?));
    }
    handles.extend(workers.into_iter().map(|w| Box::new(w) as Box<dyn Any>));
    Ok(handles)
}

/// `--shared-subscription`: one fan-out subscription on `topic` with
/// `config.subscriptions` callbacks, round-robin over `config.workers` Workers (on the
/// node for `--callback node` with one Worker).
fn subscribe_shared(
    node: &Node,
    config: &Config,
    topic: &str,
    stats: &Arc<Stats>,
) -> Result<Vec<Box<dyn Any>>, rclrs::RclrsError> {
    let on_node = config.node_callback && config.workers == 1;
    let workers: Vec<_> = (0..if on_node { 0 } else { config.workers.max(1) })
        .map(|_| node.create_worker::<()>(()))
        .collect();
    let fanout = match workers.first() {
        Some(worker) if config.fanout_on_worker => {
            worker.create_fanout_subscription::<BenchMessage>(config.qos(topic))?
        }
        _ => node.create_fanout_subscription::<BenchMessage>(config.qos(topic))?,
    };
    let mut handles: Vec<Box<dyn Any>> = vec![Box::new(fanout.clone())];
    if on_node {
        for _ in 0..config.subscriptions {
            let stats = Arc::clone(stats);
            handles.push(Box::new(
                fanout.add_node_callback(move |m: &BenchMessage| stats.on_message(m)),
            ));
        }
        return Ok(handles);
    }
    for i in 0..config.subscriptions {
        let stats = Arc::clone(stats);
        handles.push(Box::new(fanout.add_callback(
            &workers[i % workers.len()],
            move |_: &mut (), m: &BenchMessage| stats.on_message(m),
        )));
    }
    handles.extend(workers.into_iter().map(|w| Box::new(w) as Box<dyn Any>));
    Ok(handles)
}

/// A fan-out subscription's messages taken, and what its callbacks dropped (summed),
/// when `handles` came from `subscribe_shared`.
fn fanout_counts(handles: &[Box<dyn Any>]) -> Option<(u64, u64)> {
    let taken = handles
        .iter()
        .find_map(|h| h.downcast_ref::<FanoutSubscription<BenchMessage>>())?
        .taken();
    let dropped = handles
        .iter()
        .filter_map(|h| h.downcast_ref::<FanoutCallback<BenchMessage>>())
        .map(|c| c.dropped())
        .sum();
    Some((taken, dropped))
}

/// With a fan-out subscription: `fanout_taken` (messages taken from rcl, once each) and
/// `fanout_dropped` (messages its callbacks lost to a full Worker queue, summed).
fn with_fanout_counts(report: Report, handles: &[Box<dyn Any>]) -> Report {
    match fanout_counts(handles) {
        Some((taken, dropped)) => report
            .int("fanout_taken", taken)
            .int("fanout_dropped", dropped),
        None => report,
    }
}

/// Run the stream in the role `config.role` names.
pub fn run(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    match config.role {
        Role::Both => both(config),
        Role::Sub => sub(config),
        Role::Pub => publisher(config),
    }
}

fn header(config: &Config) -> Report {
    Report::new()
        .text("executor", &config.executor)
        .text("workload", "stream")
        .text("role", config.role.name())
        .int("payload", config.payload as u64)
        .flag("reliable", config.reliable)
        .int("depth", config.depth)
        .num("rate_hz", config.rate_hz, 1)
        .int("subscriptions", config.subscriptions as u64)
        .int("workers", config.workers as u64)
        .flag("shared_subscription", config.shared_subscription)
        .flag("fanout_on_worker", config.fanout_on_worker)
}

/// A message with `--payload` bytes.
pub fn message(config: &Config) -> BenchMessage {
    BenchMessage {
        header: BenchHeader::default(),
        payload: rclrs::rosidl_runtime_rs::Sequence::new(config.payload),
    }
}

/// Number and time-stamp `msg` just before it is published.
pub fn stamp(msg: &mut BenchMessage, seq: u64) {
    msg.header.seq = seq;
    msg.header.send_time_ns = monotonic_ns();
}

/// The executor, a node, its counters, and the handles keeping `--subscriptions`
/// subscriptions on `--topic` alive.
type Subscribed = (Setup, Node, Arc<Stats>, Vec<Box<dyn Any>>);

fn subscribed(config: &Config, name: &str) -> Result<Subscribed, Box<dyn std::error::Error>> {
    let setup = Setup::new(config)?;
    let node = setup
        .executor
        .create_node(format!("{name}_{}_{}", config.executor, std::process::id()).as_str())?;
    let stats = Stats::new(config.latency);
    let topics = vec![config.topic.clone(); config.subscriptions];
    let handles = subscribe(&node, config, &topics, &stats)?;
    Ok((setup, node, stats, handles))
}

fn both(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let (setup, node, stats, subscriptions) = subscribed(config, "bench")?;
    let publisher = node.create_publisher::<BenchMessage>(config.qos(&config.topic))?;
    publishing::wait_for_match("the subscriptions", config.rcl_subscriptions(), || {
        publisher.get_subscription_count()
    })?;
    let spinner = setup.start()?;
    let mut msg = message(config);
    let published = publishing::publish_on_thread(
        Schedule::of(config, Duration::ZERO),
        Arc::clone(&stats),
        move |seq| {
            stamp(&mut msg, seq);
            publisher.publish(&msg)
        },
    )?;
    let expected = published.total_sent * config.subscriptions as u64;
    publishing::settle(&stats.received, expected);
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;
    let received = stats.received.load(Ordering::Relaxed);
    let w = published.window;
    let report = header(config)
        .num("window_s", w.wall_s(), 3)
        .deliveries(expected, received)
        .int(
            "queued_at_close",
            w.queued_at_close(config.subscriptions as u64),
        )
        .num("sent_per_s", w.sent_per_s(), 1)
        .num("received_per_s", w.received_per_s(), 1)
        .num("cpu_process_pct", w.process_cpu_pct(), 1)
        .num("cpu_executor_pct", w.executor_cpu_pct(), 1)
        .opt("context_switches_per_msg", w.context_switches_per_msg(), 3)
        .introspection(executor_stats.as_ref());
    Ok(finish(report, &stats, subscriptions, executor))
}

fn publisher(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    // A publisher needs a node, not a spinning executor.
    let context = rclrs::Context::default_from_env()?;
    let executor = context.create_basic_executor();
    let node = executor.create_node(format!("bench_pub_{}", std::process::id()).as_str())?;
    let publisher = node.create_publisher::<BenchMessage>(config.qos(&config.topic))?;
    publishing::wait_for_match("the subscriber process", config.rcl_subscriptions(), || {
        publisher.get_subscription_count()
    })?;
    // The subscriber's window opens at its first arrival, a little after ours.
    let schedule = Schedule::of(config, config.publish_tail);
    let (in_window, received) = (AtomicBool::new(false), AtomicU64::new(0));
    let mut msg = message(config);
    // A reliable writer whose history is full of samples a slow reader has not yet
    // acknowledged gives up after its blocking time and `publish` fails: the message
    // was not sent. Count those and go on; the subscriber's rate is what is measured.
    let mut refused = 0u64;
    let mut first_refusal = None;
    let published = publishing::publish(schedule, &in_window, &received, |seq| {
        stamp(&mut msg, seq - refused);
        if let Err(err) = publisher.publish(&msg) {
            refused += 1;
            first_refusal.get_or_insert(err);
        }
        Ok::<(), rclrs::RclrsError>(())
    })?;
    if refused == published.total_sent {
        return Err(format!(
            "every publish failed: {}",
            first_refusal.map_or(String::new(), |e| e.to_string())
        )
        .into());
    }
    if config.reliable {
        // A sample lost on the way (two_hosts_netem_*) is sent again only while its
        // writer exists.
        interrupt::sleep_until(Instant::now() + publishing::ACK_GRACE);
    }
    Ok(header(config)
        .int("sent", published.total_sent - refused)
        .int("publish_failed", refused)
        .num(
            "sent_per_s",
            (published.total_sent - refused) as f64 / published.elapsed_s.max(1e-9),
            1,
        )
        .num("cpu_publisher_pct", published.window.process_cpu_pct(), 1))
}

fn sub(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let (setup, _node, stats, subscriptions) = subscribed(config, "bench_sub")?;
    let spinner = setup.start()?;
    let result = publishing::subscriber_window(
        config,
        || stats.received.load(Ordering::Relaxed),
        |open| stats.in_window.store(open, Ordering::Relaxed),
        || {},
    )
    .and_then(|watched| {
        // The publisher stopped before the window closed (little arrived in it, nothing
        // after it): the window is not a measure.
        let w = watched.window;
        if !interrupt::interrupted()
            && watched.after_window == 0
            && window_starved(w.first, w.last, config)
        {
            return Err("the publisher stopped before the window ended".to_string());
        }
        Ok(watched)
    });
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;
    let watched = result?;
    let window = watched.window;
    let report = header(config)
        .num("window_s", window.wall_s(), 3)
        .null("sent")
        .int("received", stats.received.load(Ordering::Relaxed))
        .null("dropped")
        .null("drop_pct")
        .null("queued_at_close")
        .null("sent_per_s")
        .num("received_per_s", window.received_per_s(), 1)
        // No publisher here: the process is the executor and the middleware.
        .num("cpu_process_pct", window.process_cpu_pct(), 1)
        .num("cpu_executor_pct", window.process_cpu_pct(), 1)
        .receive_threads(&watched.thread_seconds, window.wall_s(), window.received())
        .opt(
            "context_switches_per_msg",
            window.context_switches_per_msg(),
            3,
        )
        .introspection(executor_stats.as_ref());
    Ok(finish(report, &stats, subscriptions, executor))
}

/// The end of a subscriber's report: the latencies and the fan-out's counts; then the
/// subscriptions are dropped, before the executor they live on.
fn finish(
    report: Report,
    stats: &Stats,
    subscriptions: Vec<Box<dyn Any>>,
    executor: Executor,
) -> Report {
    let report = report.latencies(&stats.latencies());
    let report = with_fanout_counts(report, &subscriptions);
    drop(subscriptions);
    drop(executor);
    report
}

/// At a paced rate, a window that received less than a tenth of what the rate
/// promises saw the publisher stop early.
fn window_starved(first: Edge, last: Edge, config: &Config) -> bool {
    let window = Window { first, last };
    config.rate_hz > 0.0
        && window.received_per_s() < 0.1 * config.rate_hz * config.subscriptions as f64
}
