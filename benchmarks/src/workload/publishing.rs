//! The publisher loop and the measured window.
//!
//! A run publishes for warm-up + window (+ a tail for a publisher process, so the other
//! process's window ends while messages still flow). The loop takes an [`Edge`] when
//! the window opens and when it closes: wall time, process CPU, the publishing thread's
//! CPU and the counters. With the publisher in the same process, Fast DDS delivers
//! inside `publish()`, on the publishing thread, so the executor's share of the CPU is
//! the process minus that thread.

use super::stats::Stats;
use super::Config;
use crate::thread_cpu::{context_switches_now, ThreadCpu};
use crate::{interrupt, monotonic_ns, process_cpu_ns, thread_cpu_ns};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The clocks and counters at one edge of the window.
#[derive(Default, Clone, Copy, Debug)]
pub struct Edge {
    /// CLOCK_MONOTONIC.
    pub wall_ns: i64,
    /// The whole process's CPU time.
    pub process_cpu_ns: i64,
    /// The CPU time of the thread that took the edge.
    pub thread_cpu_ns: i64,
    /// The context switches of the process's threads.
    pub context_switches: u64,
    /// Publisher steps so far.
    pub sent: u64,
    /// Deliveries so far.
    pub received: u64,
}

impl Edge {
    /// Take an edge now, on the calling thread.
    pub fn now(sent: u64, received: u64) -> Self {
        Self {
            wall_ns: monotonic_ns(),
            process_cpu_ns: process_cpu_ns(),
            thread_cpu_ns: thread_cpu_ns(),
            context_switches: context_switches_now(),
            sent,
            received,
        }
    }
}

/// The measured window between two edges.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// When the window opened.
    pub first: Edge,
    /// When it closed.
    pub last: Edge,
}

impl Window {
    /// Wall seconds.
    pub fn wall_s(&self) -> f64 {
        ((self.last.wall_ns - self.first.wall_ns) as f64 / 1e9).max(1e-9)
    }
    /// Process CPU seconds.
    pub fn process_cpu_s(&self) -> f64 {
        (self.last.process_cpu_ns - self.first.process_cpu_ns) as f64 / 1e9
    }
    /// Process CPU seconds minus those of the thread that took the edges (the
    /// publisher), never negative.
    pub fn executor_cpu_s(&self) -> f64 {
        let own = (self.last.thread_cpu_ns - self.first.thread_cpu_ns) as f64 / 1e9;
        (self.process_cpu_s() - own).max(0.0)
    }
    /// Process CPU in percent of one core.
    pub fn process_cpu_pct(&self) -> f64 {
        100.0 * self.process_cpu_s() / self.wall_s()
    }
    /// Executor CPU in percent of one core.
    pub fn executor_cpu_pct(&self) -> f64 {
        100.0 * self.executor_cpu_s() / self.wall_s()
    }
    /// Context switches of the process's threads, per delivery; `None` without
    /// deliveries.
    pub fn context_switches_per_msg(&self) -> Option<f64> {
        let switches = self
            .last
            .context_switches
            .saturating_sub(self.first.context_switches);
        (self.received() > 0).then(|| switches as f64 / self.received() as f64)
    }
    /// Publisher steps per second.
    pub fn sent_per_s(&self) -> f64 {
        (self.last.sent - self.first.sent) as f64 / self.wall_s()
    }
    /// Deliveries in the window.
    pub fn received(&self) -> u64 {
        self.last.received - self.first.received
    }
    /// Deliveries per second.
    pub fn received_per_s(&self) -> f64 {
        self.received() as f64 / self.wall_s()
    }
    /// What was published but not yet delivered when the window closed, with
    /// `deliveries_per_step` deliveries due per publisher step: the backlog the window's
    /// received rate does not include. It is delivered afterwards (and counted as
    /// received, not dropped) or lost (then counted as dropped).
    pub fn queued_at_close(&self, deliveries_per_step: u64) -> u64 {
        (self.last.sent * deliveries_per_step).saturating_sub(self.last.received)
    }
}

/// What the publisher loop did.
pub struct Published {
    /// The measured window.
    pub window: Window,
    /// Steps over the whole run.
    pub total_sent: u64,
    /// Wall seconds from the first step to the last.
    pub elapsed_s: f64,
}

