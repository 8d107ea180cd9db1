//! Timer benchmarks in one process, printing one JSON line.
//!
//! ```text
//! timer_node --executor rclrs_tokio|rclrs_basic --rate-hz R [--seconds S] [--warmup-s W]
//! timer_node --executor ... --sim-speed X [--period-s P] [--seconds S] [--clock-hz H]
//! ```
//!
//! Without `--sim-speed`: a steady-clock timer at R Hz on a Worker; reports the rate it
//! achieved and the jitter of the period (|interval - period|).
//!
//! With `--sim-speed X`: a node with `use_sim_time:=true` and a node-time timer of period
//! P; another node publishes `/clock` at H Hz (wall), advancing X × 1/H seconds of ROS
//! time per message (X = 0 keeps publishing the same time: paused). Reports the fires
//! seen against the fires due, and the process CPU.

use rclrs::*;
use rclrs_tokio_benchmarks::{monotonic_ns, Args, Latencies, JITTER_HISTOGRAM_EDGES_US};
use rclrs_tokio_executor::CreateTokioExecutor;
use ros_env::builtin_interfaces::msg::Time as TimeMsg;
use ros_env::rosgraph_msgs::msg::Clock as ClockMsg;
use rustix::time::{clock_gettime, ClockId};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};

fn cpu_ns() -> i64 {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

fn main() {
    if let Err(err) = run() {
        eprintln!("timer_node: {err}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env();
    let executor_name = args.string("executor", "rclrs_tokio");
    let seconds: f64 = args.get("seconds", 3.0)?;
    let warmup: f64 = args.get("warmup-s", 0.5)?;
    let sim_speed: Option<f64> = match args.string("sim-speed", "").as_str() {
        "" => None,
        v => Some(
            v.parse()
                .map_err(|_| format!("--sim-speed: cannot parse {v:?}"))?,
        ),
    };
    let context = Context::default_from_env()?;
    let mut executor = match executor_name.as_str() {
        "rclrs_tokio" => context.create_tokio_executor(),
        "rclrs_basic" => context.create_basic_executor(),
        other => return Err(format!("--executor {other}: use rclrs_tokio or rclrs_basic").into()),
    };
    let fires: Arc<Mutex<Vec<i64>>> = Arc::default();
    let (stop_tx, stop_rx) = futures::channel::oneshot::channel::<()>();

    let result = if let Some(speed) = sim_speed {
        let period_s: f64 = args.get("period-s", 1.0)?;
        let clock_hz: f64 = args.get("clock-hz", 100.0)?;
        let node = executor.create_node(
            format!("timer_sim_{}", std::process::id())
                .as_str()
                .arguments(["--ros-args", "-p", "use_sim_time:=true"]),
        )?;
        let sink = Arc::clone(&fires);
        let _timer = node
            .create_timer_repeating(Duration::from_secs_f64(period_s).node_time(), move || {
                sink.lock().unwrap().push(monotonic_ns())
            })?;
        let clock_node =
            executor.create_node(format!("clock_pub_{}", std::process::id()).as_str())?;
        let clock_pub =
            clock_node.create_publisher::<ClockMsg>("/clock".keep_last(10).reliable())?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while clock_pub.get_subscription_count()? == 0 {
            if Instant::now() > deadline {
                return Err("the /clock subscription never matched".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let spinning = std::thread::spawn(move || {
            let errors = executor.spin(SpinOptions::default().until_promise_resolved(stop_rx));
            (executor, errors)
        });
        // Start ROS time at 1000 s, then advance it `speed` times wall time.
        let start_ns: i64 = 1_000_000_000_000;
        let publish = |ns: i64| {
            clock_pub.publish(ClockMsg {
                clock: TimeMsg {
                    sec: (ns / 1_000_000_000) as i32,
                    nanosec: (ns % 1_000_000_000) as u32,
                },
            })
        };
        publish(start_ns)?;
        std::thread::sleep(Duration::from_millis(200));
        fires.lock().unwrap().clear();
        let cpu0 = cpu_ns();
        let wall0 = Instant::now();
        let step = Duration::from_secs_f64(1.0 / clock_hz);
        let mut n = 0u64;
        let mut sim_ns = start_ns;
        while wall0.elapsed() < Duration::from_secs_f64(seconds) {
            n += 1;
            let due = wall0 + step * n as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            sim_ns = start_ns + (speed * wall0.elapsed().as_secs_f64() * 1e9) as i64;
            publish(sim_ns)?;
        }
        std::thread::sleep(Duration::from_millis(100));
        let wall = wall0.elapsed().as_secs_f64();
        let cpu = (cpu_ns() - cpu0) as f64 / 1e9;
        let _ = stop_tx.send(());
        let (_executor, _errors) = spinning.join().expect("spin thread");
        let expected = ((sim_ns - start_ns) as f64 / 1e9 / period_s).floor() as u64;
        let fired = fires.lock().unwrap().len();
        format!(
            "{{\"executor\": \"{executor_name}\", \"sim_speed\": {speed}, \"period_s\": {period_s}, \
             \"wall_s\": {wall:.3}, \"sim_s\": {:.3}, \"fires\": {fired}, \"expected_fires\": {expected}, \
             \"cpu_process_pct\": {:.2}}}",
            (sim_ns - start_ns) as f64 / 1e9,
            100.0 * cpu / wall,
        )
    } else {
        let rate_hz: f64 = args.get("rate-hz", 1000.0)?;
        let node = executor.create_node(format!("timer_rate_{}", std::process::id()).as_str())?;
        let worker = node.create_worker::<()>(());
        let recording = Arc::new(AtomicBool::new(false));
        let sink = Arc::clone(&fires);
        let rec = Arc::clone(&recording);
        let _timer = worker.create_timer_repeating(
            Duration::from_secs_f64(1.0 / rate_hz),
            move |_: &mut ()| {
                if rec.load(Ordering::Relaxed) {
                    sink.lock().unwrap().push(monotonic_ns());
                }
            },
        )?;
        let spinning = std::thread::spawn(move || {
            let errors = executor.spin(SpinOptions::default().until_promise_resolved(stop_rx));
            (executor, errors)
        });
        std::thread::sleep(Duration::from_secs_f64(warmup));
        let cpu0 = cpu_ns();
        let t0 = monotonic_ns();
        recording.store(true, Ordering::Relaxed);
        std::thread::sleep(Duration::from_secs_f64(seconds));
        recording.store(false, Ordering::Relaxed);
        let t1 = monotonic_ns();
        let cpu = (cpu_ns() - cpu0) as f64 / 1e9;
        let _ = stop_tx.send(());
        let (_executor, _errors) = spinning.join().expect("spin thread");
        let fires = fires.lock().unwrap();
        let wall = (t1 - t0) as f64 / 1e9;
        let period_ns = 1e9 / rate_hz;
        let mut jitter = Latencies::default();
        for pair in fires.windows(2) {
            jitter.push(((pair[1] - pair[0]) as f64 - period_ns).abs() as i64);
        }
        let q = |p: f64| {
            jitter
                .quantile_us(p)
                .map_or("null".into(), |v| format!("{v:.1}"))
        };
        format!(
            "{{\"executor\": \"{executor_name}\", \"rate_hz\": {rate_hz}, \"window_s\": {wall:.3}, \
             \"fires\": {}, \"expected_fires\": {}, \"timer_rate_hz\": {:.1}, \
             \"timer_jitter_p50_us\": {}, \"timer_jitter_p99_us\": {}, \"timer_jitter_max_us\": {}, \
             \"cpu_process_pct\": {:.2}, \"timer_jitter_hist\": {:?}}}",
            fires.len(),
            (wall * rate_hz).round() as u64,
            fires.len() as f64 / wall,
            q(0.5),
            q(0.99),
            q(1.0),
            100.0 * cpu / wall,
            jitter.histogram(&JITTER_HISTOGRAM_EDGES_US),
        )
    };
    println!("{result}");
    Ok(())
}
