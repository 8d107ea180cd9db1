//! A robot's process: several nodes composed in one process, hearing what a robot's
//! drivers publish from a second process, with a control loop, a service and a parameter
//! query among them. It answers "what does one stream's p99 become when everything runs
//! at once, and what does the whole process cost?".
//!
//! # The graph (the C++ twin, `rclcpp_events_bridge/src/workload_robot_mix.cpp`, builds the same)
//!
//! Every name below is prefixed with `--topic` and `_` (`<t>_imu`, ...). Every topic
//! carries `rclrs_tokio_msgs/BenchMessage`, reliable, keep last with the stream's depth;
//! a message's `header.publisher_id` is its stream's index in [`STREAMS`], which is how
//! the four `/tf` publishers on one topic are told apart.
//!
//! | stream | topic | payload | rate | depth | subscribed on |
//! | --- | --- | --- | --- | --- | --- |
//! | `imu` | `<t>_imu` | 300 B | 400 Hz | 100 | node `<t>_imu`, node-level |
//! | `odometry` | `<t>_odom` | 700 B | 50 Hz | 100 | node `<t>_odometry`, node-level |
//! | `tf_0` … `tf_3` | `<t>_tf` (four publishers, one subscription) | 1 KB | 100 Hz each | 100 | node `<t>_tf`, node-level |
//! | `lidar` | `<t>_lidar` | 1 MB (a PointCloud2's size) | 10 Hz | 10 | node `<t>_lidar`, node-level |
//! | `camera` | `<t>_camera` | 1 MB | 30 Hz | 10 | node `<t>_camera`, node-level |
//! | `control` | `<t>_control` | 64 B | 1 kHz | 100 | node `<t>_control`, on a Worker of its own (payload [`ControlLoop`]); rclcpp: a MutuallyExclusive callback group of its own |
//!
//! Besides the streams, node `<t>_planner` serves `<t>_plan` (`BenchEcho`, 64 B
//! requests, called at 10 Hz) and declares the parameter `plan_horizon_s` (a double,
//! 2.0), which the drivers query at 1 Hz through the node's own
//! `/<t>_planner/get_parameters` service. Node-level callbacks run where each executor
//! runs them (rclrs: the node's own Worker; rclcpp: the node's default callback group),
//! all seven nodes on one executor.
//!
//! # The two processes
//!
//! - `--role sub`: the graph above on the executor under test. Its window opens
//!   `--warmup-s` after the first arrival and lasts `--seconds`; it then counts on until
//!   nothing arrived for `--idle-exit-s`. It reports, per stream, the messages received
//!   over the run, the rate in the window and the latency quantiles (from the sender's
//!   `CLOCK_MONOTONIC` stamp) in `streams`; the control stream's quantiles also as
//!   `latency_*` and `control_latency_*`; and the process's CPU over the window.
//! - `--role pub`: the drivers, one node `<t>_drivers` on `rclrs_tokio` (the same
//!   process for every executor under test), one thread per stream publishing at its
//!   rate for warm-up + window + 1 s, one calling the service and one querying the
//!   parameter for warm-up + window + 0.5 s (once a first call of each was answered). It
//!   reports per stream what it sent (`sent`, `publish_failed`), and for the two calls
//!   the calls sent, the answers received, their rate and round trips.
//!
//! The harness joins the two: each stream's `lost` is what was sent and never arrived
//! (for a call: never answered), and the run's `lost` their sum.
//!
//! The flags `--payload`, `--rate-hz`, `--depth` and `--reliability` do not apply: the
//! table fixes them.

