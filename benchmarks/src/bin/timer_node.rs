//! Timer benchmarks in one process, printing one JSON line.
//!
//! ```text
//! timer_node --executor rclrs_tokio|rclrs_basic --rate-hz R [--timers N] [--seconds S] [--warmup-s W]
//!            [--dedicated-workers [--cpus C] [--fifo-priority P]]
//! timer_node --executor ... --sim-speed X [--period-s P] [--seconds S] [--clock-hz H]
//! ```
//!
//! Without `--sim-speed`: `--timers N` steady-clock timers (default one) at R Hz on a
//! Worker, their phases spread evenly over one period; reports the rate each achieved on
//! average, the jitter of their periods (|interval - period|, every timer's intervals
//! pooled) and the process CPU. Many timers show what the executor's timer handling
//! costs per timer (the `timers_1000` scenario). With `--dedicated-workers` (rclrs_tokio
//! only) that Worker runs on a thread of its own, as a control loop would, and the
//! report says what its placement got (`dedicated`).
//!
//! With `--sim-speed X`: a node with `use_sim_time:=true` and a node-time timer of period
//! P; another node publishes ROS time at H Hz (wall), advancing X × 1/H seconds of ROS
//! time per message (X = 0 keeps publishing the same time: paused), on a clock topic of
//! this process's own: the node's `/clock` is remapped to it, so neither another
//! process's `/clock` nor this one moves anybody else's time (`sim_clock.rs`). Reports
//! the fires seen against the fires due, and the process CPU.

use clap::Parser;
use rclrs::*;
use rclrs_tokio_benchmarks::sim_clock::{clock_message, PrivateClock};
use rclrs_tokio_benchmarks::workload::Report;
use rclrs_tokio_benchmarks::{
    cli, interrupt, monotonic_ns, non_ros_args, Latencies, JITTER_HISTOGRAM_EDGES_US,
};
use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
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

/// The executor under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
enum ExecutorName {
    RclrsTokio,
    RclrsBasic,
}

/// The flags (the C++ twin `timer_node_cpp` takes the same ones, but for the
/// dedicated-Worker flags, which only rclrs_tokio has). ROS arguments are removed before
/// parsing.
#[derive(Parser, Debug)]
#[command(
    name = "timer_node",
    about = "Timer benchmarks in one process, printing one JSON line"
)]
struct TimerArgs {
    /// The executor under test.
    #[arg(long, value_enum, default_value = "rclrs_tokio")]
    executor: ExecutorName,
    /// The measured window, in seconds.
    #[arg(long, default_value_t = 3.0, value_parser = cli::seconds)]
    seconds: f64,
    /// Seconds before the window opens (steady-clock timer).
    #[arg(long = "warmup-s", default_value_t = 0.5, value_parser = cli::seconds)]
    warmup_s: f64,
    /// The steady-clock timers' rate.
    #[arg(long = "rate-hz", default_value_t = 1000.0, value_parser = cli::positive)]
    rate_hz: f64,
    /// How many steady-clock timers (at least one).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    timers: u32,
    /// Follow a simulated /clock advancing this many times wall time (0: paused).
    #[arg(long = "sim-speed", value_parser = cli::seconds)]
    sim_speed: Option<f64>,
    /// The node-time timer's period in ROS seconds (with --sim-speed).
    #[arg(long = "period-s", default_value_t = 1.0, value_parser = cli::positive)]
    period_s: f64,
    /// /clock messages per wall second (with --sim-speed).
    #[arg(long = "clock-hz", default_value_t = 100.0, value_parser = cli::positive)]
    clock_hz: f64,
    /// `--dedicated-workers`, `--cpus`, `--fifo-priority`.
    #[command(flatten)]
    dedicated: cli::DedicatedArgs,
}

fn main() {
    let args = TimerArgs::parse_from(non_ros_args());
    if let Err(err) = interrupt::install()
        .map_err(Into::into)
        .and_then(|()| run(args))
    {
        eprintln!("timer_node: {err}");
        std::process::exit(2);
    }
    if let Some(code) = interrupt::exit_code() {
        std::process::exit(code);
    }
}

