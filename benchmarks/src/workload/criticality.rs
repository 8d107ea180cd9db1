//! Mixed criticality in one process: does the control loop survive the perception
//! callback?
//!
//! # The graph (the C++ twin, `rclcpp_events_bridge/src/workload_criticality.cpp`, builds the same)
//!
//! One node, `bench_mc_<executor>_<pid>`, with two Workers (rclcpp: two
//! MutuallyExclusive callback groups), and two publishers on two threads of their own
//! in the same process:
//!
//! | Worker | topic | published | callback |
//! | --- | --- | --- | --- |
//! | perception (payload `()`) | `<t>_burn` (reliable, depth 10) | `--burn-rate-hz` (200: every 5 ms), 0 B | burns `--work-us` (4,000) of its thread's CPU time, then counts itself |
//! | control (payload [`ControlLoop`]) | `<t>_control` (reliable, depth 100) | `--rate-hz` (1,000), 0 B | records the latency from the sender's stamp |
//!
//! So the perception Worker wants 80 % of a core, and the control stream's latency says
//! how much of that it has to wait for. With `--dedicated-workers control_loop` (and
//! `--fifo-priority 80`) rclrs_tokio runs the control Worker on a thread of its own.
//!
//! Reports the control stream as `latency_*`, `control_latency_*`, `received_per_s`,
//! `dropped`; the burn's achieved rate (`burn_rate_hz`: burn callbacks finished per
//! second in the window) against what was offered (`burn_offered_hz`); and the process's
//! CPU. `cpu_executor_pct` is the process minus the control publisher's thread (the burn
//! publisher's 200 messages a second stay in it).

use super::parallel::burn;
use super::publishing::{self, Paced, Schedule, Step};
use super::spinner::Setup;
use super::stats::Stats;
use super::stream;
use super::{Config, ControlLoop, Report};
use rclrs::{IntoPrimitiveOptions, RclrsError};
use ros_env::rclrs_tokio_msgs::msg::rmw::BenchMessage;
use std::sync::{atomic::Ordering, Arc};
use std::time::Duration;

/// The burning topic's depth: a perception Worker that falls behind loses its oldest
/// frames, and its rate says so.
const BURN_DEPTH: u32 = 10;
/// The control topic's depth.
const CONTROL_DEPTH: u32 = 100;

/// Run the mixed-criticality workload.
pub fn run(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let setup = Setup::new(config)?;
    let node = setup
        .executor
        .create_node(format!("bench_mc_{}_{}", config.executor, std::process::id()).as_str())?;
    let (burn_topic, control_topic) = (
        format!("{}_burn", config.topic),
        format!("{}_control", config.topic),
    );
    let burns = Stats::new(false);
    let control = Stats::new(config.latency);

    let perception = node.create_worker::<()>(());
    let counted = Arc::clone(&burns);
    let work = config.work;
    let burn_subscription = perception.create_subscription(
        burn_topic.as_str().keep_last(BURN_DEPTH).reliable(),
        move |_: &mut (), _: BenchMessage| {
            burn(work);
            counted.received.fetch_add(1, Ordering::Relaxed);
        },
    )?;
    let control_worker = node.create_worker(ControlLoop::default());
    let heard = Arc::clone(&control);
    let control_subscription = control_worker.create_subscription(
        control_topic.as_str().keep_last(CONTROL_DEPTH).reliable(),
        move |state: &mut ControlLoop, msg: BenchMessage| {
            state.cycles += 1;
            heard.on_message(&msg);
        },
    )?;
    let burn_publisher = node
        .create_publisher::<BenchMessage>(burn_topic.as_str().keep_last(BURN_DEPTH).reliable())?;
    let control_publisher = node.create_publisher::<BenchMessage>(
        control_topic.as_str().keep_last(CONTROL_DEPTH).reliable(),
    )?;
    for (topic, publisher) in [
        (&burn_topic, &burn_publisher),
        (&control_topic, &control_publisher),
    ] {
        publishing::wait_for_match(topic, 1, || publisher.get_subscription_count())?;
    }
    let spinner = setup.start()?;

    let stepping = |publisher: rclrs::Publisher<BenchMessage>| {
        let mut msg = stream::message(config);
        Box::new(move |seq| {
            stream::stamp(&mut msg, seq);
            publisher.publish(&msg)
        }) as Step<RclrsError>
    };
    let burn_schedule = Schedule {
        period: Some(Duration::from_secs_f64(1.0 / config.burn_rate_hz)),
        ..Schedule::of(config, Duration::ZERO)
    };
    let paced: Vec<Paced<RclrsError>> = vec![
        (
            Schedule::of(config, Duration::ZERO),
            Arc::clone(&control),
            stepping(control_publisher),
        ),
        (burn_schedule, Arc::clone(&burns), stepping(burn_publisher)),
    ];
    let published = publishing::publish_each_on_thread(paced)?;
    let (control_run, burn_run) = (&published[0], &published[1]);
    publishing::settle(&control.received, control_run.total_sent);
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;

    let w = control_run.window;
    let latencies = control.latencies();
    let report = Report::new()
        .text("executor", &config.executor)
        .text("workload", "mixed_criticality")
        .text("role", "both")
        .num("rate_hz", config.rate_hz, 1)
        .num("burn_offered_hz", config.burn_rate_hz, 1)
        .int("work_us", config.work.as_micros() as u64)
        .num("window_s", w.wall_s(), 3)
        .deliveries(
            control_run.total_sent,
            control.received.load(Ordering::Relaxed),
        )
        .int("queued_at_close", w.queued_at_close(1))
        .num("sent_per_s", w.sent_per_s(), 1)
        .num("received_per_s", w.received_per_s(), 1)
        .num("burn_rate_hz", burn_run.window.received_per_s(), 1)
        .num("cpu_process_pct", w.process_cpu_pct(), 1)
        .num("cpu_executor_pct", w.executor_cpu_pct(), 1)
        .opt("context_switches_per_msg", w.context_switches_per_msg(), 3)
        .latencies(&latencies)
        .latencies_as("control_latency", &latencies)
        .introspection(executor_stats.as_ref());
    drop((burn_subscription, control_subscription));
    drop((perception, control_worker, node));
    drop(executor);
    Ok(report)
}