/// How long to publish, and how fast.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// Time between steps; `None` for as fast as possible.
    pub period: Option<Duration>,
    /// Before the window.
    pub warmup: Duration,
    /// The window.
    pub window: Duration,
    /// After the window.
    pub tail: Duration,
}

impl Schedule {
    /// `--rate-hz`, `--warmup-s` and `--seconds`, then `tail`.
    pub fn of(config: &Config, tail: Duration) -> Self {
        Self {
            period: config.period(),
            warmup: config.warmup,
            window: config.window,
            tail,
        }
    }
}

/// [`publish`] on a thread of its own, as the rclcpp nodes do, counting into `stats`;
/// returns when the schedule has run out.
pub fn publish_on_thread<E>(
    schedule: Schedule,
    stats: Arc<Stats>,
    step: impl FnMut(u64) -> Result<(), E> + Send + 'static,
) -> Result<Published, Box<dyn std::error::Error>>
where
    E: std::error::Error + Send + 'static,
{
    let thread =
        std::thread::spawn(move || publish(schedule, &stats.in_window, &stats.received, step));
    Ok(thread
        .join()
        .map_err(|_| "the publisher thread panicked")??)
}

/// One step of a publisher loop, called with the step's number.
pub type Step<E> = Box<dyn FnMut(u64) -> Result<(), E> + Send>;

/// One of several paced streams for [`publish_each_on_thread`]: its schedule, the
/// counters its window reads, and its step.
pub type Paced<E> = (Schedule, Arc<Stats>, Step<E>);

/// [`publish`] for each of `streams` at once, each on a thread of its own (as several
/// drivers publish, each at its own rate), each taking its own window's edges; returns
/// what each did, in order, once all have run out.
pub fn publish_each_on_thread<E>(
    streams: Vec<Paced<E>>,
) -> Result<Vec<Published>, Box<dyn std::error::Error>>
where
    E: std::error::Error + Send + 'static,
{
    let threads: Vec<_> = streams
        .into_iter()
        .map(|(schedule, stats, step)| {
            std::thread::spawn(move || publish(schedule, &stats.in_window, &stats.received, step))
        })
        .collect();
    let mut published = Vec::with_capacity(threads.len());
    for thread in threads {
        published.push(thread.join().map_err(|_| "a publisher thread panicked")??);
    }
    Ok(published)
}

/// Call `step(seq)` on schedule, taking the window's edges. `in_window` is true while
/// the window is open; `received` reads the delivery counter.
pub fn publish<E>(
    schedule: Schedule,
    in_window: &AtomicBool,
    received: &AtomicU64,
    mut step: impl FnMut(u64) -> Result<(), E>,
) -> Result<Published, E> {
    let start = Instant::now();
    let window_start = start + schedule.warmup;
    let window_end = window_start + schedule.window;
    let end = window_end + schedule.tail;
    let count = || received.load(Ordering::Relaxed);
    let (mut first, mut last) = (None, None);
    let mut seq = 0u64;
    loop {
        let now = Instant::now();
        if interrupt::interrupted() {
            // SIGINT or SIGTERM: the window ends here (at once, if it had not opened).
            in_window.store(false, Ordering::Relaxed);
            let edge = Edge::now(seq, count());
            first.get_or_insert(edge);
            last.get_or_insert(edge);
            break;
        }
        if first.is_none() && now >= window_start {
            first = Some(Edge::now(seq, count()));
            in_window.store(true, Ordering::Relaxed);
        }
        if last.is_none() && now >= window_end {
            in_window.store(false, Ordering::Relaxed);
            last = Some(Edge::now(seq, count()));
        }
        if now >= end {
            break;
        }
        if let Some(period) = schedule.period {
            // Due times count from the start, so one late step does not shift the rest.
            let due = start + period.mul_f64(seq as f64);
            if !interrupt::sleep_until(due) {
                continue;
            }
        }
        step(seq)?;
        seq += 1;
    }
    Ok(Published {
        window: Window {
            first: first.expect("the window opened"),
            last: last.expect("the window closed"),
        },
        total_sent: seq,
        elapsed_s: start.elapsed().as_secs_f64(),
    })
}

