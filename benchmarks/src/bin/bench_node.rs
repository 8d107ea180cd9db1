//! One benchmark run, printing one JSON line of metrics. The workloads live in
//! `rclrs_tokio_benchmarks::workload`; the C++ twin is `bench_node_cpp`.
//!
//! ```text
//! bench_node --executor rclrs_tokio|rclrs_basic|raw_rcl
//!            [--workload stream|service|scaling|parallel] [--role both|sub|pub]
//!            [--topic NAME] [--payload BYTES] [--reliability reliable|best_effort]
//!            [--depth N] [--rate-hz R (0 = as fast as possible)] [--warmup-s S]
//!            [--seconds S] [--latency] [--callback worker|node] [--threads N]
//!            [--subscriptions N] [--workers M] [--work-us U] [--idle-exit-s S]
//! ```
//!
//! `bench_node --help` lists the flags with their defaults.
//!
//! Exit codes: 0 ok, 2 bad argument or failed run (one line on stderr), 130/143 when
//! SIGINT/SIGTERM cut the window short (the JSON line, marked `"interrupted": true`,
//! holds what was measured up to then).

use clap::Parser;
use rclrs_tokio_benchmarks::workload::{self, BenchArgs, Config};
use rclrs_tokio_benchmarks::{interrupt, non_ros_args};

fn main() {
    // clap reports a bad flag itself, with exit code 2.
    let args = BenchArgs::parse_from(non_ros_args());
    let result = interrupt::install()
        .map_err(Into::into)
        .and_then(|()| Config::from_args(args).map_err(Into::into))
        .and_then(|config| workload::run(&config));
    if let Err(err) = result {
        eprintln!("bench_node: {err}");
        std::process::exit(2);
    }
    if let Some(code) = interrupt::exit_code() {
        std::process::exit(code);
    }
}
