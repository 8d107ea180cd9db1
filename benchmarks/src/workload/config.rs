//! The command line every workload shares: `clap` parses it ([`BenchArgs`]), then
//! [`Config::from_args`] checks what depends on more than one flag.

use clap::{Parser, ValueEnum};
use rclrs_tokio_executor::DedicatedWorkers;
use std::time::Duration;

/// Which workload runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Workload {
    /// A message stream (throughput, latency, CPU, fanout).
    Stream,
    /// Closed-loop service calls.
    Service,
    /// Closed-loop action goals (goal to result), after an idle window.
    Action,
    /// Many subscriptions on their own topics.
    Scaling,
    /// CPU-bound callbacks in 1 or 2 Workers.
    Parallel,
    /// A robot's process: several nodes hearing sensor streams, a control loop, a
    /// service and a parameter query from a second process ([`super::robot_mix`]).
    RobotMix,
    /// A CPU-bound Worker beside a 1 kHz control stream on another ([`super::criticality`]).
    MixedCriticality,
    /// `--nodes` composed nodes, each with a subscription and a timer ([`super::composed`]).
    Nodes,
}

/// Which side of a stream this process plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
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
            Workload::Action => "action",
            Workload::Scaling => "scaling",
            Workload::Parallel => "parallel",
            Workload::RobotMix => "robot_mix",
            Workload::MixedCriticality => "mixed_criticality",
            Workload::Nodes => "nodes",
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

/// The executor under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ExecutorName {
    /// `rclrs_tokio_executor`.
    RclrsTokio,
    /// rclrs's basic executor.
    RclrsBasic,
    /// The wait-set take loop of [`crate::raw_rcl`] (stream and scaling only).
    RawRcl,
    /// The push-driven take loop of [`crate::raw_push`] (stream and scaling only).
    RawPush,
}

/// `--reliability`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Reliability {
    /// Reliable.
    Reliable,
    /// Best effort.
    BestEffort,
}

/// `--callback`: where the subscriptions live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CallbackLevel {
    /// On a Worker of the node.
    Worker,
    /// On the node itself.
    Node,
}