fn run(args: TimerArgs) -> Result<(), Box<dyn std::error::Error>> {
    let (seconds, warmup) = (args.seconds, args.warmup_s);
    if args.dedicated.dedicated_workers == Some(cli::DedicatedScope::ControlLoop) {
        return Err(
            "--dedicated-workers control_loop: timer_node has no control loop \
                    Worker; use --dedicated-workers"
                .into(),
        );
    }
    let context = Context::default_from_env()?;
    let dedicated = args
        .dedicated
        .options_for(args.executor == ExecutorName::RclrsTokio)?;
    let (mut executor, stats, executor_name) = match args.executor {
        ExecutorName::RclrsTokio => {
            let mut options = TokioExecutorOptions::new();
            if let Some(dedicated) = dedicated {
                options = options.dedicated_workers(dedicated);
            }
            let (executor, stats) = context.create_tokio_executor_with_stats(options)?;
            (executor, Some(stats), "rclrs_tokio")
        }
        ExecutorName::RclrsBasic => (context.create_basic_executor(), None, "rclrs_basic"),
    };
    let fires: Arc<Mutex<Vec<i64>>> = Arc::default();
    let (stop_tx, stop_rx) = futures::channel::oneshot::channel::<()>();

    let result = if let Some(speed) = args.sim_speed {
        let (period_s, clock_hz) = (args.period_s, args.clock_hz);
        let clock = PrivateClock::new("timer_node");
        let node = executor.create_node(
            format!("timer_sim_{}", std::process::id())
                .as_str()
                .arguments(clock.node_arguments()),
        )?;
        let sink = Arc::clone(&fires);
        let _timer = node
            .create_timer_repeating(Duration::from_secs_f64(period_s).node_time(), move || {
                sink.lock().unwrap().push(monotonic_ns())
            })?;
        let clock_node =
            executor.create_node(format!("clock_pub_{}", std::process::id()).as_str())?;
        let clock_pub =
            clock_node.create_publisher::<ClockMsg>(clock.topic().keep_last(10).reliable())?;
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
        let publish = |ns: i64| clock_pub.publish(clock_message(ns));
        publish(start_ns)?;
        std::thread::sleep(Duration::from_millis(200));
        fires.lock().unwrap().clear();
        let cpu0 = cpu_ns();
        let wall0 = Instant::now();
        let step = Duration::from_secs_f64(1.0 / clock_hz);
        let mut n = 0u64;
        let mut sim_ns = start_ns;
        while wall0.elapsed() < Duration::from_secs_f64(seconds) && !interrupt::interrupted() {
            n += 1;
            let due = wall0 + step * n as u32;
            if !interrupt::sleep_until(due) {
                break;
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
        Report::new()
            .text("executor", executor_name)
            .value("sim_speed", speed)
            .value("period_s", period_s)
            .num("wall_s", wall, 3)
            .num("sim_s", (sim_ns - start_ns) as f64 / 1e9, 3)
            .int("fires", fired as u64)
            .int("expected_fires", expected)
            .num("cpu_process_pct", 100.0 * cpu / wall, 2)
    } else {
        let (rate_hz, timers) = (args.rate_hz, args.timers as usize);
        let node = executor.create_node(format!("timer_rate_{}", std::process::id()).as_str())?;
        let worker = node.create_worker::<()>(());
        let recording = Arc::new(AtomicBool::new(false));
        let period = Duration::from_secs_f64(1.0 / rate_hz);
        let stamps: Vec<Arc<Mutex<Vec<i64>>>> = (0..timers).map(|_| Arc::default()).collect();
        let mut _timers = Vec::with_capacity(timers);
        for (i, sink) in stamps.iter().enumerate() {
            let sink = Arc::clone(sink);
            let rec = Arc::clone(&recording);
            _timers.push(worker.create_timer_repeating(period, move |_: &mut ()| {
                if rec.load(Ordering::Relaxed) {
                    sink.lock().unwrap().push(monotonic_ns());
                }
            })?);
            // A timer's phase is its creation time: spread them over one period.
            if i + 1 < timers {
                std::thread::sleep(period / timers as u32);
            }
        }
        let spinning = std::thread::spawn(move || {
            let errors = executor.spin(SpinOptions::default().until_promise_resolved(stop_rx));
            (executor, errors)
        });
        interrupt::sleep_until(Instant::now() + Duration::from_secs_f64(warmup));
        let cpu0 = cpu_ns();
        let t0 = monotonic_ns();
        recording.store(true, Ordering::Relaxed);
        interrupt::sleep_until(Instant::now() + Duration::from_secs_f64(seconds));
        recording.store(false, Ordering::Relaxed);
        let t1 = monotonic_ns();
        let cpu = (cpu_ns() - cpu0) as f64 / 1e9;
        let _ = stop_tx.send(());
        let (_executor, _errors) = spinning.join().expect("spin thread");
        let wall = (t1 - t0) as f64 / 1e9;
        let period_ns = 1e9 / rate_hz;
        let mut jitter = Latencies::default();
        let mut fired = 0;
        for stamps in &stamps {
            let stamps = stamps.lock().unwrap();
            fired += stamps.len();
            for pair in stamps.windows(2) {
                jitter.push(((pair[1] - pair[0]) as f64 - period_ns).abs() as i64);
            }
        }
        Report::new()
            .text("executor", executor_name)
            .value("rate_hz", rate_hz)
            .int("timers", timers as u64)
            .num("window_s", wall, 3)
            .int("fires", fired as u64)
            .int(
                "expected_fires",
                (wall * rate_hz * timers as f64).round() as u64,
            )
            .num("timer_rate_hz", fired as f64 / wall / timers as f64, 1)
            .opt("timer_jitter_p50_us", jitter.quantile_us(0.5), 1)
            .opt("timer_jitter_p99_us", jitter.quantile_us(0.99), 1)
            .opt("timer_jitter_max_us", jitter.quantile_us(1.0), 1)
            .num("cpu_process_pct", 100.0 * cpu / wall, 2)
            .value(
                "timer_jitter_hist",
                jitter.histogram(&JITTER_HISTOGRAM_EDGES_US),
            )
            .introspection(stats.as_ref())
    };
    let result = if interrupt::interrupted() {
        result.flag("interrupted", true)
    } else {
        result
    };
    println!("{}", result.to_json());
    Ok(())
}
