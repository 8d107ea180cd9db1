//! The executor under test, and the thread it spins on.
//!
//! Every workload creates its entities first, then starts the executor on its own
//! thread with [`Spinner::start`], as the rclcpp nodes do, and stops it with
//! [`Spinner::stop`] once the measurement is over. `raw_rcl` has no executor: its
//! thread runs the raw take loop over the one Worker the capture runtime recorded, and
//! `raw_push` has its thread drain that Worker on push callbacks.

use super::Config;
use crate::{raw_push, raw_rcl};
use rclrs::{Context, CreateBasicExecutor, Executor, SpinOptions};
use rclrs_tokio_executor::{CreateTokioExecutor, ExecutorStats, TokioExecutorOptions};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};
use std::thread::JoinHandle;

/// The context and the (not yet spinning) executor of a run.
pub struct Setup {
    /// The run's context.
    pub context: Context,
    /// The executor under test; entities are created through its nodes.
    pub executor: Executor,
    capture: raw_rcl::CaptureRuntime,
    raw: Option<RawLoop>,
    stats: Option<ExecutorStats>,
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
        let capture = raw_rcl::CaptureRuntime::default();
        let (executor, stats) = match config.executor.as_str() {
            "rclrs_tokio" => {
                let mut options = TokioExecutorOptions::new()
                    .stage_tracing(config.stage_tracing)
                    .linger(config.linger);
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
        })
    }

    /// Start spinning on a new thread.
    pub fn start(self) -> Result<Spinner, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (stop_tx, stop_rx) = futures::channel::oneshot::channel::<()>();
        let Setup {
            context,
            mut executor,
            capture,
            raw,
            stats,
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
            std::thread::spawn(move || {
                let errors = executor.spin(SpinOptions::default().until_promise_resolved(stop_rx));
                match errors.first() {
                    Some(err) => Err(err.to_string()),
                    None => Ok(executor),
                }
            })
        };
        Ok(Spinner {
            stop,
            stop_tx: Some(stop_tx),
            thread: Some(thread),
            stats,
        })
    }
}

/// An executor spinning on its own thread.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    stop_tx: Option<futures::channel::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<Executor, String>>>,
    stats: Option<ExecutorStats>,
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
        self.stop.store(true, Ordering::Relaxed);
        if let Some(tx) = self.stop_tx.take() {
            let _ = tx.send(());
        }
        match self.thread.take().expect("stopped once").join() {
            Ok(result) => result.map_err(|e| format!("spin: {e}")),
            Err(_) => Err("the spin thread panicked".into()),
        }
    }
}