use super::publishing::{self, Paced, Schedule, Step};
use super::spinner::Setup;
use super::stats::Stats;
use super::streams::Streams;
use super::{Config, ControlLoop, Report, Role};
use crate::{interrupt, monotonic_ns};
use rclrs::{IntoPrimitiveOptions, Node, PrimitiveOptions, RclrsError};
use ros_env::rcl_interfaces::msg::ParameterType;
use ros_env::rcl_interfaces::srv::{GetParameters, GetParameters_Request, GetParameters_Response};
use ros_env::rclrs_tokio_msgs::msg::rmw::{BenchHeader, BenchMessage};
use ros_env::rclrs_tokio_msgs::msg::BenchHeader as IdiomaticHeader;
use ros_env::rclrs_tokio_msgs::srv::{BenchEcho, BenchEcho_Request, BenchEcho_Response};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One stream of the mix: its name in the report, the node that hears it, its topic
/// (both after `<t>_`), and what and how often its driver publishes.
#[derive(Clone, Copy, Debug)]
pub struct MixStream {
    /// The stream's key in `streams`.
    pub name: &'static str,
    /// The subscribing node's name, after `<t>_`.
    pub node: &'static str,
    /// The topic, after `<t>_`.
    pub topic: &'static str,
    /// Payload bytes.
    pub payload: usize,
    /// Messages per second.
    pub rate_hz: f64,
    /// History depth (keep last), on both sides.
    pub depth: u32,
}

const fn stream(
    name: &'static str,
    node: &'static str,
    topic: &'static str,
    payload: usize,
    rate_hz: f64,
    depth: u32,
) -> MixStream {
    MixStream {
        name,
        node,
        topic,
        payload,
        rate_hz,
        depth,
    }
}

/// The mix's streams; a message's `header.publisher_id` is its stream's index here.
pub const STREAMS: [MixStream; 9] = [
    stream("imu", "imu", "imu", 300, 400.0, 100),
    stream("odometry", "odometry", "odom", 700, 50.0, 100),
    stream("tf_0", "tf", "tf", 1024, 100.0, 100),
    stream("tf_1", "tf", "tf", 1024, 100.0, 100),
    stream("tf_2", "tf", "tf", 1024, 100.0, 100),
    stream("tf_3", "tf", "tf", 1024, 100.0, 100),
    stream("lidar", "lidar", "lidar", 1 << 20, 10.0, 10),
    stream("camera", "camera", "camera", 1 << 20, 30.0, 10),
    stream("control", "control", "control", 64, 1000.0, 100),
];
/// The stream whose Worker is the control loop.
pub const CONTROL: &str = "control";
/// The node serving the service and holding the parameter, after `<t>_`.
pub const PLANNER: &str = "planner";
/// The parameter the drivers query.
pub const PARAMETER: &str = "plan_horizon_s";
/// The service's request payload, and how often it is called.
const SERVICE_PAYLOAD: usize = 64;
const SERVICE_HZ: f64 = 10.0;
/// How often the parameter is queried.
const PARAMETER_HZ: f64 = 1.0;
/// How long the drivers go on after their window: the subscriber's window opens at its
/// first arrival, a little after the drivers' own.
const TAIL: Duration = Duration::from_secs(1);
/// The callers stop earlier, so that their last calls reach a robot's process that is
/// still serving: it ends half a second after the streams stop.
const CALLS_TAIL: Duration = Duration::from_millis(500);
/// How long the drivers wait for the last answers.
const ANSWERS_LIMIT: Duration = Duration::from_secs(2);

/// Run the side of the mix `--role` names.
pub fn run(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    match config.role {
        Role::Sub => sub(config),
        Role::Pub => drivers(config),
        Role::Both => Err("--workload robot_mix: use --role sub and --role pub".into()),
    }
}

fn qos<'a>(topic: &'a str, depth: u32) -> PrimitiveOptions<'a> {
    topic.keep_last(depth).reliable()
}

fn name_of(config: &Config, suffix: &str) -> String {
    format!("{}_{suffix}", config.topic)
}

/// The nodes that hear the streams, in the order of [`STREAMS`] (each once).
fn subscribing_nodes() -> Vec<&'static str> {
    let mut nodes: Vec<&str> = STREAMS.iter().map(|s| s.node).collect();
    nodes.dedup();
    nodes
}

