//! One case of the reliability suite against one executor; prints one JSON line.
//!
//! ```text
//! stress r1-start-stop --executor tokio [--full]
//! stress r4-shutdown --executor tokio_dedicated
//! stress r2-churn --executor basic --rounds 200
//! stress r7-soak --executor tokio --full --churn unique-names
//! ```
//!
//! Exit status: 0 when every check held, 1 when one failed, 2 when the case could not
//! be set up, 3 when the watchdog caught a hang.

use clap::{Parser, Subcommand};
use rclrs_tokio_benchmarks::stress::{self, r7_soak::Churn, CaseResult, ExecutorKind, Scale};
use std::time::Duration;

#[derive(Parser)]
#[command(about = "One case of the reliability suite (see benchmarks/src/stress.rs)")]
struct Cli {
    #[command(subcommand)]
    case: Case,
    /// The executor to run it against.
    #[arg(long, value_enum, global = true, default_value = "tokio")]
    executor: ExecutorKind,
    /// The full counts and durations instead of the bounded ones `make test` uses.
    #[arg(long, global = true)]
    full: bool,
}

#[derive(Subcommand)]
enum Case {
    /// R1: short spins and spin_once under a 20 kHz stream.
    R1StartStop,
    /// R2: entity churn while spinning.
    R2Churn {
        /// Creations instead of the scale's count (valgrind runs use a few hundred).
        #[arg(long)]
        rounds: Option<u64>,
        /// A light load (100 Hz stream, 20 ms timers), for runs under valgrind.
        #[arg(long)]
        gentle: bool,
    },
    /// R3: a storm of panicking callbacks.
    R3PanicStorm,
    /// R4: dropping a spinning executor under a 50k msg/s stream.
    R4Shutdown,
    /// R5: bad input gets typed errors.
    R5BadInput,
    /// R6: an adversarial /clock under use_sim_time.
    R6SimClock,
    /// R7: memory and threads under mixed load and churn.
    R7Soak {
        /// What churns every second.
        #[arg(long, value_enum, default_value = "same-names")]
        churn: Churn,
        /// Duration instead of the scale's.
        #[arg(long)]
        seconds: Option<u64>,
    },
}

fn main() {
    let cli = Cli::parse();
    let scale = if cli.full {
        Scale::Full
    } else {
        Scale::Bounded
    };
    let kind = cli.executor;
    let (name, limit) = match &cli.case {
        Case::R1StartStop => ("r1_start_stop", 300),
        Case::R2Churn { .. } => ("r2_churn", 1800),
        Case::R3PanicStorm => ("r3_panic_storm", 300),
        Case::R4Shutdown => ("r4_shutdown", 900),
        Case::R5BadInput => ("r5_bad_input", 300),
        Case::R6SimClock => ("r6_sim_clock", 300),
        Case::R7Soak { seconds, .. } => ("r7_soak", seconds.unwrap_or(900) + 300),
    };
    let _watchdog =
        stress::common::Watchdog::arm(name, kind, scale, name, Duration::from_secs(limit));
    let outcome = match cli.case {
        Case::R1StartStop => stress::r1_start_stop::run(kind, scale),
        Case::R2Churn { rounds, gentle } => stress::r2_churn::run(kind, scale, rounds, gentle),
        Case::R3PanicStorm => stress::r3_panic_storm::run(kind, scale),
        Case::R4Shutdown => stress::r4_shutdown::run(kind, scale),
        Case::R5BadInput => stress::r5_bad_input::run(kind, scale),
        Case::R6SimClock => stress::r6_sim_clock::run(kind, scale),
        Case::R7Soak { churn, seconds } => stress::r7_soak::run(kind, scale, churn, seconds),
    };
    let status = match outcome {
        Ok(result) => {
            if result.print() {
                0
            } else {
                1
            }
        }
        Err(setup) => {
            let mut result = CaseResult::new(name, kind, scale);
            result.check(false, || format!("setup failed: {setup}"));
            result.print();
            2
        }
    };
    std::process::exit(status);
}
