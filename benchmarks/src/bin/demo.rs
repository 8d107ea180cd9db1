//! `make bench` demo: a talker and a listener in one process, through rclrs on the real
//! rmw, printing what they did. The comparison harness replaces this as the main job.

use clap::Parser;
use rclrs::*;
use rclrs_tokio_benchmarks::{cli, monotonic_ns, non_ros_args, Latencies};
use ros_env::rclrs_tokio_msgs::msg::{BenchHeader, BenchMessage};
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

/// The flags; ROS arguments are removed before parsing.
#[derive(Parser, Debug)]
#[command(
    name = "demo",
    about = "A talker and a listener in one process, through rclrs"
)]
struct DemoArgs {
    /// Messages per second (above 0, at most 100000).
    #[arg(long = "rate-hz", default_value_t = 1000.0, value_parser = cli::up_to(100_000.0))]
    rate_hz: f64,
    /// How long to publish, in seconds (above 0, at most 3600).
    #[arg(long, default_value_t = 2.0, value_parser = cli::up_to(3600.0))]
    seconds: f64,
    /// Payload bytes.
    #[arg(long, default_value_t = 64)]
    payload: usize,
    #[arg(long, default_value = "rclrs_tokio_demo")]
    topic: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = DemoArgs::parse_from(non_ros_args());
    let (rate_hz, seconds) = (args.rate_hz, args.seconds);
    let (payload, topic) = (args.payload, args.topic);

    let context = Context::default_from_env()?;
    let mut executor = context.create_basic_executor();
    let node = executor.create_node("rclrs_tokio_demo")?;
    let publisher =
        node.create_publisher::<BenchMessage>(topic.as_str().keep_last(1000).reliable())?;

    let received = Arc::new(Mutex::new((0u64, Latencies::default())));
    let sink = Arc::clone(&received);
    let _subscription = node.create_subscription(
        topic.as_str().keep_last(1000).reliable(),
        move |msg: BenchMessage| {
            let mut r = sink.lock().unwrap();
            r.0 += 1;
            r.1.push(monotonic_ns() - msg.header.send_time_ns);
        },
    )?;

    let commands = Arc::clone(executor.commands());
    let total = (rate_hz * seconds).round() as u64;
    let talker = std::thread::spawn(move || -> Result<u64, RclrsError> {
        while publisher.get_subscription_count()? == 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let period = Duration::from_secs_f64(1.0 / rate_hz);
        let start = std::time::Instant::now();
        for seq in 0..total {
            let due = start + period * seq as u32;
            if let Some(wait) = due.checked_duration_since(std::time::Instant::now()) {
                std::thread::sleep(wait);
            }
            publisher.publish(BenchMessage {
                header: BenchHeader {
                    seq,
                    send_time_ns: monotonic_ns(),
                    publisher_id: 0,
                },
                payload: vec![0u8; payload],
            })?;
        }
        // Let the last messages arrive, then stop the executor.
        std::thread::sleep(Duration::from_millis(200));
        commands.halt_spinning();
        Ok(total)
    });

    let errors =
        executor.spin(SpinOptions::default().timeout(Duration::from_secs_f64(seconds + 30.0)));
    let sent = talker.join().expect("talker thread panicked")?;
    for err in errors {
        eprintln!("spin reported: {err}");
    }
    let r = received.lock().unwrap();
    println!(
        "demo: rmw={} published {sent} BenchMessage ({payload} B payload) at {rate_hz} Hz on /{topic}; \
         received {} ({} lost); latency p50 {:.1} us, p99 {:.1} us, max {:.1} us",
        std::env::var("RMW_IMPLEMENTATION").unwrap_or_else(|_| "rmw_fastrtps_cpp".into()),
        r.0,
        sent.saturating_sub(r.0),
        r.1.quantile_us(0.5).unwrap_or(f64::NAN),
        r.1.quantile_us(0.99).unwrap_or(f64::NAN),
        r.1.quantile_us(1.0).unwrap_or(f64::NAN),
    );
    Ok(())
}