/// The robot's process: the graph of the module docs on the executor under test.
fn sub(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let setup = Setup::new(config)?;
    let streams = Streams::new(STREAMS.iter().map(|s| s.name), true);
    // Indexed by `header.publisher_id`.
    let by_id: Arc<Vec<Arc<Stats>>> = Arc::new(streams.all().to_vec());
    let record = move |msg: &BenchMessage| {
        if let Some(stats) = by_id.get(msg.header.publisher_id as usize) {
            stats.on_message(msg);
        }
    };
    let mut entities: Vec<Box<dyn Any>> = Vec::new();
    for node_suffix in subscribing_nodes() {
        let node = setup
            .executor
            .create_node(name_of(config, node_suffix).as_str())?;
        let mut topics: Vec<&MixStream> =
            STREAMS.iter().filter(|s| s.node == node_suffix).collect();
        topics.dedup_by_key(|s| s.topic);
        for s in topics {
            let topic = name_of(config, s.topic);
            let record = record.clone();
            if s.name == CONTROL {
                let worker = node.create_worker(ControlLoop::default());
                entities.push(Box::new(worker.create_subscription(
                    qos(&topic, s.depth),
                    move |state: &mut ControlLoop, msg: BenchMessage| {
                        state.cycles += 1;
                        record(&msg);
                    },
                )?));
                entities.push(Box::new(worker));
            } else {
                entities.push(Box::new(node.create_subscription(
                    qos(&topic, s.depth),
                    move |msg: BenchMessage| record(&msg),
                )?));
            }
        }
        entities.push(Box::new(node));
    }
    entities.extend(planner(&setup, config)?);

    let spinner = setup.start()?;
    let mut edges = Vec::new();
    let result = publishing::subscriber_window(
        config,
        || streams.total(),
        |open| streams.set_in_window(open),
        || edges.push(streams.counts()),
    );
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;
    let watched = result?;
    let window = watched.window;
    let now = streams.counts();
    let first = edges.first().unwrap_or(&now);
    let last = edges.get(1).unwrap_or(&now);
    let control = streams.get(CONTROL).latencies();
    let report = Report::new()
        .text("executor", &config.executor)
        .text("workload", "robot_mix")
        .text("role", "sub")
        .num("window_s", window.wall_s(), 3)
        .null("sent")
        .int("received", streams.total())
        .null("dropped")
        .null("drop_pct")
        .null("lost")
        .null("sent_per_s")
        .num("received_per_s", window.received_per_s(), 1)
        // No publisher here: the process is the executor and the middleware.
        .num("cpu_process_pct", window.process_cpu_pct(), 1)
        .num("cpu_executor_pct", window.process_cpu_pct(), 1)
        .latencies(&control)
        .latencies_as("control_latency", &control)
        .receive_threads(&watched.thread_seconds, window.wall_s(), window.received())
        .opt(
            "context_switches_per_msg",
            window.context_switches_per_msg(),
            3,
        )
        .nested("streams", streams.report(first, last, window.wall_s()))
        .introspection(executor_stats.as_ref());
    drop(entities);
    drop(executor);
    Ok(report)
}

/// Node `<t>_planner`: the service and the parameter (the handles keep them alive).
fn planner(
    setup: &Setup,
    config: &Config,
) -> Result<Vec<Box<dyn Any>>, Box<dyn std::error::Error>> {
    let node = setup
        .executor
        .create_node(name_of(config, PLANNER).as_str())?;
    let service = node.create_service::<BenchEcho, _>(
        name_of(config, "plan").as_str(),
        |request: BenchEcho_Request| BenchEcho_Response {
            header: request.header,
            payload: request.payload,
        },
    )?;
    let parameter = node
        .declare_parameter(PARAMETER)
        .default(2.0)
        .mandatory()
        .map_err(|e| format!("declaring {PARAMETER}: {e:?}"))?;
    Ok(vec![Box::new(service), Box::new(parameter), Box::new(node)])
}

/// A stream's driver: its publisher, and the publishes the middleware refused (counted,
/// not sent: see `stream::publisher`).
struct Driver {
    stream: MixStream,
    failed: Arc<AtomicU64>,
}

