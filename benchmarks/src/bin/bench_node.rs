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
//! Exit codes: 0 ok, 2 bad argument or failed run (one line on stderr).

use rclrs_tokio_benchmarks::workload::{self, Config};
use rclrs_tokio_benchmarks::Args;

fn main() {
    let result = Config::from_args(&Args::from_env())
        .map_err(Into::into)
        .and_then(|config| workload::run(&config));
    if let Err(err) = result {
        eprintln!("bench_node: {err}");
        std::process::exit(2);
    }
}
