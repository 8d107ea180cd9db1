//! R7, soak: minutes of mixed load (a 5 kHz stream, a 1 kHz timer, a 500 Hz service)
//! with entity churn every second (a subscription, a service, a client, a timer and a
//! Worker with a subscription, created and dropped half a second later). The resident
//! set and the thread count are sampled every second. After warm-up, RSS must drift by
//! less than 1% and the thread count must stay flat.
//!
//! The bounded run (30 s) is too short to tell a slow leak from the middleware's and the
//! allocator's warm-up (a fresh machine was seen growing 1.2 MB in its first 30 s, then
//! flat), so there RSS may drift 10% (a per-message leak would still show) and, for the
//! Tokio executor, what would leak is counted directly: the live Worker tasks must
//! come back to the same number every churn round (dropped Workers end their tasks).
//!
//! `--churn` tells the executor's growth from the middleware's: `none` (no churn),
//! `same-names` (every round reuses the same names) and `unique-names` (every round
//! new topic and service names, which the middleware's discovery database keeps).

use super::common::{
    paced_publisher, rss_kb_and_threads, unique, BoxError, CaseResult, ExecutorKind, Scale,
};
use rclrs::*;
use ros_env::std_msgs::msg::UInt64;
use ros_env::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc,
};
use std::time::{Duration, Instant};

/// What churns every second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Churn {
    /// Nothing.
    None,
    /// Entities with the same names every round.
    SameNames,
    /// Entities with new names every round.
    UniqueNames,
}

fn answer(request: SetBool_Request) -> SetBool_Response {
    SetBool_Response {
        success: request.data,
        message: String::new(),
    }
}

