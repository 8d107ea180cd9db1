//! One benchmark run in one process: a publisher thread and a subscription served by
//! the executor under test, printing one JSON line of metrics.
//!
//! ```text
//! bench_node --executor rclrs_tokio|rclrs_basic|raw_rcl
//!            [--payload BYTES] [--reliability reliable|best_effort] [--depth N]
//!            [--rate-hz R (0 = as fast as possible)] [--warmup-s S] [--seconds S]
//!            [--latency] [--callback worker|node] [--threads N]
//! ```
//!
//! Metrics are taken over the window after the warm-up. `cpu_process_pct` is the whole
//! process; `cpu_executor_pct` is the process minus the publisher thread (with a
//! publisher in the same process, Fast DDS delivers inside `publish()`, on that thread),
//! which is the executor's threads plus the middleware's own background threads.

use rclrs::*;
use rclrs_tokio_benchmarks::{monotonic_ns, raw_rcl, Args, Latencies};
use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
use ros_env::rclrs_tokio_msgs::msg::{BenchHeader, BenchMessage};
use rustix::time::{clock_gettime, ClockId};
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};

struct Stats {
    received: AtomicU64,
    in_window: AtomicBool,
    latency: bool,
    latencies: Mutex<Latencies>,
}

impl Stats {
    fn on_message(&self, msg: &BenchMessage) {
        self.received.fetch_add(1, Ordering::Relaxed);
        if self.latency && self.in_window.load(Ordering::Relaxed) {
            let ns = monotonic_ns() - msg.header.send_time_ns;
            self.latencies.lock().unwrap().push(ns);
        }
    }
}

/// What the publisher thread saw at the window's edges.
#[derive(Default, Clone, Copy)]
struct Edge {
    wall_ns: i64,
    process_cpu_ns: i64,
    publisher_cpu_ns: i64,
    sent: u64,
    received: u64,
}

