//! CPU time per thread of this process, grouped by thread name, from
//! `/proc/self/task/*/stat`.
//!
//! A subscriber process (`--role sub`) takes a [`ThreadCpu`] at each edge of its window.
//! The difference says how the process's CPU splits between the middleware's threads
//! and the executor's, and in particular how much the middleware's **receive threads**
//! spend per message. With a push-driven executor, the rcl push callback runs on those
//! threads, so a heavy push path shows up there and not in the executor's own threads.
//! The C++ twin computes the same keys the same way (`bench_common.hpp`).
//!
//! The kernel counts thread CPU in clock ticks (`utime + stime`, usually 10 ms each):
//! over a window of a few seconds that is a percent or better.
//!
//! [`context_switches_now`] sums every thread's context switches (voluntary and
//! involuntary, from `/proc/self/task/*/status`). Per message, they count the wake-ups
//! a design pays for, which on a VM can cost more than the work they hand over. A thread
//! that ends inside a window takes its switches with it.

use std::collections::BTreeMap;

/// Each thread name's CPU time, in clock ticks, summed over the threads of that name.
#[derive(Debug, Clone, Default)]
pub struct ThreadCpu {
    ticks: BTreeMap<String, u64>,
}

impl ThreadCpu {
    /// The process's threads now. Threads that cannot be read (one that just ended)
    /// are left out.
    pub fn now() -> Self {
        let mut ticks = BTreeMap::new();
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return Self { ticks };
        };
        for task in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            if let Some((name, used)) = parse_stat(&stat) {
                *ticks.entry(name).or_insert(0) += used;
            }
        }
        Self { ticks }
    }

    /// CPU seconds per thread name between `earlier` and `self`. Names with no CPU in
    /// between are left out.
    pub fn seconds_since(&self, earlier: &ThreadCpu) -> BTreeMap<String, f64> {
        let per_tick = 1.0 / rustix::param::clock_ticks_per_second() as f64;
        self.ticks
            .iter()
            .filter_map(|(name, &now)| {
                let used = now.saturating_sub(earlier.ticks.get(name).copied().unwrap_or(0));
                (used > 0).then(|| (name.clone(), used as f64 * per_tick))
            })
            .collect()
    }
}

/// The context switches of this process's threads so far (threads that just ended are
/// left out).
pub fn context_switches_now() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .map(|status| parse_switches(&status))
        .sum()
}

/// `voluntary_ctxt_switches + nonvoluntary_ctxt_switches` from a task's `status`.
fn parse_switches(status: &str) -> u64 {
    status
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            matches!(
                key,
                "voluntary_ctxt_switches" | "nonvoluntary_ctxt_switches"
            )
            .then(|| value.trim().parse::<u64>().ok())
            .flatten()
        })
        .sum()
}

/// The thread's name, with digits (ports, participant ids) folded to `#` so that
/// threads of one role share a name, and its `utime + stime`.
fn parse_stat(stat: &str) -> Option<(String, u64)> {
    // `pid (comm) state ...`: comm may hold spaces and parentheses, so it ends at the
    // last ')'.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name: String = stat
        .get(open + 1..close)?
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    // After comm: state is field 3; utime and stime are fields 14 and 15.
    let mut rest = stat.get(close + 1..)?.split_whitespace().skip(11);
    let utime: u64 = rest.next()?.parse().ok()?;
    let stime: u64 = rest.next()?.parse().ok()?;
    Some((collapse_hashes(&name), utime + stime))
}

fn collapse_hashes(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if !(c == '#' && out.ends_with('#')) {
            out.push(c);
        }
    }
    out
}

/// Whether a thread of this (folded) name receives samples from the network or shared
/// memory for the middleware: Fast DDS's UDP, TCP and shared-memory listeners and its
/// data-sharing listener. These run the rmw listener and with it the rcl push callback.
pub fn is_receive_thread(name: &str) -> bool {
    const RECEIVE: [&str; 4] = ["dds.udp.", "dds.tcp.", "dds.shm.#", "dds.dsha."];
    RECEIVE.iter().any(|prefix| name.starts_with(prefix))
}

/// The receive threads' share of `seconds` (from [`ThreadCpu::seconds_since`]).
pub fn receive_seconds(seconds: &BTreeMap<String, f64>) -> f64 {
    seconds
        .iter()
        .filter(|(name, _)| is_receive_thread(name))
        .map(|(_, s)| s)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_name_with_spaces_and_parentheses() {
        let stat = "42 (dds.udp.7412 (x)) S 1 2 3 4 5 6 7 8 9 10 150 25 0 0 20 0";
        assert_eq!(parse_stat(stat), Some(("dds.udp.# (x)".to_string(), 175)));
    }

    #[test]
    fn switches_are_voluntary_plus_involuntary() {
        let status = "Name:\tx\nvoluntary_ctxt_switches:\t40\nnonvoluntary_ctxt_switches:\t2\n";
        assert_eq!(parse_switches(status), 42);
    }

    #[test]
    fn a_sleeping_thread_counts_its_switches() {
        let before = context_switches_now();
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(context_switches_now() >= before + 5);
    }

    #[test]
    fn a_named_thread_is_listed_under_its_folded_name() {
        let listed = std::thread::Builder::new()
            .name("cpu-probe-17".into())
            .spawn(|| ThreadCpu::now().ticks.contains_key("cpu-probe-#"))
            .unwrap()
            .join()
            .unwrap();
        assert!(listed);
    }

    #[test]
    fn receive_threads_are_fast_dds_listeners() {
        assert!(is_receive_thread("dds.udp.#"));
        assert!(is_receive_thread("dds.shm.#"));
        assert!(!is_receive_thread("dds.shm.wd"));
        assert!(!is_receive_thread("rclrs-tokio-w#"));
    }
}
