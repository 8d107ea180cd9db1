//! Options for creating a Tokio executor.

mod dedicated_workers;

pub use dedicated_workers::{DedicatedThread, DedicatedWorkers, ThreadSetting};

/// The fewest threads the pool has by default: two, as rclcpp's multi-threaded
/// executor, so that on a one-CPU machine (a container limited to one core) a Worker
/// whose callback blocks still holds up no other Worker.
const MIN_DEFAULT_THREADS: usize = 2;

/// How to build a Tokio executor; every setting has a documented default.
///
/// ```no_run
/// use rclrs::Context;
/// use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
///
/// let context = Context::default_from_env().unwrap();
/// let executor = context
///     .create_tokio_executor_with(TokioExecutorOptions::new().worker_threads(4))
///     .unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct TokioExecutorOptions {
    pub(crate) worker_threads: usize,
    pub(crate) thread_name: String,
    pub(crate) runtime_handle: Option<tokio::runtime::Handle>,
    pub(crate) stage_tracing: bool,
    pub(crate) stop_on_signals: bool,
    pub(crate) dedicated_workers: Option<DedicatedWorkers>,
    pub(crate) linger: std::time::Duration,
    pub(crate) follow_load: bool,
}

impl Default for TokioExecutorOptions {
    fn default() -> Self {
        Self {
            worker_threads: std::thread::available_parallelism()
                .map_or(MIN_DEFAULT_THREADS, |n| n.get().max(MIN_DEFAULT_THREADS)),
            thread_name: "rclrs-tokio".to_string(),
            runtime_handle: None,
            stage_tracing: false,
            stop_on_signals: false,
            dedicated_workers: None,
            linger: std::time::Duration::ZERO,
            follow_load: false,
        }
    }
}

impl TokioExecutorOptions {
    /// The defaults: the executor's own pool of Worker threads, one per CPU core (at
    /// least two), named `rclrs-tokio-<n>`, beside its Tokio runtime's thread,
    /// `rclrs-tokio-rt`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Threads of the executor's own pool (default: the number of CPU cores the process
    /// may use, and at least two, so that Workers run in parallel even on a one-CPU
    /// machine; set: at least 1). Each Worker's callbacks run on one thread at a time, so
    /// this bounds how many Workers run in parallel. Ignored with
    /// [`Self::runtime_handle`].
    pub fn worker_threads(mut self, threads: usize) -> Self {
        self.worker_threads = threads.max(1);
        self
    }

    /// Name of the pool's threads, before their index (default `rclrs-tokio`), of
    /// dedicated Worker threads, before `-d` and the Worker's number, of the Tokio
    /// runtime's thread, before `-rt`, of the timer scheduler's thread, before
    /// `-timers`, and of the fallback waiter's (an rcl wait set for what has no push
    /// path, started only if needed), before `-fallback`.
    /// Linux shows the first 15 bytes. A name with a NUL byte makes creating the
    /// executor fail with
    /// [`TokioExecutorError::InvalidThreadName`](crate::TokioExecutorError::InvalidThreadName).
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = name.into();
        self
    }

    /// Run on an existing Tokio runtime instead of the executor's own pool of threads
    /// (default: the pool). Worker turns run as tasks on it, as do async tasks, so the
    /// runtime must be driven: a multi-thread runtime, or a current-thread one whose
    /// `block_on` runs while the executor spins. If the runtime has not run the
    /// executor's tasks within a second of a spin starting, the spin ends with the error
    /// recognised by [`is_runtime_not_driven_error`](crate::is_runtime_not_driven_error)
    /// (a timed spin still returns at its deadline).
    pub fn runtime_handle(mut self, handle: tokio::runtime::Handle) -> Self {
        self.runtime_handle = Some(handle);
        self
    }

    /// Start with per-stage latency tracing on (default off); it can be switched at any
    /// time with [`ExecutorStats::set_stage_tracing`](crate::ExecutorStats::set_stage_tracing).
    pub fn stage_tracing(mut self, on: bool) -> Self {
        self.stage_tracing = on;
        self
    }

    /// Let SIGINT and SIGTERM end this executor's spins, as rclcpp's signal handler does
    /// by shutting its context down (default off: the rclrs basic executor installs no
    /// handler, and a signal ends the process). From the first signal on, every spin of
    /// the executor returns at once with the error
    /// [`is_interrupted_error`](crate::is_interrupted_error) recognises, after the
    /// callbacks in flight finish; a second signal exits the process with 128 + the
    /// signal's number. Turning it on installs the process's handlers for both signals
    /// (once, for every executor that asks); creating the executor fails with
    /// [`TokioExecutorError::Signals`](crate::TokioExecutorError::Signals) if they
    /// cannot be installed.
    pub fn stop_on_signals(mut self, on: bool) -> Self {
        self.stop_on_signals = on;
        self
    }

    /// Run the Workers `dedicated` selects on OS threads of their own, optionally pinned
    /// and under SCHED_FIFO (default: every Worker on the pool's threads). See
    /// [`DedicatedWorkers`] for what changes and what does not.
    pub fn dedicated_workers(mut self, dedicated: DedicatedWorkers) -> Self {
        self.dedicated_workers = Some(dedicated);
        self
    }

    /// How long a Worker under a sustained stream (work arriving within this long of its
    /// going idle) watches its mailbox before parking (default zero: it parks at once).
    /// Catching the next message spares the producer a wake-up, but the watching keeps
    /// the producer's cache lines bouncing between cores: on the hosts measured, a 30 µs
    /// linger raised in-process throughput on one and cut it to a quarter on another.
    /// Measure on your machine (`bench_node --linger-us`) before turning it on. At most
    /// one Worker fewer than the machine has cores lingers at a time.
    ///
    /// Experimental, behind the `experimental-linger` feature: it may change or go.
    #[cfg(feature = "experimental-linger")]
    pub fn linger(mut self, linger: std::time::Duration) -> Self {
        self.linger = linger;
        self
    }

    /// Let Worker tasks move between the pool's threads as their load says (default
    /// off: a Worker stays on the thread it was placed on, fewest Workers first). Light
    /// Workers gather on one thread, which is then woken once per burst of messages
    /// instead of once per thread; when a thread's Workers keep it more than 90 % busy,
    /// one moves to an idler thread. A Worker's callbacks stay in order and one at a
    /// time across a move, which happens only between its turns. A Worker whose
    /// callbacks once ran longer than 5 ms keeps a thread of its own from then on.
    /// The price: Workers sharing a thread wait for each other's callbacks, and nothing
    /// can move a Worker while a callback holds its thread, so the first long callback
    /// of a Worker (a sleep, a lock, a long computation) holds up the Workers gathered
    /// with it for as long as it runs. Leave it off for Workers that may block at any
    /// time. Ignored with [`Self::runtime_handle`] and for dedicated Workers.
    pub fn follow_load(mut self, on: bool) -> Self {
        self.follow_load = on;
        self
    }
}
