//! A talker or listener for cross-process and rclpy interop tests.
//!
//! `interop_node --role talker --type std|bench --topic T --count N [--rate-hz R]`
//! publishes N messages once a subscriber is matched. `--role listener` subscribes and
//! prints one JSON line, `{"received": n, "first": .., "last": ..}`, after N messages
//! or `--timeout-s` seconds, and exits 0 only if all N arrived.

use clap::{Parser, ValueEnum};
use rclrs::*;
use rclrs_tokio_benchmarks::{cli, monotonic_ns, non_ros_args};
use ros_env::rclrs_tokio_msgs::msg::{BenchHeader, BenchMessage};
use ros_env::std_msgs::msg::String as StringMsg;
use serde_json::json;
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Role {
    Talker,
    Listener,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// std_msgs/String
    Std,
    /// rclrs_tokio_msgs/BenchMessage
    Bench,
}

/// The flags; ROS arguments are removed before parsing.
#[derive(Parser, Debug)]
#[command(
    name = "interop_node",
    about = "A talker or listener for interop tests"
)]
struct InteropArgs {
    #[arg(long, value_enum, default_value = "listener")]
    role: Role,
    /// The message type.
    #[arg(long = "type", value_enum, default_value = "std")]
    kind: Kind,
    #[arg(long, default_value = "interop")]
    topic: String,
    /// Messages to publish, or to wait for.
    #[arg(long, default_value_t = 10)]
    count: u64,
    /// The talker's rate.
    #[arg(long = "rate-hz", default_value_t = 100.0, value_parser = cli::positive)]
    rate_hz: f64,
    /// How long to wait for a match (talker) or for every message (listener).
    #[arg(long = "timeout-s", default_value_t = 20.0, value_parser = cli::positive)]
    timeout_s: f64,
}

fn main() {
    let args = InteropArgs::parse_from(non_ros_args());
    if let Err(err) = run(args) {
        eprintln!("interop_node: {err}");
        std::process::exit(2);
    }
}

fn run(args: InteropArgs) -> Result<(), Box<dyn std::error::Error>> {
    let InteropArgs {
        role,
        kind,
        topic,
        count,
        rate_hz,
        timeout_s,
    } = args;
    let timeout = Duration::from_secs_f64(timeout_s);
    let role_name = format!("{role:?}").to_lowercase();

    let context = Context::default_from_env()?;
    let mut executor = context.create_basic_executor();
    let node =
        executor.create_node(format!("interop_{role_name}_{}", std::process::id()).as_str())?;
    let qos = || topic.as_str().keep_last(1000).reliable();

    match (role, kind) {
        (Role::Talker, Kind::Std) => talk(&node, qos(), count, rate_hz, timeout, |seq| StringMsg {
            data: format!("hello {seq}"),
        }),
        (Role::Talker, Kind::Bench) => {
            talk(&node, qos(), count, rate_hz, timeout, |seq| BenchMessage {
                header: BenchHeader {
                    seq,
                    send_time_ns: monotonic_ns(),
                    publisher_id: std::process::id(),
                },
                payload: vec![seq as u8; 16],
            })
        }
        (Role::Listener, kind) => {
            // (received, first seq or text, last seq or text)
            let seen: Arc<Mutex<(u64, String, String)>> = Arc::default();
            let sink = Arc::clone(&seen);
            let record = move |label: String| {
                let mut s = sink.lock().unwrap();
                if s.0 == 0 {
                    s.1 = label.clone();
                }
                s.0 += 1;
                s.2 = label;
            };
            let _sub_std;
            let _sub_bench;
            if kind == Kind::Std {
                _sub_std = node.create_subscription(qos(), move |m: StringMsg| record(m.data))?;
            } else {
                _sub_bench = node.create_subscription(qos(), move |m: BenchMessage| {
                    let ok = m.payload.iter().all(|b| *b == m.header.seq as u8);
                    record(format!(
                        "{}{}",
                        m.header.seq,
                        if ok { "" } else { " (corrupt payload)" }
                    ))
                })?;
            }
            let deadline = Instant::now() + timeout;
            while seen.lock().unwrap().0 < count && Instant::now() < deadline {
                let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
            }
            let s = seen.lock().unwrap();
            println!("{}", json!({"received": s.0, "first": s.1, "last": s.2}));
            if s.0 < count {
                return Err(format!("received {} of {count} before the timeout", s.0).into());
            }
            Ok(())
        }
    }
}

/// Publish `count` messages `make(seq)` on `topic` at `rate_hz`, once a subscriber matched.
fn talk<'a, T: MessageIDL>(
    node: &Node,
    topic: impl Into<PublisherOptions<'a>>,
    count: u64,
    rate_hz: f64,
    timeout: Duration,
    make: impl Fn(u64) -> T,
) -> Result<(), Box<dyn std::error::Error>> {
    let publisher = node.create_publisher::<T>(topic)?;
    let deadline = Instant::now() + timeout;
    while publisher.get_subscription_count()? == 0 {
        if Instant::now() > deadline {
            return Err("no subscriber matched before the timeout".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for seq in 0..count {
        publisher.publish(make(seq))?;
        std::thread::sleep(Duration::from_secs_f64(1.0 / rate_hz));
    }
    // Reliable delivery of the tail before the publisher goes away.
    std::thread::sleep(Duration::from_millis(500));
    println!("{}", json!({ "published": count }));
    Ok(())
}
