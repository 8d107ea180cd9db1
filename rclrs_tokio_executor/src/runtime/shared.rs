//! State every part of one executor shares: the spin gate, the runtime handle, and the
//! signals `spin()` and the Worker tasks wait on.

use crate::runtime::{
    spin_gate::SpinGate, threads::Threads, timer_scheduler::TimerScheduler, worker_task::Control,
};
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};
use tokio::sync::Notify;

pub(crate) struct ExecutorShared {
    pub(crate) gate: SpinGate,
    /// Where Worker tasks, async tasks and the spin future run.
    pub(crate) threads: Threads,
    /// Delivers timer ticks into Worker mailboxes.
    pub(crate) timers: Arc<TimerScheduler>,
    /// Mailbox items waiting in all Workers' mailboxes.
    pub(crate) queued: Arc<AtomicUsize>,
    /// `halt_spinning` and context checks: wakes the spin future.
    pub(crate) wake_spin: Notify,
    /// Worker tasks lingering right now, and how many may at once (see
    /// `worker_task::LINGER`): one core fewer than the machine has, so a spinning
    /// Worker never takes the last core from the thread that feeds it.
    pub(crate) lingering: AtomicUsize,
    pub(crate) max_lingering: usize,
    shutdown: AtomicBool,
    /// Control channels of the Worker tasks, to tell them to tear down.
    workers: std::sync::Mutex<Vec<tokio::sync::mpsc::UnboundedSender<Control>>>,
    /// The clock task's control channel, once a `/clock` subscription appeared.
    clock_task: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<Control>>,
}

impl ExecutorShared {
    pub(crate) fn new(threads: Threads) -> Arc<Self> {
        Arc::new(Self {
            gate: SpinGate::default(),
            threads,
            timers: TimerScheduler::new(),
            queued: Arc::default(),
            wake_spin: Notify::new(),
            lingering: AtomicUsize::new(0),
            max_lingering: std::thread::available_parallelism()
                .map_or(0, |n| n.get().saturating_sub(1)),
            shutdown: AtomicBool::new(false),
            workers: std::sync::Mutex::new(Vec::new()),
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
    ) -> tokio::sync::mpsc::UnboundedSender<Control> {
        self.clock_task
            .get_or_init(|| {
                let (control_tx, control_rx) = tokio::sync::mpsc::unbounded_channel();
                let (mailbox_tx, mailbox_rx) =
                    crate::runtime::mailbox::mailbox(Arc::clone(&self.queued));
                let task = crate::runtime::worker_task::WorkerTask::new(
                    Arc::clone(self),
                    context.clone(),
                    None,
                    Box::new(()),
                    control_rx,
                    control_tx.clone(),
                    mailbox_rx,
                    mailbox_tx,
                );
                self.add_worker(control_tx.clone());
                self.threads.spawn_worker(task.run());
                control_tx
            })
            .clone()
    }

    /// Remember a Worker task's control channel for [`Self::shut_down`].
    pub(crate) fn add_worker(&self, control: tokio::sync::mpsc::UnboundedSender<Control>) {
        self.workers.lock().unwrap().push(control);
    }

    /// Tell the Worker tasks to tear down (the executor is being dropped).
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        for worker in self.workers.lock().unwrap().drain(..) {
            let _ = worker.send(Control::Shutdown);
        }
        self.timers.stop();
        // A spin in progress on another task stops too.
        self.wake_spin.notify_waiters();
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
}