/// The flags of `bench_node` (the C++ twin `bench_node_cpp` takes the same ones). ROS
/// arguments (`--ros-args ... --`) are removed before parsing.
#[derive(Parser, Clone, Debug)]
#[command(
    name = "bench_node",
    about = "One benchmark run, printing one JSON line of metrics"
)]
pub struct BenchArgs {
    /// The executor under test.
    #[arg(long, value_enum, default_value = "rclrs_tokio")]
    pub executor: ExecutorName,
    /// The workload.
    #[arg(long, value_enum, default_value = "stream")]
    pub workload: Workload,
    /// Which side of a stream this process plays (stream only).
    #[arg(long, value_enum, default_value = "both")]
    pub role: Role,
    /// The base name of every topic and service of the run (default bench_<pid>; the
    /// sub and pub roles need the same one).
    #[arg(long)]
    pub topic: Option<String>,
    /// Payload bytes.
    #[arg(long, default_value_t = 0)]
    pub payload: usize,
    /// QoS reliability.
    #[arg(long, value_enum, default_value = "reliable")]
    pub reliability: Reliability,
    /// QoS depth (keep last).
    #[arg(long, default_value_t = 1000)]
    pub depth: u32,
    /// Messages per second; 0 publishes as fast as possible.
    #[arg(long = "rate-hz", default_value_t = 0.0, value_parser = crate::cli::seconds)]
    pub rate_hz: f64,
    /// Seconds before the window opens.
    #[arg(long = "warmup-s", default_value_t = 1.0, value_parser = crate::cli::seconds)]
    pub warmup_s: f64,
    /// The measured window, in seconds.
    #[arg(long, default_value_t = 3.0, value_parser = crate::cli::seconds)]
    pub seconds: f64,
    /// Record per-message latency in the window.
    #[arg(long)]
    pub latency: bool,
    /// Where the subscriptions live.
    #[arg(long, value_enum, default_value = "worker")]
    pub callback: CallbackLevel,
    /// The Tokio executor's pool size (0: its default).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Subscriptions (fanout).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub subscriptions: u32,
    /// Workers the subscriptions are spread over.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub workers: u32,
    /// CPU time each parallel (or mixed_criticality burn) callback burns, in microseconds.
    #[arg(long = "work-us", default_value_t = 200)]
    pub work_us: u64,
    /// mixed_criticality: messages per second on the burning Worker's topic.
    #[arg(long = "burn-rate-hz", default_value_t = 200.0, value_parser = crate::cli::positive)]
    pub burn_rate_hz: f64,
    /// nodes: how many nodes the process composes.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub nodes: u32,
    /// nodes: each node's timer rate.
    #[arg(long = "timer-hz", default_value_t = 10.0, value_parser = crate::cli::positive)]
    pub timer_hz: f64,
    /// A subscriber process ends after this many seconds without a message.
    #[arg(long = "idle-exit-s", default_value_t = 1.0, value_parser = crate::cli::seconds)]
    pub idle_exit_s: f64,
    /// A publisher process (stream `--role pub`) goes on publishing this long after its
    /// window, so that the subscriber's window, which opens at its first arrival, ends
    /// while messages still flow.
    #[arg(long = "publish-tail-s", default_value_t = 1.0, value_parser = crate::cli::seconds)]
    pub publish_tail_s: f64,
    /// Record where each message's time goes (rclrs_tokio only): the report gets a
    /// `stages` object, from warm-up to the end of the window.
    #[arg(long = "stage-tracing")]
    pub stage_tracing: bool,
    /// Publish the executor's introspection (`ExecutorStats::publish_on`) on
    /// `<topic>_executor_stats` every this many milliseconds (rclrs_tokio only; 0, the
    /// default: no publication): set beside a run without it, what watching costs.
    #[arg(long = "stats-period-ms", default_value_t = 0)]
    pub stats_period_ms: u64,
    /// `--dedicated-workers`, `--cpus`, `--fifo-priority`.
    #[command(flatten)]
    pub dedicated: crate::cli::DedicatedArgs,
    /// How long a streaming Worker watches its mailbox before parking, in µs
    /// (rclrs_tokio's `linger` option; default 0, off).
    #[arg(long = "linger-us", default_value_t = 0)]
    pub linger_us: u64,
    /// Let Worker tasks move between the pool's threads as their load says
    /// (rclrs_tokio's `follow_load` option; default off).
    #[arg(long = "follow-load")]
    pub follow_load: bool,
    /// One fan-out subscription (`rclrs_tokio_executor::FanoutSubscription`) with
    /// `--subscriptions` callbacks over `--workers` Workers, instead of that many
    /// subscriptions: each message is taken once (rclrs_tokio and rclrs_basic).
    #[arg(long = "shared-subscription")]
    pub shared_subscription: bool,
    /// With `--shared-subscription`: create the fan-out on the first Worker
    /// (`Worker::create_fanout_subscription`), which then takes and runs its own
    /// callbacks in the take, instead of on the node (a hub Worker of its own).
    #[arg(long = "fanout-on-worker")]
    pub fanout_on_worker: bool,
}

impl ExecutorName {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            ExecutorName::RclrsTokio => "rclrs_tokio",
            ExecutorName::RclrsBasic => "rclrs_basic",
            ExecutorName::RawRcl => "raw_rcl",
            ExecutorName::RawPush => "raw_push",
        }
    }
}

/// Every flag of `bench_node`, parsed and checked.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--executor`: rclrs_tokio, rclrs_basic, raw_rcl or raw_push.
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
    /// `--work-us`: CPU time each parallel (or burn) callback burns.
    pub work: Duration,
    /// `--burn-rate-hz`: mixed_criticality's burning topic.
    pub burn_rate_hz: f64,
    /// `--nodes`.
    pub nodes: usize,
    /// `--timer-hz`: each composed node's timer.
    pub timer_period: Duration,
    /// `--idle-exit-s`: a subscriber process ends after this long without a message.
    pub idle_exit: Duration,
    /// `--publish-tail-s`.
    pub publish_tail: Duration,
    /// `--stage-tracing`.
    pub stage_tracing: bool,
    /// `--stats-period-ms`: how often the executor's stats are published, if at all.
    pub stats_period: Option<Duration>,
    /// `--dedicated-workers`, `--cpus` and `--fifo-priority`.
    pub dedicated: Option<DedicatedWorkers>,
    /// `--linger-us`.
    pub linger: Duration,
    /// `--follow-load`.
    pub follow_load: bool,
    /// `--shared-subscription`.
    pub shared_subscription: bool,
    /// `--fanout-on-worker`.
    pub fanout_on_worker: bool,
}

