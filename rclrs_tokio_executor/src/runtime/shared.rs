//! State every part of one executor shares: the spin gate, the runtime handle, the list
//! of Worker tasks, and the signals `spin()` and the Worker tasks wait on.

use crate::options::{DedicatedWorkers, TokioExecutorOptions};
use crate::runtime::{
    spin_gate::SpinGate,
    threads::Threads,
    timer_scheduler::TimerScheduler,
    workers::{Control, WorkerList},
};
use crate::stats::ExecutorStats;
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};
use tokio::sync::{mpsc::UnboundedSender, Notify};

pub(crate) struct ExecutorShared {
    pub(crate) gate: SpinGate,
    /// Where Worker tasks and async tasks run.
    pub(crate) threads: Threads,
    /// Delivers timer ticks into Worker mailboxes, and rings spin deadlines.
    pub(crate) timers: Arc<TimerScheduler>,
    /// The Worker tasks running now.
    pub(crate) workers: WorkerList,
    /// Counters users can read (panics contained, ...).
    pub(crate) stats: ExecutorStats,
    /// `halt_spinning` and context checks: wakes the spin future.
    pub(crate) wake_spin: Notify,
    /// Worker tasks lingering right now, and how many may at once (see
    /// `worker_task::linger`): one core fewer than the machine has, so a spinning
    /// Worker never takes the last core from the thread that feeds it.
    pub(crate) lingering: AtomicUsize,
    pub(crate) max_lingering: usize,
    shutdown: AtomicBool,
    /// Entities were added since the last spin began: as the basic executor's wait set,
    /// whose guard condition such a change triggers, the next `spin_once` counts that
    /// as its unit of work (see `spin.rs`).
    entities_changed: AtomicBool,
    /// SIGINT and SIGTERM end this executor's spins (`stop_on_signals`).
    pub(crate) stops_on_signals: bool,
    /// Which Workers get a thread of their own (`dedicated_workers`), the name prefix of
    /// those threads, and whether a refused placement was logged already.
    pub(crate) dedicated: Option<DedicatedWorkers>,
    pub(crate) thread_name: String,
    pub(crate) dedicated_refusal_logged: Arc<AtomicBool>,
    /// The clock task's control channel, once a `/clock` subscription appeared.
    clock_task: std::sync::OnceLock<UnboundedSender<Control>>,
}

impl ExecutorShared {
    pub(crate) fn new(threads: Threads, options: &TokioExecutorOptions) -> Arc<Self> {
        Arc::new(Self {
            gate: SpinGate::default(),
            threads,
            timers: TimerScheduler::new(),
            workers: WorkerList::default(),
            stats: ExecutorStats::default(),
            wake_spin: Notify::new(),
            lingering: AtomicUsize::new(0),
            max_lingering: std::thread::available_parallelism()
                .map_or(0, |n| n.get().saturating_sub(1)),
            shutdown: AtomicBool::new(false),
            entities_changed: AtomicBool::new(false),
            stops_on_signals: options.stop_on_signals,
            dedicated: options.dedicated_workers.clone(),
            thread_name: options.thread_name.clone(),
            dedicated_refusal_logged: Arc::default(),
            clock_task: std::sync::OnceLock::new(),
        })
    }

    /// The clock task: a Worker task of its own, with the `()` payload of node-level
    /// primitives, that serves rclrs's `/clock` subscriptions whether or not the
    /// executor is spinning (like rclcpp's dedicated clock thread), so ROS time never
    /// waits for a busy Worker.
    pub(crate) fn clock_task(
        self: &Arc<Self>,
        context: &rclrs::Context,
    ) -> UnboundedSender<Control> {
        self.clock_task
            .get_or_init(|| {
                crate::runtime::worker_task::WorkerTask::spawn(
                    Arc::clone(self),
                    context.clone(),
                    None,
                    Box::new(()),
                )
                .0
            })
            .clone()
    }

    /// Tell the Worker tasks to tear down (the executor is being dropped).
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.workers.shut_down_all();
        self.timers.stop();
        // A spin in progress on another task stops too.
        self.wake_spin.notify_waiters();
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Record that entities were added, and wake a spin in progress to see it.
    pub(crate) fn note_entities_changed(&self) {
        self.entities_changed.store(true, Ordering::Release);
        self.wake_spin.notify_waiters();
    }

    /// Whether entities were added since the last call (which clears it).
    pub(crate) fn take_entities_changed(&self) -> bool {
        self.entities_changed.swap(false, Ordering::AcqRel)
    }

    /// SIGINT or SIGTERM arrived, and this executor's spins stop on it.
    pub(crate) fn interrupted(&self) -> bool {
        self.stops_on_signals && crate::runtime::signals::received().is_some()
    }
}