fn cpu_ns(clock: ClockId) -> i64 {
    let t = clock_gettime(clock);
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

fn main() {
    if let Err(err) = run() {
        eprintln!("bench_node: {err}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env();
    let executor_name = args.string("executor", "rclrs_tokio");
    let payload: usize = args.get("payload", 0)?;
    let reliable = match args.string("reliability", "reliable").as_str() {
        "reliable" => true,
        "best_effort" => false,
        other => return Err(format!("--reliability {other}: use reliable or best_effort").into()),
    };
    let depth: u32 = args.get("depth", 1000)?;
    let rate_hz: f64 = args.get("rate-hz", 0.0)?;
    let warmup = Duration::from_secs_f64(args.get("warmup-s", 1.0)?);
    let window = Duration::from_secs_f64(args.get("seconds", 3.0)?);
    let latency: bool = args.get("latency", false)?;
    let node_callback = args.string("callback", "worker") == "node";
    let threads: usize = args.get("threads", 0)?;
    let topic = format!("bench_{}", std::process::id());

    let context = Context::default_from_env()?;
    let capture = raw_rcl::CaptureRuntime::default();
    let mut executor = match executor_name.as_str() {
        "rclrs_tokio" => {
            let mut options = TokioExecutorOptions::new();
            if threads > 0 {
                options = options.worker_threads(threads);
            }
            context.create_tokio_executor_with(options)?
        }
        "rclrs_basic" => context.create_basic_executor(),
        "raw_rcl" => context.create_executor(capture.clone()),
        other => return Err(format!("--executor {other} is not a Rust executor").into()),
    };
    let node =
        executor.create_node(format!("bench_{executor_name}_{}", std::process::id()).as_str())?;
    let qos = || {
        let options = topic.as_str().keep_last(depth);
        if reliable {
            options.reliable()
        } else {
            options.best_effort()
        }
    };
    let stats = Arc::new(Stats {
        received: AtomicU64::new(0),
        in_window: AtomicBool::new(false),
        latency,
        latencies: Mutex::new(Latencies::default()),
    });

    let worker = node.create_worker::<()>(());
    let _subscription = if node_callback && executor_name != "raw_rcl" {
        let stats = Arc::clone(&stats);
        Box::new(node.create_subscription(qos(), move |m: BenchMessage| stats.on_message(&m))?)
            as Box<dyn std::any::Any>
    } else {
        let stats = Arc::clone(&stats);
        Box::new(
            worker.create_subscription(qos(), move |_: &mut (), m: BenchMessage| {
                stats.on_message(&m)
            })?,
        ) as Box<dyn std::any::Any>
    };
    let publisher = node.create_publisher::<BenchMessage>(qos())?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while publisher.get_subscription_count()? == 0 {
        if Instant::now() > deadline {
            return Err("the subscription never matched".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    // The executor spins on its own thread, as in the rclcpp comparison.
    let stop = Arc::new(AtomicBool::new(false));
    let (stop_tx, stop_rx) = futures::channel::oneshot::channel::<()>();
    let mut stop_promise = Some(stop_rx);
    let spinning: std::thread::JoinHandle<Result<Executor, String>> = if executor_name == "raw_rcl"
    {
        let captured = capture
            .take_last_worker()
            .ok_or("the raw loop found no Worker")?;
        let stop = Arc::clone(&stop);
        let context = context.clone();
        std::thread::spawn(move || {
            raw_rcl::drain_loop(&context, captured, stop).map_err(|e| e.to_string())?;
            Ok(executor)
        })
    } else {
        let done = stop_promise.take().expect("one spin");
        std::thread::spawn(move || {
            let errors = executor.spin(SpinOptions::default().until_promise_resolved(done));
            match errors.first() {
                Some(err) => Err(err.to_string()),
                None => Ok(executor),
            }
        })
    };

    let publishing = {
        let stats = Arc::clone(&stats);
        std::thread::spawn(move || -> Result<(Edge, Edge, u64), RclrsError> {
            let mut msg = BenchMessage {
                header: BenchHeader::default(),
                payload: vec![0u8; payload],
            };
            let edge = |sent: u64| Edge {
                wall_ns: monotonic_ns(),
                process_cpu_ns: cpu_ns(ClockId::ProcessCPUTime),
                publisher_cpu_ns: cpu_ns(ClockId::ThreadCPUTime),
                sent,
                received: stats.received.load(Ordering::Relaxed),
            };
            let period = (rate_hz > 0.0).then(|| Duration::from_secs_f64(1.0 / rate_hz));
            let start = Instant::now();
            let window_start = start + warmup;
            let end = window_start + window;
            let (mut first, mut last) = (None, None);
            let mut seq = 0u64;
            loop {
                let now = Instant::now();
                if first.is_none() && now >= window_start {
                    first = Some(edge(seq));
                    stats.in_window.store(true, Ordering::Relaxed);
                }
                if now >= end {
                    stats.in_window.store(false, Ordering::Relaxed);
                    last = last.or(Some(edge(seq)));
                    break;
                }
                if let Some(period) = period {
                    let due = start + period.mul_f64(seq as f64);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                }
                msg.header.seq = seq;
                msg.header.send_time_ns = monotonic_ns();
                publisher.publish(&msg)?;
                seq += 1;
            }
            Ok((first.unwrap(), last.unwrap(), seq))
        })
    };
    let (first, last, total_sent) = publishing.join().expect("publisher thread panicked")?;

    // Let what is still queued arrive (reliable), then stop the executor.
    let mut settled = stats.received.load(Ordering::Relaxed);
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(50));
        let now = stats.received.load(Ordering::Relaxed);
        if now == settled || now >= total_sent {
            break;
        }
        settled = now;
    }
    stop.store(true, Ordering::Relaxed);
    let _ = stop_tx.send(());
    let executor = spinning.join().expect("spin thread panicked")?;
    let total_received = stats.received.load(Ordering::Relaxed);

    let wall_s = (last.wall_ns - first.wall_ns) as f64 / 1e9;
    let process_cpu = (last.process_cpu_ns - first.process_cpu_ns) as f64 / 1e9;
    let publisher_cpu = (last.publisher_cpu_ns - first.publisher_cpu_ns) as f64 / 1e9;
    let lat = stats.latencies.lock().unwrap();
    let dropped = total_sent.saturating_sub(total_received);
    let q = |p: f64| {
        lat.quantile_us(p)
            .map_or("null".to_string(), |v| format!("{v:.1}"))
    };
    println!(
        "{{\"executor\": \"{executor_name}\", \"payload\": {payload}, \"reliable\": {reliable}, \
         \"depth\": {depth}, \"rate_hz\": {rate_hz}, \"window_s\": {wall_s:.3}, \
         \"sent\": {total_sent}, \"received\": {total_received}, \"dropped\": {dropped}, \
         \"drop_pct\": {:.2}, \"sent_per_s\": {:.1}, \"received_per_s\": {:.1}, \
         \"cpu_process_pct\": {:.1}, \"cpu_executor_pct\": {:.1}, \"latency_samples\": {}, \
         \"latency_p50_us\": {}, \"latency_p99_us\": {}, \"latency_p999_us\": {}, \
         \"latency_max_us\": {}}}",
        100.0 * dropped as f64 / total_sent.max(1) as f64,
        (last.sent - first.sent) as f64 / wall_s,
        (last.received - first.received) as f64 / wall_s,
        100.0 * process_cpu / wall_s,
        100.0 * (process_cpu - publisher_cpu).max(0.0) / wall_s,
        lat.len(),
        q(0.5),
        q(0.99),
        q(0.999),
        q(1.0),
    );
    drop(executor);
    Ok(())
}
