//! Value parsers the nodes' clap command lines share: numbers that must become a
//! `Duration` (or the period of a rate) are checked while parsing, so a bad value is a
//! clap error (exit 2) naming the flag, never a panic later.

use rclrs_tokio_executor::DedicatedWorkers;
use std::time::Duration;

/// Which Workers `--dedicated-workers` puts on threads of their own.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[value(rename_all = "snake_case")]
pub enum DedicatedScope {
    /// Every Worker, the nodes' own included.
    #[default]
    All,
    /// Only the control loop's Worker (payload [`crate::workload::ControlLoop`]), in the
    /// workloads that have one (robot_mix, mixed_criticality).
    ControlLoop,
}

/// Dedicated-thread Workers (the Tokio executor's sync mode), as `bench_node` and
/// `timer_node` both take them.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DedicatedArgs {
    /// Run Workers on dedicated threads (rclrs_tokio only; its sync mode): every Worker
    /// (`--dedicated-workers` or `--dedicated-workers all`), or only the control loop's
    /// (`--dedicated-workers control_loop`).
    #[arg(
        long = "dedicated-workers",
        value_enum,
        num_args = 0..=1,
        default_missing_value = "all"
    )]
    pub dedicated_workers: Option<DedicatedScope>,
    /// With --dedicated-workers: pin the dedicated threads to these cores (e.g. 1 or 0,1).
    #[arg(long, value_delimiter = ',', requires = "dedicated_workers")]
    pub cpus: Vec<usize>,
    /// With --dedicated-workers: run them under SCHED_FIFO at this priority (needs root
    /// or CAP_SYS_NICE; refused means normal priority, as the report's `dedicated` says).
    #[arg(
        long = "fifo-priority",
        default_value_t = 0,
        requires = "dedicated_workers"
    )]
    pub fifo_priority: u8,
}

impl DedicatedArgs {
    /// The executor option these flags ask for (`None` without `--dedicated-workers`), or
    /// the error for an executor that has no dedicated Workers (`is_tokio` false).
    pub fn options_for(&self, is_tokio: bool) -> Result<Option<DedicatedWorkers>, &'static str> {
        let Some(scope) = self.dedicated_workers else {
            return Ok(None);
        };
        if !is_tokio {
            return Err("--dedicated-workers: only rclrs_tokio has dedicated Workers");
        }
        let workers = match scope {
            DedicatedScope::All => DedicatedWorkers::all(),
            DedicatedScope::ControlLoop => {
                DedicatedWorkers::for_payload::<crate::workload::ControlLoop>()
            }
        };
        Ok(Some(
            workers
                .cpus(self.cpus.iter().copied())
                .fifo_priority(self.fifo_priority),
        ))
    }
}

/// A number of seconds: finite, at least 0, small enough to be a `Duration`.
pub fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if Duration::try_from_secs_f64(v).is_ok() => Ok(v),
        _ => Err(format!("{text:?} is not a finite number >= 0")),
    }
}

/// A rate or a period: above 0, and both it and its inverse fit a `Duration` in seconds.
pub fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v)
            if v > 0.0
                && Duration::try_from_secs_f64(v).is_ok()
                && Duration::try_from_secs_f64(1.0 / v).is_ok() =>
        {
            Ok(v)
        }
        _ => Err(format!("{text:?} is not a finite number > 0")),
    }
}

/// A parser for a number above 0 and at most `most`.
pub fn up_to(most: f64) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |text| match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= most => Ok(v),
        _ => Err(format!(
            "{text:?} is not a number above 0 and at most {most}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_cannot_be_durations_are_refused() {
        assert_eq!(seconds("1.5"), Ok(1.5));
        assert!(seconds("-1").is_err() && seconds("1e300").is_err() && seconds("nan").is_err());
        assert_eq!(positive("1000"), Ok(1000.0));
        assert!(positive("0").is_err() && positive("1e-300").is_err());
        assert!(up_to(10.0)("10").is_ok() && up_to(10.0)("10.5").is_err());
    }
}