impl Config {
    /// Check what depends on more than one flag, and keep the result.
    pub fn from_args(args: BenchArgs) -> Result<Self, String> {
        let (workload, role) = (args.workload, args.role);
        let two_processes = matches!(workload, Workload::Stream | Workload::RobotMix);
        if role != Role::Both && !two_processes {
            return Err(format!(
                "--role {}: only the stream and robot_mix workloads run across processes",
                role.name()
            ));
        }
        if workload == Workload::RobotMix && role == Role::Both {
            return Err(
                "--workload robot_mix: its publishers sit in a second process; \
                        use --role sub and --role pub"
                    .into(),
            );
        }
        if matches!(args.executor, ExecutorName::RawRcl | ExecutorName::RawPush)
            && !matches!(workload, Workload::Stream | Workload::Scaling)
        {
            return Err(format!(
                "--executor {}: the raw take loop has no {} workload",
                args.executor.name(),
                workload.name()
            ));
        }
        if args.stage_tracing && args.executor != ExecutorName::RclrsTokio {
            return Err("--stage-tracing: only rclrs_tokio traces stages".into());
        }
        if args.stats_period_ms > 0 && args.executor != ExecutorName::RclrsTokio {
            return Err("--stats-period-ms: only rclrs_tokio publishes its stats".into());
        }
        if args.shared_subscription
            && !matches!(
                args.executor,
                ExecutorName::RclrsTokio | ExecutorName::RclrsBasic
            )
        {
            return Err(format!(
                "--shared-subscription: {} has no fan-out subscription",
                args.executor.name()
            ));
        }
        if args.shared_subscription && workload != Workload::Stream {
            return Err("--shared-subscription: only the stream workload has one".into());
        }
        if args.fanout_on_worker
            && (!args.shared_subscription || args.callback != CallbackLevel::Worker)
        {
            return Err(
                "--fanout-on-worker: needs --shared-subscription and --callback worker".into(),
            );
        }
        if args.linger_us > 0 && args.executor != ExecutorName::RclrsTokio {
            return Err("--linger-us: only rclrs_tokio lingers".into());
        }
        if args.follow_load && args.executor != ExecutorName::RclrsTokio {
            return Err("--follow-load: only rclrs_tokio places Workers by load".into());
        }
        let dedicated = args
            .dedicated
            .options_for(args.executor == ExecutorName::RclrsTokio)?;
        let topic = match (&args.topic, role) {
            (Some(topic), _) => topic.clone(),
            (None, Role::Both) => format!("bench_{}", std::process::id()),
            (None, _) => return Err("--topic: the sub and pub roles need the same --topic".into()),
        };
        Ok(Self {
            executor: args.executor.name().to_string(),
            workload,
            role,
            topic,
            payload: args.payload,
            reliable: args.reliability == Reliability::Reliable,
            depth: args.depth,
            rate_hz: args.rate_hz,
            warmup: Duration::from_secs_f64(args.warmup_s),
            window: Duration::from_secs_f64(args.seconds),
            latency: args.latency,
            node_callback: args.callback == CallbackLevel::Node,
            threads: args.threads,
            subscriptions: args.subscriptions as usize,
            workers: args.workers as usize,
            work: Duration::from_micros(args.work_us),
            burn_rate_hz: args.burn_rate_hz,
            nodes: args.nodes as usize,
            timer_period: Duration::from_secs_f64(1.0 / args.timer_hz),
            idle_exit: Duration::from_secs_f64(args.idle_exit_s),
            publish_tail: Duration::from_secs_f64(args.publish_tail_s),
            stage_tracing: args.stage_tracing,
            stats_period: (args.stats_period_ms > 0)
                .then(|| Duration::from_millis(args.stats_period_ms)),
            dedicated,
            linger: Duration::from_micros(args.linger_us),
            follow_load: args.follow_load,
            shared_subscription: args.shared_subscription,
            fanout_on_worker: args.fanout_on_worker,
        })
    }

    /// How many rcl subscriptions a stream's publisher waits for: one fan-out
    /// subscription, or `--subscriptions` of them.
    pub fn rcl_subscriptions(&self) -> usize {
        if self.shared_subscription {
            1
        } else {
            self.subscriptions
        }
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
