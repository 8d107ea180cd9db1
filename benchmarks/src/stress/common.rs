//! What every stress case shares.

use rclrs::{Context, CreateBasicExecutor, Executor, Publisher};
use rclrs_tokio_executor::{
    CreateTokioExecutor, DedicatedWorkers, ExecutorStats, TokioExecutorOptions,
};
use serde::Serialize;
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};
use std::time::{Duration, Instant};

/// What a case's setup can fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The executor a case runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum ExecutorKind {
    /// rclrs's basic executor.
    Basic,
    /// This project's Tokio executor.
    Tokio,
    /// The Tokio executor with every Worker on a thread of its own (its sync mode).
    TokioDedicated,
}

impl ExecutorKind {
    /// Whether this is the Tokio executor, in either mode.
    pub fn is_tokio(self) -> bool {
        matches!(self, Self::Tokio | Self::TokioDedicated)
    }

    /// A new executor of this kind on `context`, with the Tokio executor's stats.
    pub fn create(self, context: &Context) -> Result<(Executor, Option<ExecutorStats>), BoxError> {
        Ok(match self {
            Self::Basic => (context.create_basic_executor(), None),
            Self::Tokio => {
                let (executor, stats) =
                    context.create_tokio_executor_with_stats(TokioExecutorOptions::new())?;
                (executor, Some(stats))
            }
            Self::TokioDedicated => {
                let (executor, stats) = context.create_tokio_executor_with_stats(
                    TokioExecutorOptions::new().dedicated_workers(DedicatedWorkers::all()),
                )?;
                (executor, Some(stats))
            }
        })
    }

    /// A new executor of this kind on a fresh context from the environment.
    pub fn create_fresh(self) -> Result<(Executor, Option<ExecutorStats>), BoxError> {
        self.create(&Context::default_from_env()?)
    }
}

/// How big a run is: the bounded version `make test` runs, or the full one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Minutes in all, for `make test`.
    Bounded,
    /// The counts and durations the issue names.
    Full,
}

impl Scale {
    /// `bounded` or `full`.
    pub fn pick<T>(self, bounded: T, full: T) -> T {
        match self {
            Self::Bounded => bounded,
            Self::Full => full,
        }
    }
}

/// One case's result: printed as one JSON line.
#[derive(Debug, Serialize)]
pub struct CaseResult {
    /// `r1_start_stop`, ...
    pub case: &'static str,
    /// Which executor ran it.
    pub executor: ExecutorKind,
    /// `bounded` or `full`.
    pub scale: &'static str,
    /// False when the case does not apply to this executor (then `passed` is true and
    /// `note` says why).
    pub applicable: bool,
    /// Every check held.
    pub passed: bool,
    /// The measured numbers, by name.
    pub figures: serde_json::Map<String, serde_json::Value>,
    /// What failed, in words.
    pub failures: Vec<String>,
    /// Why it does not apply, or what to know when reading the figures.
    pub note: String,
    /// Wall time of the case.
    pub seconds: f64,
    #[serde(skip)]
    started: Option<Instant>,
}

impl CaseResult {
    /// An empty, passing result.
    pub fn new(case: &'static str, executor: ExecutorKind, scale: Scale) -> Self {
        Self {
            case,
            executor,
            scale: scale.pick("bounded", "full"),
            applicable: true,
            passed: true,
            figures: serde_json::Map::new(),
            failures: Vec::new(),
            note: String::new(),
            seconds: 0.0,
            started: Some(Instant::now()),
        }
    }

    /// Record a figure.
    pub fn figure(&mut self, name: &str, value: impl Serialize) {
        let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        self.figures.insert(name.to_string(), value);
    }

    /// Record a check: a failure unless `held`.
    pub fn check(&mut self, held: bool, failure: impl FnOnce() -> String) {
        if !held {
            self.passed = false;
            self.failures.push(failure());
        }
    }

    /// Mark the case as not applying to this executor.
    pub fn not_applicable(mut self, why: &str) -> Self {
        self.applicable = false;
        self.note = why.to_string();
        self
    }

    /// Stop the clock and print the result line.
    pub fn print(mut self) -> bool {
        if let Some(started) = self.started.take() {
            self.seconds = started.elapsed().as_secs_f64();
        }
        println!(
            "{}",
            serde_json::to_string(&self).expect("a result always serializes")
        );
        self.passed
    }
}

/// Ends the process with a failing result line if it is still armed after `limit`: a
/// hang is reported, not waited on.
pub struct Watchdog {
    armed: Arc<AtomicBool>,
}

impl Watchdog {
    /// Arm a watchdog for `what`.
    pub fn arm(
        case: &'static str,
        executor: ExecutorKind,
        scale: Scale,
        what: &str,
        limit: Duration,
    ) -> Self {
        let armed = Arc::new(AtomicBool::new(true));
        let watching = Arc::clone(&armed);
        let what = what.to_string();
        std::thread::spawn(move || {
            let deadline = Instant::now() + limit;
            while Instant::now() < deadline {
                if !watching.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if watching.load(Ordering::SeqCst) {
                let mut result = CaseResult::new(case, executor, scale);
                result.check(false, || {
                    format!("hang: {what} did not finish within {limit:?}")
                });
                result.print();
                std::process::exit(3);
            }
        });
        Self { armed }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.armed.store(false, Ordering::SeqCst);
    }
}

/// A name no other process uses (topics, services, nodes).
pub fn unique(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{name}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Wait (at most 10 s) until `publisher` has `subscriptions` matched subscriptions.
pub fn wait_matched<T: rclrs::MessageIDL>(publisher: &Publisher<T>, subscriptions: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if publisher.get_subscription_count().unwrap_or(0) >= subscriptions {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Publish `make(n)` for n = 0, 1, ... at `rate_hz` (in bursts of up to a millisecond's
/// worth) until `stop` is set; returns how many were published.
pub fn paced_publisher<T, F>(
    publisher: Publisher<T>,
    rate_hz: f64,
    stop: Arc<AtomicBool>,
    make: F,
) -> std::thread::JoinHandle<u64>
where
    T: rclrs::MessageIDL,
    F: Fn(u64) -> T + Send + 'static,
{
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut sent = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let due = (start.elapsed().as_secs_f64() * rate_hz) as u64;
            while sent < due && !stop.load(Ordering::Relaxed) {
                if publisher.publish(make(sent)).is_ok() {
                    sent += 1;
                }
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        sent
    })
}

/// The executor's resident set and thread count, from `/proc/self`.
pub fn rss_kb_and_threads() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("Threads:"))
}
