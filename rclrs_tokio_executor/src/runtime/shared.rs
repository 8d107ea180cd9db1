//! State every part of one executor shares: the spin gate, the runtime handle, the list
//! of Worker tasks, and the signals `spin()` and the Worker tasks wait on.

use crate::options::{DedicatedWorkers, TokioExecutorOptions};
use crate::runtime::mailbox::MailboxSender;
use crate::runtime::{
    spin_gate::SpinGate,
    task_counters::TaskCounters,
    threads::{JoinList, ThreadTemplate, Threads},
    timer_scheduler::TimerScheduler,
    workers::WorkerList,
};
use crate::stats::ExecutorStats;
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc, Mutex, Weak,
};
use tokio::sync::Notify;

pub(crate) struct ExecutorShared {
    /// Tells this executor's threads from others' (`worker_thread::runs_for`).
    pub(crate) id: usize,
    pub(crate) gate: SpinGate,
    /// Where Worker tasks and async tasks run.
    pub(crate) threads: Threads,
    /// Delivers timer ticks into Worker mailboxes, and rings spin deadlines.
    pub(crate) timers: Arc<TimerScheduler>,
    /// The Workers' own timer schedulers, each driven by its Worker (see
    /// `timer_scheduler`), for the spins' passes over every timer.
    worker_timers: Mutex<Vec<Weak<TimerScheduler>>>,
    /// The Worker tasks running now.
    pub(crate) workers: WorkerList,
    /// Async tasks spawned, and polled once (a spin's backlog includes them).
    pub(crate) tasks: Arc<TaskCounters>,
    /// Counters users can read (panics contained, ...).
    pub(crate) stats: ExecutorStats,
    /// `halt_spinning` and context checks: wakes the spin future.
    pub(crate) wake_spin: Notify,
    /// Worker tasks lingering right now, and how many may at once (see
    /// `worker_task::linger`): one core fewer than the machine has, so a spinning
    /// Worker never takes the last core from the thread that feeds it.
    pub(crate) lingering: AtomicUsize,
    pub(crate) max_lingering: usize,
    /// How long a streaming Worker watches its mailbox before parking (`linger`; zero:
    /// never).
    pub(crate) linger: std::time::Duration,
    /// Worker tasks move between pool threads as their load says (`follow_load`).
    pub(crate) follow_load: bool,
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
    /// The dedicated Worker threads started so far (joined when the executor drops).
    pub(crate) dedicated_threads: JoinList,
    /// The fallback waiters' threads started so far (joined when the executor drops,
    /// after the pool's threads, whose Worker tasks stop them).
    pub(crate) fallback_threads: JoinList,
    /// The clock task's mailbox, started by the first Worker that meets a `/clock`
    /// subscription (see `worker_task::registration`).
    pub(crate) clock_task: std::sync::OnceLock<MailboxSender>,
}

impl ExecutorShared {
    pub(crate) fn new(
        id: usize,
        threads: Threads,
        options: &TokioExecutorOptions,
        dedicated_refusal_logged: Arc<AtomicBool>,
    ) -> Arc<Self> {
        Arc::new(Self {
            id,
            gate: SpinGate::default(),
            threads,
            timers: TimerScheduler::new(&options.thread_name),
            worker_timers: Mutex::default(),
            workers: WorkerList::default(),
            tasks: Arc::default(),
            stats: ExecutorStats::default(),
            wake_spin: Notify::new(),
            lingering: AtomicUsize::new(0),
            max_lingering: std::thread::available_parallelism()
                .map_or(0, |n| n.get().saturating_sub(1)),
            linger: options.linger,
            follow_load: options.follow_load,
            shutdown: AtomicBool::new(false),
            entities_changed: AtomicBool::new(false),
            stops_on_signals: options.stop_on_signals,
            dedicated: options.dedicated_workers.clone(),
            thread_name: options.thread_name.clone(),
            dedicated_refusal_logged,
            dedicated_threads: JoinList::default(),
            fallback_threads: JoinList::default(),
            clock_task: std::sync::OnceLock::new(),
        })
    }

    /// What a dedicated Worker's thread is made from: the executor's thread name, its
    /// id, and the one-time log of a refused placement.
    pub(crate) fn thread_template(&self) -> ThreadTemplate {
        ThreadTemplate {
            name: self.thread_name.clone(),
            owner: self.id,
            refusal_logged: Arc::clone(&self.dedicated_refusal_logged),
        }
    }

    /// A timer scheduler of its own for a Worker, named after a dedicated Worker's
    /// thread (should it need a thread after all: a dedicated Worker that got none).
    pub(crate) fn worker_timers(&self, worker_id: u64) -> Arc<TimerScheduler> {
        let timers = TimerScheduler::new(&format!("{}-d{worker_id}", self.thread_name));
        let mut list = self.worker_timers.lock().unwrap();
        list.retain(|t| t.strong_count() > 0);
        list.push(Arc::downgrade(&timers));
        timers
    }

    /// Run `f` on every timer scheduler of the executor still in use: its own, then the
    /// Workers'.
    fn for_each_timers(&self, f: impl Fn(&TimerScheduler)) {
        f(&self.timers);
        let list = self.worker_timers.lock().unwrap();
        for timers in list.iter().filter_map(Weak::upgrade) {
            f(&timers);
        }
    }

    /// Deliver the ticks of every timer due now (a spin's single pass).
    pub(crate) fn tick_timers_due_now(&self) {
        self.for_each_timers(TimerScheduler::tick_due_now);
    }

    /// After [`shut_down`](Self::shut_down): wait for the timer schedulers' own threads.
    pub(crate) fn join_timers(&self) {
        self.for_each_timers(TimerScheduler::join);
    }

    /// Tell the Worker tasks to tear down (the executor is being dropped).
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.workers.shut_down_all();
        self.for_each_timers(TimerScheduler::stop);
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
}