/// The drivers' process: one publisher thread per stream, one caller per call.
fn drivers(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let setup = Setup::new(config)?;
    let node = setup
        .executor
        .create_node(name_of(config, "drivers").as_str())?;
    let schedule = |rate_hz: f64, tail| Schedule {
        period: Some(Duration::from_secs_f64(1.0 / rate_hz)),
        warmup: config.warmup,
        window: config.window,
        tail,
    };
    let mut paced: Vec<Paced<RclrsError>> = Vec::new();
    let mut drivers = Vec::new();
    for (id, s) in STREAMS.iter().enumerate() {
        let topic = name_of(config, s.topic);
        let publisher = node.create_publisher::<BenchMessage>(qos(&topic, s.depth))?;
        publishing::wait_for_match(&topic, 1, || publisher.get_subscription_count())?;
        let failed = Arc::new(AtomicU64::new(0));
        let mut msg = BenchMessage {
            header: BenchHeader {
                publisher_id: id as u32,
                ..Default::default()
            },
            payload: rclrs::rosidl_runtime_rs::Sequence::new(s.payload),
        };
        let refused = Arc::clone(&failed);
        paced.push((
            schedule(s.rate_hz, TAIL),
            Stats::new(false),
            Box::new(move |seq| {
                msg.header.seq = seq - refused.load(Ordering::Relaxed);
                msg.header.send_time_ns = monotonic_ns();
                if publisher.publish(&msg).is_err() {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }),
        ));
        drivers.push(Driver { stream: *s, failed });
    }
    // The callers' first answers need the executor spinning.
    let spinner = setup.start()?;
    let callers = service_caller(&node, config)
        .and_then(|service| Ok((service, parameter_caller(&node, config)?)));
    let (
        (service_stats, service_step, service_client),
        (parameter_stats, parameter_step, query_client),
    ) = match callers {
        Ok(callers) => callers,
        Err(err) => {
            spinner.stop()?;
            return Err(err);
        }
    };
    paced.push((
        schedule(SERVICE_HZ, CALLS_TAIL),
        Arc::clone(&service_stats),
        service_step,
    ));
    paced.push((
        schedule(PARAMETER_HZ, CALLS_TAIL),
        Arc::clone(&parameter_stats),
        parameter_step,
    ));
    let published = publishing::publish_each_on_thread(paced)?;
    let (service_run, parameter_run) = (&published[STREAMS.len()], &published[STREAMS.len() + 1]);
    // Let the last answers arrive, and what the robot's process still asks for be sent
    // again.
    interrupt::sleep_until(Instant::now() + publishing::ACK_GRACE);
    let deadline = Instant::now() + ANSWERS_LIMIT;
    for (stats, run) in [
        (&service_stats, service_run),
        (&parameter_stats, parameter_run),
    ] {
        while stats.received.load(Ordering::Relaxed) < run.total_sent
            && Instant::now() < deadline
            && !interrupt::interrupted()
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let executor = spinner.stop()?;

    let mut streams = Report::new();
    let mut sent = 0;
    for (driver, run) in drivers.iter().zip(&published) {
        let failed = driver.failed.load(Ordering::Relaxed);
        sent += run.total_sent - failed;
        streams = streams.nested(
            driver.stream.name,
            Report::new()
                .int("sent", run.total_sent - failed)
                .int("publish_failed", failed),
        );
    }
    let calls = |stats: &Stats, run: &publishing::Published| {
        Report::new()
            .int("sent", run.total_sent)
            .int("received", stats.received.load(Ordering::Relaxed))
            .num("received_per_s", run.window.received_per_s(), 1)
            .latencies(&stats.latencies())
    };
    streams = streams
        .nested("service", calls(&service_stats, service_run))
        .nested("parameters", calls(&parameter_stats, parameter_run));
    let report = Report::new()
        .text("executor", &config.executor)
        .text("workload", "robot_mix")
        .text("role", "pub")
        .int("sent", sent)
        .num(
            "cpu_publisher_pct",
            published[0].window.process_cpu_pct(),
            1,
        )
        .nested("streams", streams);
    drop((service_client, query_client, node));
    drop(executor);
    Ok(report)
}

/// A caller's counters (answers and round trips), its step (one call), and its client,
/// kept beyond the step: a client dropped with its last call its answer.
type Caller = (Arc<Stats>, Step<RclrsError>, Box<dyn Any>);

/// Call (`call(done)`, whose answer sets `done`) every 100 ms until one is answered, for
/// at most 20 s: the drivers start once the whole call path is up. A server whose
/// request reader has matched can still answer before its response writer has matched
/// the client's reader, and that answer is lost; the first call of a fresh client is
/// often lost that way, which would count against the executor under test.
fn answered_once(
    what: &str,
    mut call: impl FnMut(Arc<AtomicBool>) -> Result<(), RclrsError>,
) -> Result<(), String> {
    let done = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done.load(Ordering::Relaxed) {
        if Instant::now() > deadline {
            return Err(format!("{what}: no call answered within 20 s"));
        }
        if interrupt::interrupted() {
            return Ok(());
        }
        call(Arc::clone(&done)).map_err(|e| format!("{what}: {e}"))?;
        interrupt::sleep_until(Instant::now() + Duration::from_millis(100));
    }
    Ok(())
}

/// A caller of `client`: it waits until one call is answered ([`answered_once`]), then
/// each step stamps `request` for its sequence number (`stamp` returns the send time, ns)
/// and counts an answer that `valid` accepts, with its round trip.
fn caller<S>(
    what: &str,
    client: rclrs::Client<S>,
    mut request: S::Request,
    mut stamp: impl FnMut(&mut S::Request, u64) -> i64 + Send + 'static,
    valid: fn(&S::Response) -> bool,
) -> Result<Caller, Box<dyn std::error::Error>>
where
    S: rclrs::rosidl_runtime_rs::Service,
    S::Request: Send,
{
    answered_once(what, |done| {
        client
            .call_then(&request, move |_: S::Response| {
                done.store(true, Ordering::Relaxed)
            })
            .map(drop)
    })?;
    let stats = Stats::new(true);
    let answered = Arc::clone(&stats);
    let calling = Arc::clone(&client);
    let step = move |seq| {
        let sent_ns = stamp(&mut request, seq);
        let answered = Arc::clone(&answered);
        calling
            .call_then(&request, move |response: S::Response| {
                if valid(&response) {
                    answered.on_arrival(sent_ns);
                }
            })
            .map(drop)
    };
    Ok((stats, Box::new(step), Box::new(client)))
}

/// The service's caller: each step sends one `BenchEcho` request stamped with its
/// sequence number and send time.
fn service_caller(node: &Node, config: &Config) -> Result<Caller, Box<dyn std::error::Error>> {
    let client = node.create_client::<BenchEcho>(name_of(config, "plan").as_str())?;
    let request = BenchEcho_Request {
        header: IdiomaticHeader::default(),
        payload: vec![0; SERVICE_PAYLOAD],
    };
    let stamp = |request: &mut BenchEcho_Request, seq| {
        request.header.seq = seq;
        request.header.send_time_ns = monotonic_ns();
        request.header.send_time_ns
    };
    caller(
        "the plan service",
        client,
        request,
        stamp,
        |_: &BenchEcho_Response| true,
    )
}

/// The parameter query: each step asks the planner for [`PARAMETER`]; an answer counts
/// when it holds it (a double).
fn parameter_caller(node: &Node, config: &Config) -> Result<Caller, Box<dyn std::error::Error>> {
    let service = format!("/{}/get_parameters", name_of(config, PLANNER));
    let client = node.create_client::<GetParameters>(service.as_str())?;
    let request = GetParameters_Request {
        names: vec![PARAMETER.to_string()],
    };
    let holds_it = |response: &GetParameters_Response| {
        matches!(response.values.as_slice(),
            [value] if value.type_ == ParameterType::PARAMETER_DOUBLE)
    };
    caller(&service, client, request, |_, _| monotonic_ns(), holds_it)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_is_named_once_and_the_four_tf_streams_share_one_topic() {
        assert_eq!(
            subscribing_nodes(),
            ["imu", "odometry", "tf", "lidar", "camera", "control"]
        );
        let tf: Vec<_> = STREAMS.iter().filter(|s| s.topic == "tf").collect();
        assert_eq!(tf.len(), 4);
        assert_eq!(STREAMS.iter().filter(|s| s.name == CONTROL).count(), 1);
    }
}
