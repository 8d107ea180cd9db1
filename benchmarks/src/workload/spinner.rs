//! The executor under test, and the thread it spins on.
//!
//! Every workload creates its entities first, then starts the executor on its own
//! thread with [`Spinner::start`], as the rclcpp nodes do, and stops it with
//! [`Spinner::stop`] once the measurement is over. `raw_rcl` has no executor: its
//! thread runs the raw take loop over the one Worker the capture runtime recorded, and
//! `raw_push` has its thread drain that Worker on push callbacks.
//!
//! The spin has no timeout, yet rclrs 0.8's basic executor can end it with a lone
//! `Timeout` error: seen in the action workload (about one run in twenty), where
//! `rcl_wait` sleeps until the action server's goal-expiry timer and rcl_action
//! re-arms that timer in the meantime. Such a spin is started again, so the run
//! measures the executor instead of hanging its driver; any other error ends it.

use super::Config;
use crate::{raw_push, raw_rcl};
use rclrs::{Context, CreateBasicExecutor, Executor, Node, SpinOptions};
use rclrs_tokio_executor::capture::CaptureRuntime;
use rclrs_tokio_executor::{
    CreateTokioExecutor, ExecutorStats, StatsPublication, TokioExecutorOptions,
};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};
use std::thread::JoinHandle;

/// The context and the (not yet spinning) executor of a run.
pub struct Setup {
    /// The run's context.
    pub context: Context,
    /// The executor under test; entities are created through its nodes.
    pub executor: Executor,
    capture: CaptureRuntime,
    raw: Option<RawLoop>,
    stats: Option<ExecutorStats>,
    publication: Option<Publication>,
}

/// `--stats-period-ms`: the node that publishes the executor's stats, and its timer.
struct Publication {
    _node: Node,
    _timer: StatsPublication,
}

/// The executor-less floors.
#[derive(Clone, Copy)]
enum RawLoop {
    /// An rcl wait set ([`raw_rcl::drain_loop`]).
    WaitSet,
    /// rcl push callbacks ([`raw_push::drain_on_push`]).
    Push,
}

impl Setup {
    /// A context from the environment and the executor `config.executor` names.
    pub fn new(config: &Config) -> Result<Self, Box<dyn std::error::Error>> {
        let context = Context::default_from_env()?;
        let capture = CaptureRuntime::dropping_tasks();
        let (executor, stats) = match config.executor.as_str() {
            "rclrs_tokio" => {
                let mut options = TokioExecutorOptions::new()
                    .stage_tracing(config.stage_tracing)
                    .linger(config.linger)
                    .follow_load(config.follow_load);
                if config.threads > 0 {
                    options = options.worker_threads(config.threads);
                }
                if let Some(dedicated) = &config.dedicated {
                    options = options.dedicated_workers(dedicated.clone());
                }
                let (executor, stats) = context.create_tokio_executor_with_stats(options)?;
                (executor, Some(stats))
            }
            "rclrs_basic" => (context.create_basic_executor(), None),
            _ => (context.create_executor(capture.clone()), None),
        };
        let publication = match (&stats, config.stats_period) {
            (Some(stats), Some(period)) => {
                // A fixed node name: `--topic` may hold slashes, which a node name may not.
                let node = executor.create_node("bench_executor_stats")?;
                let topic = format!("{}_executor_stats", config.topic);
                let timer = stats.publish_on(&node, &topic, period)?;
                Some(Publication {
                    _node: node,
                    _timer: timer,
                })
            }
            _ => None,
        };
        Ok(Self {
            context,
            executor,
            capture,
            raw: match config.executor.as_str() {
                "raw_rcl" => Some(RawLoop::WaitSet),
                "raw_push" => Some(RawLoop::Push),
                _ => None,
            },
            stats,
            publication,
        })
    }

    /// Start spinning on a new thread.
    pub fn start(self) -> Result<Spinner, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_tx: StopSender = Arc::default();
        let Setup {
            context,
            mut executor,
            capture,
            raw,
            stats,
            publication,
        } = self;
        let thread = if let Some(raw) = raw {
            let captured = capture
                .take_last_worker()
                .ok_or("the raw loop found no Worker")?;
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                match raw {
                    RawLoop::WaitSet => raw_rcl::drain_loop(&context, captured, stop),
                    RawLoop::Push => raw_push::drain_on_push(captured, stop),
                }
                .map_err(|e| e.to_string())?;
                Ok(executor)
            })
        } else {
            let (stop, stop_tx) = (Arc::clone(&stop), Arc::clone(&stop_tx));
            std::thread::spawn(move || loop {
                // A fresh promise per spin, stored before the flag is read, so a
                // `stop` either sees this sender or its flag is seen here. Earlier
                // senders are kept: the basic executor still watches their promises,
                // and one that is dropped ends every later spin at once.
                let (tx, rx) = futures::channel::oneshot::channel::<()>();
                stop_tx.lock().unwrap().push(tx);
                if stop.load(Ordering::SeqCst) {
                    return Ok(executor);
                }
                let errors = executor.spin(SpinOptions::default().until_promise_resolved(rx));
                let only_timeouts = errors.iter().all(crate::is_timeout);
                match errors.first() {
                    Some(err) if !only_timeouts => return Err(err.to_string()),
                    _ if stop.load(Ordering::SeqCst) => return Ok(executor),
                    _ => {}
                }
            })
        };
        Ok(Spinner {
            stop,
            stop_tx,
            thread: Some(thread),
            stats,
            _publication: publication,
        })
    }
}

/// Ends the spin thread's spin (one sender per spin it started).
type StopSender = Arc<Mutex<Vec<futures::channel::oneshot::Sender<()>>>>;

/// An executor spinning on its own thread.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    stop_tx: StopSender,
    thread: Option<JoinHandle<Result<Executor, String>>>,
    stats: Option<ExecutorStats>,
    _publication: Option<Publication>,
}

impl Spinner {
    /// The Tokio executor's counters (`None` for the other executors). Read them after
    /// [`Spinner::stop`] and before the executor and the entities are dropped: a
    /// Worker's counters go with its task.
    pub fn stats(&self) -> Option<ExecutorStats> {
        self.stats.clone()
    }

    /// Stop spinning and hand back the executor (drop it after the entities).
    pub fn stop(mut self) -> Result<Executor, String> {
        self.stop.store(true, Ordering::SeqCst);
        for tx in self.stop_tx.lock().unwrap().drain(..) {
            let _ = tx.send(());
        }
        match self.thread.take().expect("stopped once").join() {
            Ok(result) => result.map_err(|e| format!("spin: {e}")),
            Err(_) => Err("the spin thread panicked".into()),
        }
    }
}
