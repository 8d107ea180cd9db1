//! A talker or listener for cross-process and rclpy interop tests.
//!
//! `interop_node --role talker --type std|bench --topic T --count N [--rate-hz R]`
//! publishes N messages once a subscriber is matched. `--role listener` subscribes and
//! prints one JSON line, `{"received": n, "first": .., "last": ..}`, after N messages
//! or `--timeout-s` seconds, and exits 0 only if all N arrived.

use rclrs::*;
use rclrs_tokio_benchmarks::{monotonic_ns, Args};
use ros_env::rclrs_tokio_msgs::msg::{BenchHeader, BenchMessage};
use ros_env::std_msgs::msg::String as StringMsg;
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

fn main() {
    if let Err(err) = run() {
        eprintln!("interop_node: {err}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env();
    let role = args.string("role", "listener");
    let kind = args.string("type", "std");
    let topic = args.string("topic", "interop");
    let count: u64 = args.get("count", 10)?;
    let rate_hz: f64 = args.get("rate-hz", 100.0)?;
    let timeout = Duration::from_secs_f64(args.get("timeout-s", 20.0)?);

    let context = Context::default_from_env()?;
    let mut executor = context.create_basic_executor();
    let node = executor.create_node(format!("interop_{role}_{}", std::process::id()).as_str())?;
    let qos = || topic.as_str().keep_last(1000).reliable();

    match (role.as_str(), kind.as_str()) {
        ("talker", "std") => {
            let publisher = node.create_publisher::<StringMsg>(qos())?;
            talk(
                count,
                rate_hz,
                timeout,
                || publisher.get_subscription_count(),
                |seq| {
                    publisher.publish(StringMsg {
                        data: format!("hello {seq}"),
                    })
                },
            )
        }
        ("talker", "bench") => {
            let publisher = node.create_publisher::<BenchMessage>(qos())?;
            talk(
                count,
                rate_hz,
                timeout,
                || publisher.get_subscription_count(),
                |seq| {
                    publisher.publish(BenchMessage {
                        header: BenchHeader {
                            seq,
                            send_time_ns: monotonic_ns(),
                            publisher_id: std::process::id(),
                        },
                        payload: vec![seq as u8; 16],
                    })
                },
            )
        }
        ("listener", kind) => {
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
            if kind == "std" {
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
            println!(
                "{{\"received\": {}, \"first\": {:?}, \"last\": {:?}}}",
                s.0, s.1, s.2
            );
            if s.0 < count {
                return Err(format!("received {} of {count} before the timeout", s.0).into());
            }
            Ok(())
        }
        (role, kind) => Err(format!("unknown --role {role} / --type {kind}").into()),
    }
}

fn talk(
    count: u64,
    rate_hz: f64,
    timeout: Duration,
    matched: impl Fn() -> Result<usize, RclrsError>,
    publish: impl Fn(u64) -> Result<(), RclrsError>,
) -> Result<(), Box<dyn std::error::Error>> {
    let deadline = Instant::now() + timeout;
    while matched()? == 0 {
        if Instant::now() > deadline {
            return Err("no subscriber matched before the timeout".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for seq in 0..count {
        publish(seq)?;
        std::thread::sleep(Duration::from_secs_f64(1.0 / rate_hz));
    }
    // Reliable delivery of the tail before the publisher goes away.
    std::thread::sleep(Duration::from_millis(500));
    println!("{{\"published\": {count}}}");
    Ok(())
}
