//! The benchmark workloads behind `bench_node`, one module per workload, sharing one
//! command line and one JSON report.
//!
//! | module | workload | what it measures |
//! | --- | --- | --- |
//! | [`stream`] | `--workload stream` | a message stream: throughput, drops, latency, CPU; in one process (`--role both`) or across two (`--role sub` + `--role pub`); with `--subscriptions N --workers M`, fanout |
//! | [`service`] | `--workload service` | closed-loop service round trips |
//! | [`action`] | `--workload action` | idle CPU with an action server and client, then closed-loop goal round trips |
//! | [`scaling`] | `--workload scaling` | N idle subscriptions: idle CPU, then the cost of one message |
//! | [`parallel`] | `--workload parallel` | CPU-bound callbacks in 1 or 2 Workers |
//! | [`robot_mix`] | `--workload robot_mix` | a robot's process: several nodes hearing sensor streams, a control loop, a service and a parameter query from a second process (`--role sub` + `--role pub`) |
//! | [`criticality`] | `--workload mixed_criticality` | a Worker burning 4 ms of every 5 beside a 1 kHz control stream on another Worker |
//! | [`composed`] | `--workload nodes` | `--nodes N` nodes in one process, each with a subscription and a timer: idle CPU, CPU under load, threads |
//!
//! Shared pieces: [`config`] (the flags), [`spinner`] (the executor under test, spinning
//! on its own thread), [`publishing`] (the paced publisher loop and the window's edges),
//! [`round_trips`] (the closed loop of the service and action workloads, and the idle
//! window),
//! [`stats`] (the counters callbacks and publisher share), [`streams`] (several named
//! streams measured apart, for the workloads that mix them) and [`report`] (the one JSON
//! line every run prints).
//!
//! Every run prints exactly one JSON line on stdout. The C++ twin
//! (`rclcpp_events_bridge/bench_node_cpp`) takes the same flags and prints the same keys,
//! so the harness treats both alike.

pub mod action;
pub mod composed;
pub mod config;
pub mod criticality;
pub mod parallel;
pub mod publishing;
pub mod report;
pub mod robot_mix;
pub mod round_trips;
pub mod scaling;
pub mod service;
pub mod spinner;
pub mod stats;
pub mod stream;
pub mod streams;

pub use config::{BenchArgs, CallbackLevel, Config, ExecutorName, Reliability, Role, Workload};
pub use report::Report;

/// The payload of the control loop's Worker (robot_mix, mixed_criticality):
/// `--dedicated-workers control_loop` gives exactly the Workers with this payload a
/// thread of their own (`DedicatedWorkers::for_payload::<ControlLoop>()`).
#[derive(Debug, Default)]
pub struct ControlLoop {
    /// Control inputs handled.
    pub cycles: u64,
}

/// Run the workload `config` names and print its report; a run that SIGINT or SIGTERM
/// cut short is marked `"interrupted": true` (the caller then exits with
/// [`crate::interrupt::exit_code`]).
pub fn run(config: &Config) -> Result<(), Box<dyn std::error::Error>> {
    let mut report = match config.workload {
        Workload::Stream => stream::run(config)?,
        Workload::Service => service::run(config)?,
        Workload::Action => action::run(config)?,
        Workload::Scaling => scaling::run(config)?,
        Workload::Parallel => parallel::run(config)?,
        Workload::RobotMix => robot_mix::run(config)?,
        Workload::MixedCriticality => criticality::run(config)?,
        Workload::Nodes => composed::run(config)?,
    };
    if crate::interrupt::interrupted() {
        report = report.flag("interrupted", true);
    }
    println!("{}", report.to_json());
    Ok(())
}