/// How long a publisher process keeps its reliable writers after its last message, so
/// that what a subscriber still asks for can be sent again (rclrs has no
/// wait-for-all-acked): a sample lost on the way is repaired only while its writer exists.
pub const ACK_GRACE: Duration = Duration::from_millis(500);

/// How long [`settle`] waits, at most, for a backlog to drain.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// Wait for what is still queued to arrive: until the counter reaches `expected`, stops
/// moving for 100 ms, [`SETTLE_LIMIT`] has passed, or a signal interrupted the run. A slow executor's backlog keeps
/// the counter moving, so it is drained and counted as received; only what never
/// arrives is dropped.
pub fn settle(received: &AtomicU64, expected: u64) {
    let limit = Instant::now() + SETTLE_LIMIT;
    let mut seen = received.load(Ordering::Relaxed);
    // An interrupted run reports at once.
    while Instant::now() < limit && !interrupt::interrupted() {
        std::thread::sleep(Duration::from_millis(100));
        let now = received.load(Ordering::Relaxed);
        if now == seen || now >= expected {
            return;
        }
        seen = now;
    }
}

/// Wait until `count()` reaches `at_least`, for at most 20 s.
pub fn wait_for_match(
    what: &str,
    at_least: usize,
    mut count: impl FnMut() -> Result<usize, rclrs::RclrsError>,
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n = count().map_err(|e| e.to_string())?;
        if n >= at_least {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{what}: {n} of {at_least} matched within 20 s"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a subscriber process saw: its window, and each thread name's CPU seconds in it.
pub struct SubscriberWindow {
    /// The measured window (edges taken on the watching thread, whose CPU is the
    /// process's: no publisher here).
    pub window: Window,
    /// CPU seconds per thread name over the window ([`ThreadCpu`]).
    pub thread_seconds: BTreeMap<String, f64>,
    /// Deliveries counted after the window closed.
    pub after_window: u64,
}

/// A subscriber process's window, watched from the calling thread: it opens `warmup`
/// after the first arrival (which must come within 30 s) and lasts `--seconds`; then the
/// count goes on until nothing arrived for `--idle-exit-s`. `count` reads the deliveries
/// so far, `in_window` opens and closes the callbacks' window, and `at_edge` is called
/// right after each edge is taken (to snapshot more counters). A signal ends the window
/// where it is. Nothing arriving in the window or after it means the publisher stopped
/// early.
pub fn subscriber_window(
    config: &Config,
    count: impl Fn() -> u64,
    in_window: impl Fn(bool),
    mut at_edge: impl FnMut(),
) -> Result<SubscriberWindow, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let stopped = |first, last| SubscriberWindow {
        window: Window { first, last },
        thread_seconds: BTreeMap::new(),
        after_window: 0,
    };
    while count() == 0 {
        if interrupt::interrupted() {
            let edge = Edge::now(0, 0);
            return Ok(stopped(edge, edge));
        }
        if Instant::now() > deadline {
            return Err("no message arrived within 30 s".to_string());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let opens = Instant::now() + config.warmup;
    interrupt::sleep_until(opens);
    in_window(true);
    let first = Edge::now(0, count());
    at_edge();
    let threads_first = ThreadCpu::now();
    interrupt::sleep_until(opens + config.window);
    in_window(false);
    let last = Edge::now(0, count());
    at_edge();
    let thread_seconds = ThreadCpu::now().seconds_since(&threads_first);
    if interrupt::interrupted() {
        return Ok(SubscriberWindow {
            thread_seconds,
            ..stopped(first, last)
        });
    }
    // Count on until the publisher has gone quiet.
    let mut seen = count();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < config.idle_exit && !interrupt::interrupted() {
        std::thread::sleep(Duration::from_millis(20));
        let now = count();
        if now != seen {
            seen = now;
            quiet_since = Instant::now();
        }
    }
    // Nothing arrived in the window, nor after it: the publisher had stopped. (A stream
    // held back by repairs, over a lossy link, arrives after it.)
    if last.received == first.received && seen == last.received {
        return Err("the publisher stopped before the window ended".to_string());
    }
    Ok(SubscriberWindow {
        thread_seconds,
        after_window: seen - last.received,
        ..stopped(first, last)
    })
}
