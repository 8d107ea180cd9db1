//! A short node on the Tokio executor with one entity of each kind whose callbacks
//! ros2_tracing events cover, for the LTTng test (`test/test_ros2_tracing.py`).
//!
//! `trace_node --name N --count C` creates, on node N: a timer that publishes
//! `std_msgs/String` on `N/chatter` until C messages are out; a node subscription and a
//! Worker subscription to it; a fan-out subscription to it with a node callback and a
//! Worker callback; a `std_srvs/Trigger` service `N/trigger` and a client that calls it
//! once per message heard by the node subscription. It spins until every callback saw
//! C messages and C replies came back (or `--timeout-s` passes), then prints one JSON
//! line of what each callback saw, and exits 0 only if all of it arrived.
//!
//! ROS 2 tracing events come from the executor only while its switch is on
//! (`RCLRS_TOKIO_ROS2_TRACING=1`, or `--trace`, which calls
//! `rclrs_tokio_executor::set_ros2_tracing(true)`).

use clap::Parser;
use rclrs::*;
use rclrs_tokio_benchmarks::{cli, non_ros_args};
use rclrs_tokio_executor::{set_ros2_tracing, CreateFanoutSubscription, CreateTokioExecutor};
use ros_env::std_msgs::msg::String as StringMsg;
use ros_env::std_srvs::srv::{Trigger, Trigger_Request, Trigger_Response};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The flags; ROS arguments are removed before parsing.
#[derive(Parser, Debug)]
#[command(
    name = "trace_node",
    about = "One entity of each traced kind, for the LTTng test"
)]
struct TraceArgs {
    /// The node's name; topic and service names start with it.
    #[arg(long, default_value = "trace_node")]
    name: String,
    /// Messages the timer publishes (one per period).
    #[arg(long, default_value_t = 20)]
    count: u64,
    /// The timer's period.
    #[arg(long = "period-ms", default_value_t = 10.0, value_parser = cli::positive)]
    period_ms: f64,
    /// Switch the executor's ros2_tracing events on (as RCLRS_TOKIO_ROS2_TRACING=1 does).
    #[arg(long)]
    trace: bool,
    /// How long to wait for everything to arrive.
    #[arg(long = "timeout-s", default_value_t = 20.0, value_parser = cli::positive)]
    timeout_s: f64,
}

/// What each callback saw.
#[derive(Default)]
struct Seen {
    published: AtomicU64,
    node_subscription: AtomicU64,
    worker_subscription: AtomicU64,
    fanout_node: AtomicU64,
    fanout_worker: AtomicU64,
    requests: AtomicU64,
    replies: AtomicU64,
}

impl Seen {
    fn count(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    fn all_arrived(&self, count: u64) -> bool {
        [
            &self.node_subscription,
            &self.worker_subscription,
            &self.fanout_node,
            &self.fanout_worker,
            &self.replies,
        ]
        .iter()
        .all(|c| Self::count(c) >= count)
    }
}

fn bump(counter: &AtomicU64) -> u64 {
    counter.fetch_add(1, Ordering::Relaxed) + 1
}

fn main() {
    let args = TraceArgs::parse_from(non_ros_args());
    if let Err(err) = run(args) {
        eprintln!("trace_node: {err}");
        std::process::exit(2);
    }
}

fn run(args: TraceArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.trace {
        set_ros2_tracing(true);
    }
    let count = args.count;
    let context = Context::default_from_env()?;
    let mut executor = context.create_tokio_executor();
    let node = executor.create_node(args.name.as_str())?;
    let topic = format!("{}/chatter", args.name);
    let service_name = format!("{}/trigger", args.name);
    let seen = Arc::new(Seen::default());
    let qos = || topic.as_str().keep_last(1000).reliable();

    let publisher = node.create_publisher::<StringMsg>(qos())?;
    let subscribers = |p: &Publisher<StringMsg>| p.get_subscription_count().unwrap_or(0);
    let s = Arc::clone(&seen);
    let _timer = node.create_timer_repeating(
        Duration::from_secs_f64(args.period_ms / 1000.0),
        move || {
            // Publish once all three subscriptions are matched, C messages in all.
            if subscribers(&publisher) >= 3 && Seen::count(&s.published) < count {
                let seq = bump(&s.published);
                let _ = publisher.publish(StringMsg {
                    data: format!("message {seq}"),
                });
            }
        },
    )?;

    let s = Arc::clone(&seen);
    let _service =
        node.create_service::<Trigger, _>(service_name.as_str(), move |_: Trigger_Request| {
            Trigger_Response {
                success: true,
                message: format!("request {}", bump(&s.requests)),
            }
        })?;
    let client = node.create_client::<Trigger>(service_name.as_str())?;

    let s = Arc::clone(&seen);
    let commands = Arc::clone(executor.commands());
    let _node_subscription = node.create_subscription(qos(), move |_: StringMsg| {
        bump(&s.node_subscription);
        let replies = Arc::clone(&s);
        let reply: Result<Promise<Trigger_Response>, _> = client.call(Trigger_Request::default());
        if let Ok(reply) = reply {
            // The promise is not needed: the task counts the reply itself.
            drop(commands.run(async move {
                if reply.await.is_ok() {
                    bump(&replies.replies);
                }
            }));
        }
    })?;

    let worker = node.create_worker(0u64);
    let s = Arc::clone(&seen);
    let _worker_subscription =
        worker.create_subscription(qos(), move |heard: &mut u64, _: StringMsg| {
            *heard += 1;
            bump(&s.worker_subscription);
        })?;

    let fanout = node.create_fanout_subscription::<StringMsg>(qos())?;
    let s = Arc::clone(&seen);
    let _fanout_node = fanout.add_node_callback(move |_: &StringMsg| {
        bump(&s.fanout_node);
    });
    let s = Arc::clone(&seen);
    let _fanout_worker = fanout.add_callback(&worker, move |_: &mut u64, _: &StringMsg| {
        bump(&s.fanout_worker);
    });

    let deadline = Instant::now() + Duration::from_secs_f64(args.timeout_s);
    while !seen.all_arrived(count) && Instant::now() < deadline {
        let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
    }
    let c = Seen::count;
    println!(
        "{}",
        json!({
            "topic": format!("/{topic}"),
            "service": format!("/{service_name}"),
            "published": c(&seen.published),
            "node_subscription": c(&seen.node_subscription),
            "worker_subscription": c(&seen.worker_subscription),
            "fanout_node": c(&seen.fanout_node),
            "fanout_worker": c(&seen.fanout_worker),
            "requests": c(&seen.requests),
            "replies": c(&seen.replies),
        })
    );
    if !seen.all_arrived(count) {
        return Err("not every callback saw every message before the timeout".into());
    }
    Ok(())
}
