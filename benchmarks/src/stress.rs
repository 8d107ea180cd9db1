//! The reliability suite: one case per file, each run in a process of its own against
//! one executor, printing one JSON line (a [`CaseResult`]) that
//! `benchmarks/harness/stress.py` collects into a side-by-side table.
//!
//! - [`r1_start_stop`]: short spins and `spin_once` under a 20 kHz reliable stream:
//!   nothing lost, duplicated or reordered.
//! - [`r2_churn`]: entities created and dropped while spinning, including drops from
//!   inside callbacks, from other threads, and of Workers with queued work.
//! - [`r3_panic_storm`]: a thousand panicking callbacks; every entity keeps being
//!   served and a sibling keeps its throughput.
//! - [`r4_shutdown`]: dropping (or halting, then dropping) a spinning executor under a
//!   50k msg/s stream.
//! - [`r5_bad_input`]: bad names, wrong types, impossible timeouts and handles get
//!   typed errors, never a panic or a hang.
//! - [`r6_sim_clock`]: node-time timers under an adversarial `/clock`.
//! - [`r7_soak`]: memory and threads under minutes of mixed load and churn.
//!
//! [`common`] holds what the cases share: the executor choice, the result line, a
//! watchdog, and a paced publisher.

pub mod common;
pub mod r1_start_stop;
pub mod r2_churn;
pub mod r3_panic_storm;
pub mod r4_shutdown;
pub mod r5_bad_input;
pub mod r6_sim_clock;
pub mod r7_soak;

pub use common::{CaseResult, ExecutorKind, Scale};