/// One churn round: create a set of entities, hold them half a second, drop them.
fn churn_round(node: &Node, prefix: &str, round: u64, stop: &AtomicBool) -> Result<(), RclrsError> {
    let topic = format!("{prefix}_churn_{round}");
    let service = format!("{prefix}_churn_srv_{round}");
    let subscription = node.create_subscription(topic.as_str(), |_: UInt64| {})?;
    let server = node.create_service::<SetBool, _>(service.as_str(), answer)?;
    let client = node.create_client::<SetBool>(service.as_str())?;
    let _ = client.call_then(SetBool_Request { data: true }, |_: SetBool_Response| {});
    let timer = node.create_timer_repeating(Duration::from_millis(10), || {})?;
    let worker = node.create_worker::<u64>(0);
    let worker_subscription =
        worker.create_subscription(topic.as_str(), |seen: &mut u64, _: UInt64| *seen += 1)?;
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop((
        subscription,
        server,
        client,
        timer,
        worker_subscription,
        worker,
    ));
    Ok(())
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// Least-squares slope of `samples` (seconds, KB) in KB/s.
fn slope(samples: &[(f64, u64)]) -> f64 {
    let n = samples.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (sx, sy) = samples
        .iter()
        .fold((0.0, 0.0), |(sx, sy), &(x, y)| (sx + x, sy + y as f64));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = samples.iter().fold((0.0, 0.0), |(num, den), &(x, y)| {
        (num + (x - mx) * (y as f64 - my), den + (x - mx) * (x - mx))
    });
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

/// Run R7 against `kind` for `seconds` (default by scale).
pub fn run(
    kind: ExecutorKind,
    scale: Scale,
    churn: Churn,
    seconds: Option<u64>,
) -> Result<CaseResult, BoxError> {
    let mut result = CaseResult::new("r7_soak", kind, scale);
    let seconds = seconds.unwrap_or(scale.pick(30, 600));
    let warm_up = scale.pick(10, 60).min(seconds / 3);
    let drift_limit_pct = scale.pick(10.0, 1.0);
    let context = Context::default_from_env()?;
    let (mut executor, stats) = kind.create(&context)?;
    let node = executor.create_node(unique("r7").as_str())?;
    let prefix = unique("r7");

    let heard = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&heard);
    let stream = format!("{prefix}_stream");
    let _subscription =
        node.create_subscription(stream.as_str().keep_last(100), move |_: UInt64| {
            count.fetch_add(1, Ordering::Relaxed);
        })?;
    let publisher = node.create_publisher::<UInt64>(stream.as_str().keep_last(100))?;
    let _timer = node.create_timer_repeating(Duration::from_millis(1), || {})?;
    let service = format!("{prefix}_service");
    let _service = node.create_service::<SetBool, _>(service.as_str(), answer)?;
    let client = node.create_client::<SetBool>(service.as_str())?;

    let commands = Arc::clone(executor.commands());
    let spinning = std::thread::spawn(move || executor.spin(SpinOptions::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let streaming = paced_publisher(publisher, 5_000.0, Arc::clone(&stop), |n| UInt64 {
        data: n,
    });
    let calling_stop = Arc::clone(&stop);
    let calling = std::thread::spawn(move || {
        while !calling_stop.load(Ordering::Relaxed) {
            let _ = client.call_then(SetBool_Request { data: true }, |_: SetBool_Response| {});
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let churn_stop = Arc::clone(&stop);
    let churn_node = node.clone();
    let churn_prefix = prefix.clone();
    let churning = std::thread::spawn(move || -> Result<u64, RclrsError> {
        let mut rounds = 0;
        while !churn_stop.load(Ordering::Relaxed) {
            match churn {
                Churn::None => std::thread::sleep(Duration::from_millis(100)),
                Churn::SameNames | Churn::UniqueNames => {
                    let round = if churn == Churn::UniqueNames {
                        rounds
                    } else {
                        0
                    };
                    churn_round(&churn_node, &churn_prefix, round, &churn_stop)?;
                    rounds += 1;
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
        Ok(rounds)
    });

    let start = Instant::now();
    let mut samples: Vec<(f64, u64, u64)> = Vec::new();
    // Live Worker tasks after warm-up (Tokio executor only), sampled with RSS.
    let mut live_workers: Vec<usize> = Vec::new();
    for second in 1..=seconds {
        if let Some(wait) =
            (start + Duration::from_secs(second)).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
        let (rss, threads) = rss_kb_and_threads();
        samples.push((start.elapsed().as_secs_f64(), rss, threads));
        if let (Some(stats), true) = (&stats, second >= warm_up) {
            live_workers.push(stats.workers().len());
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = streaming.join();
    let _ = calling.join();
    let rounds = churning.join().map_err(|_| "the churn thread panicked")?;
    commands.halt_spinning();
    let spun = spinning.join();

    let after: Vec<&(f64, u64, u64)> = samples.iter().filter(|s| s.0 >= warm_up as f64).collect();
    let warm = median(after.iter().take(5).map(|s| s.1).collect());
    let end = median(after.iter().rev().take(5).map(|s| s.1).collect());
    let drift_pct = (end as f64 - warm as f64) * 100.0 / warm.max(1) as f64;
    let kb_per_s = slope(&after.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>());
    let threads_min = after.iter().map(|s| s.2).min().unwrap_or(0);
    let threads_max = after.iter().map(|s| s.2).max().unwrap_or(0);
    result.figure("seconds", seconds);
    result.figure("warm_up_s", warm_up);
    result.figure("churn", format!("{churn:?}"));
    result.figure("churn_rounds", rounds.as_ref().copied().unwrap_or(0));
    result.figure("stream_received", heard.load(Ordering::Relaxed));
    result.figure("rss_after_warm_up_kb", warm);
    result.figure("rss_end_kb", end);
    result.figure("rss_drift_pct", (drift_pct * 100.0).round() / 100.0);
    result.figure("rss_slope_kb_per_s", (kb_per_s * 1000.0).round() / 1000.0);
    result.figure("threads_min", threads_min);
    result.figure("threads_max", threads_max);
    result.figure(
        "rss_kb_every_10s",
        samples.iter().step_by(10).map(|s| s.1).collect::<Vec<_>>(),
    );
    result.check(drift_pct < drift_limit_pct, || {
        format!(
            "RSS drifted {drift_pct:.2}% after warm-up ({warm} to {end} KB, {kb_per_s:.2} KB/s)"
        )
    });
    if let (Some(&fewest), Some(&most)) = (live_workers.iter().min(), live_workers.iter().max()) {
        result.figure("live_workers_min", fewest);
        result.figure("live_workers_max", most);
        // One churned Worker lives half a second: at most one more than the fewest.
        result.check(most <= fewest + 1, || {
            format!("live Worker tasks grew from {fewest} to {most}: dropped Workers leak")
        });
    }
    // With dedicated Workers the churned Worker has a thread of its own while it lives:
    // at most one more, as for the live Worker tasks; anything else is a thread leak.
    let churned_threads = u64::from(kind == ExecutorKind::TokioDedicated);
    result.check(threads_max <= threads_min + churned_threads, || {
        format!("threads went from {threads_min} to {threads_max}")
    });
    result.check(rounds.is_ok(), || format!("churn failed: {rounds:?}"));
    result.check(matches!(&spun, Ok(errors) if errors.is_empty()), || {
        format!("the spin ended with {spun:?}")
    });
    Ok(result)
}
