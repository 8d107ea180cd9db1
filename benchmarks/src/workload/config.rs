//! The command line every workload shares.

use crate::Args;
use std::time::Duration;

/// Which workload runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// A message stream (throughput, latency, CPU, fanout).
    Stream,
    /// Closed-loop service calls.
    Service,
    /// Many subscriptions on their own topics.
    Scaling,
    /// CPU-bound callbacks in 1 or 2 Workers.
    Parallel,
}

/// Which side of a stream this process plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Publisher and subscriptions in this process.
    Both,
    /// Only the subscriptions, served by the executor under test.
    Sub,
    /// Only the publisher.
    Pub,
}

impl Workload {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Stream => "stream",
            Workload::Service => "service",
            Workload::Scaling => "scaling",
            Workload::Parallel => "parallel",
        }
    }
}

impl Role {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Role::Both => "both",
            Role::Sub => "sub",
            Role::Pub => "pub",
        }
    }
}

/// Every flag of `bench_node`, parsed and checked.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--executor`: rclrs_tokio, rclrs_basic or raw_rcl.
    pub executor: String,
    /// `--workload`.
    pub workload: Workload,
    /// `--role` (stream only).
    pub role: Role,
    /// `--topic`; the base name of every topic and service of the run.
    pub topic: String,
    /// `--payload` in bytes.
    pub payload: usize,
    /// `--reliability reliable|best_effort`.
    pub reliable: bool,
    /// `--depth` (keep last).
    pub depth: u32,
    /// `--rate-hz`; 0 publishes as fast as possible.
    pub rate_hz: f64,
    /// `--warmup-s`.
    pub warmup: Duration,
    /// `--seconds`: the measured window.
    pub window: Duration,
    /// `--latency`: record per-message latency in the window.
    pub latency: bool,
    /// `--callback node`: node-level subscriptions instead of a Worker's.
    pub node_callback: bool,
    /// `--threads`: the Tokio executor's pool size (0: its default).
    pub threads: usize,
    /// `--subscriptions`.
    pub subscriptions: usize,
    /// `--workers`.
    pub workers: usize,
    /// `--work-us`: CPU time each parallel callback burns.
    pub work: Duration,
    /// `--idle-exit-s`: a subscriber process ends after this long without a message.
    pub idle_exit: Duration,
}

fn seconds(args: &Args, key: &str, default: f64) -> Result<Duration, String> {
    let value: f64 = args.get(key, default)?;
    Duration::try_from_secs_f64(value).map_err(|_| format!("--{key}: must be a finite number >= 0"))
}

impl Config {
    /// Parse and check the flags.
    pub fn from_args(args: &Args) -> Result<Self, String> {
        let workload = match args.string("workload", "stream").as_str() {
            "stream" => Workload::Stream,
            "service" => Workload::Service,
            "scaling" => Workload::Scaling,
            "parallel" => Workload::Parallel,
            other => {
                return Err(format!(
                    "--workload {other}: use stream, service, scaling or parallel"
                ))
            }
        };
        let role = match args.string("role", "both").as_str() {
            "both" => Role::Both,
            "sub" => Role::Sub,
            "pub" => Role::Pub,
            other => return Err(format!("--role {other}: use both, sub or pub")),
        };
        if role != Role::Both && workload != Workload::Stream {
            return Err(format!(
                "--role {}: only the stream workload runs across processes",
                role.name()
            ));
        }
        let reliable = match args.string("reliability", "reliable").as_str() {
            "reliable" => true,
            "best_effort" => false,
            other => {
                return Err(format!(
                    "--reliability {other}: use reliable or best_effort"
                ))
            }
        };
        let executor = args.string("executor", "rclrs_tokio");
        if !matches!(executor.as_str(), "rclrs_tokio" | "rclrs_basic" | "raw_rcl") {
            return Err(format!(
                "--executor {executor}: use rclrs_tokio, rclrs_basic or raw_rcl"
            ));
        }
        if executor == "raw_rcl" && matches!(workload, Workload::Service | Workload::Parallel) {
            return Err(format!(
                "--executor raw_rcl: the raw take loop has no {} workload",
                workload.name()
            ));
        }
        let rate_hz: f64 = args.get("rate-hz", 0.0)?;
        if !(rate_hz >= 0.0 && rate_hz.is_finite()) {
            return Err("--rate-hz: must be a finite number >= 0".into());
        }
        let subscriptions: usize = args.get("subscriptions", 1)?;
        let workers: usize = args.get("workers", 1)?;
        if subscriptions == 0 || workers == 0 {
            return Err("--subscriptions and --workers must be at least 1".into());
        }
        let topic = args.string("topic", &format!("bench_{}", std::process::id()));
        if role != Role::Both && args.string("topic", "").is_empty() {
            return Err("--topic: the sub and pub roles need the same --topic".into());
        }
        Ok(Self {
            executor,
            workload,
            role,
            topic,
            payload: args.get("payload", 0)?,
            reliable,
            depth: args.get("depth", 1000)?,
            rate_hz,
            warmup: seconds(args, "warmup-s", 1.0)?,
            window: seconds(args, "seconds", 3.0)?,
            latency: args.get("latency", false)?,
            node_callback: args.string("callback", "worker") == "node",
            threads: args.get("threads", 0)?,
            subscriptions,
            workers,
            work: Duration::from_micros(args.get("work-us", 200)?),
            idle_exit: seconds(args, "idle-exit-s", 1.0)?,
        })
    }

    /// The QoS of every topic in the run.
    pub fn qos<'a>(&self, topic: &'a str) -> rclrs::PrimitiveOptions<'a> {
        use rclrs::IntoPrimitiveOptions;
        let options = topic.keep_last(self.depth);
        if self.reliable {
            options.reliable()
        } else {
            options.best_effort()
        }
    }

    /// The time between two messages, or `None` for as fast as possible.
    pub fn period(&self) -> Option<Duration> {
        (self.rate_hz > 0.0).then(|| Duration::from_secs_f64(1.0 / self.rate_hz))
    }
}
