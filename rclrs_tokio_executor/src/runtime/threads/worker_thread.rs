//! Worker threads: the executor's OS threads that run Workers' turns, parked on a futex
//! between them. The pool (one per core by default) and every dedicated Worker's thread
//! are Worker threads; no Tokio scheduler sits between a push callback and a callback.
//!
//! # Protocol
//!
//! 1. A Worker placed on a thread is *scheduled* when something gives it work (its
//!    mailbox wakes it, see `mailbox.rs`): its cell goes onto the thread's run queue and
//!    the thread is unparked, once per wake-up however many sends it took.
//! 2. The thread takes every queued cell at once and runs one turn of each Worker in
//!    order ([`RunsTurns::run_turn`]); a turn clears the Worker's scheduled flag before
//!    it looks at anything, so what arrives during the turn is either found or
//!    schedules it again.
//! 3. A turn ends with a named outcome, [`TurnEnd`]: idle (until a timer's deadline, or
//!    until woken), yielded (its budget is spent and work is left: back of the queue),
//!    napping (see `worker_task::linger`), moved to another pool thread, or finished.
//! 4. With its run queue empty, the thread first naps for the Workers that asked to
//!    (one sleep for all of them, then each runs a turn), then hands over the wake-ups
//!    its turns deferred (`hand_over`), then parks until the earliest deadline its idle
//!    Workers gave, or until unparked. It parks only if nothing was queued since it
//!    last looked: the `notified` flag is set by every enqueue that finds it clear
//!    (which also unparks the thread) and cleared by the thread before it parks; a wake
//!    between the clear and the park leaves `park`'s token, so the park returns at once.
//! 5. A pool thread stops when the executor is dropped ([`ThreadShared::stop`]), after
//!    running the turns still queued (the Workers' shutdown turns among them); a
//!    dedicated Worker's thread ends with its Worker.
//!
//! Every Worker thread enters the executor's Tokio runtime (its own, or the one the
//! user passed in) for its whole life, so callbacks can spawn tasks, sleep and do I/O
//! there, and applies the CPU affinity and SCHED_FIFO priority it was asked for.

mod parker;

use crate::ffi;
use crate::options::{DedicatedThread, ThreadSetting};
use crate::runtime::hand_over::{self, ThreadWake};
use crate::runtime::load_balance::ThreadLoad;
use parker::Parker;
use rclrs::log_warn;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a Worker that found a backlog sleeps before it looks at its mailbox again
/// (see `worker_task::linger`; the kernel's timer slack adds up to 50 µs for a thread at
/// normal priority).
pub(crate) const NAP: Duration = Duration::from_micros(20);

thread_local! {
    /// On a Worker thread: the executor it belongs to (its shared state's address); 0
    /// elsewhere.
    static OWNER: Cell<usize> = const { Cell::new(0) };
}

/// Whether the calling thread is a Worker thread of the executor whose shared state is
/// at `owner` (its drop must not wait for the callback it is running).
pub(crate) fn runs_for(owner: usize) -> bool {
    owner != 0 && OWNER.with(Cell::get) == owner
}

/// How a turn ended: what the thread does with the Worker next.
pub(crate) enum TurnEnd {
    /// Nothing more to do: run again when woken, or at `until` (its timers' deadline).
    Idle { until: Option<Instant> },
    /// Its budget is spent and work is left: run again after the thread's other Workers.
    Yielded,
    /// It found a backlog: sleep [`NAP`] once nothing else is ready, then run again.
    Nap,
    /// It moved to another pool thread (`follow_load`): queue it there.
    Moved,
    /// The Worker ended.
    Finished,
}

/// A Worker as a thread sees it.
pub(crate) trait RunsTurns: Send + Sync {
    /// Run one turn of the Worker on this thread.
    fn run_turn(&self, thread: &Arc<ThreadShared>) -> TurnEnd;
    /// Run a turn soon, unless one is scheduled already (its deadline came, its nap ended).
    fn wake(&self);
    /// Queue it on its home thread now (it moved there).
    fn requeue(self: Arc<Self>);
}

/// What kind of Worker thread this is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThreadKind {
    /// Pool thread `index`: runs any number of Workers until the executor drops.
    Pool(usize),
    /// A dedicated Worker's: ends with its Worker.
    Dedicated,
}

/// One Worker thread, as the Workers and their senders see it.
pub(crate) struct ThreadShared {
    /// The turns queued for the thread. A lock rather than a lock-free queue: it is
    /// held only to push one entry or to take them all, and the thread takes them all
    /// with one lock per wake-up, where a lock-free queue costs a pop per entry and a
    /// failed pop to see it empty.
    queue: Mutex<VecDeque<Arc<dyn RunsTurns>>>,
    parker: Parker,
    stop: AtomicBool,
    pub(crate) kind: ThreadKind,
    /// Its sleep, for quiet wake-ups from the other pool threads (`hand_over`).
    pub(crate) wake: ThreadWake,
    /// The Workers placed here, and how busy they keep it (`load_balance`).
    pub(crate) load: Arc<ThreadLoad>,
}

impl ThreadShared {
    pub(crate) fn new(kind: ThreadKind) -> Arc<Self> {
        Arc::new(Self {
            queue: Mutex::default(),
            parker: Parker::default(),
            stop: AtomicBool::new(false),
            kind,
            wake: ThreadWake::default(),
            load: Arc::default(),
        })
    }

    /// Queue a turn of `worker` and make sure the thread runs it.
    pub(crate) fn enqueue(&self, worker: Arc<dyn RunsTurns>) {
        self.lock_queue().push_back(worker);
        self.parker.unpark();
    }

    /// Whether other Workers wait for this thread (a lingering Worker stops for them).
    pub(crate) fn others_ready(&self) -> bool {
        !self.lock_queue().is_empty()
    }

    fn lock_queue(&self) -> MutexGuard<'_, VecDeque<Arc<dyn RunsTurns>>> {
        // Nothing panics while holding it.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stop the thread once the turns queued now have run (the executor is dropped).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.parker.unpark();
    }
}

/// Where a thread runs and what it enters.
pub(crate) struct ThreadSetup {
    pub(crate) name: String,
    /// The executor it belongs to (see [`runs_for`]).
    pub(crate) owner: usize,
    /// The Tokio runtime callbacks use.
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) cpus: Vec<usize>,
    pub(crate) fifo_priority: Option<u8>,
    /// Shared by the executor's threads, so that a refused placement is logged once.
    pub(crate) refusal_logged: Arc<AtomicBool>,
    /// Told what the placement got, once the thread applied it.
    pub(crate) on_placed: Option<Box<dyn FnOnce(DedicatedThread) + Send>>,
}

/// Start a Worker thread; `first` is queued before it runs (a dedicated Worker).
pub(crate) fn spawn(
    shared: &Arc<ThreadShared>,
    setup: ThreadSetup,
    first: Option<Arc<dyn RunsTurns>>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let thread = Arc::clone(shared);
    if let Some(first) = first {
        shared.enqueue(first);
    }
    std::thread::Builder::new()
        .name(setup.name.clone())
        .spawn(move || run(thread, setup))
}

fn run(thread: Arc<ThreadShared>, setup: ThreadSetup) {
    thread.parker.bind();
    OWNER.with(|owner| owner.set(setup.owner));
    let placed = apply_thread_settings(&setup.cpus, setup.fifo_priority, &setup.refusal_logged);
    if let Some(on_placed) = setup.on_placed {
        on_placed(placed);
    }
    // Timers wake their Worker here: their deadlines need no 50 µs slack.
    ffi::set_precise_timer_slack();
    if let ThreadKind::Pool(index) = thread.kind {
        thread.wake.started(index);
    }
    let _runtime = setup.runtime.enter();
    Turns::default().run(&thread);
    if matches!(thread.kind, ThreadKind::Pool(_)) {
        thread.wake.stopped();
    }
    OWNER.with(|owner| owner.set(0));
}

/// The thread's own bookkeeping of its Workers between turns.
#[derive(Default)]
struct Turns {
    /// The turns taken from the queue, run in order.
    batch: VecDeque<Arc<dyn RunsTurns>>,
    /// Idle Workers with a deadline (their timers').
    waiting: Vec<(Instant, Arc<dyn RunsTurns>)>,
    napping: Vec<Arc<dyn RunsTurns>>,
}

impl Turns {
    fn run(&mut self, thread: &Arc<ThreadShared>) {
        loop {
            let finished = self.run_queued(thread);
            if finished && thread.kind == ThreadKind::Dedicated {
                return;
            }
            if !self.napping.is_empty() {
                if !thread.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(NAP);
                }
                self.napping.drain(..).for_each(|worker| worker.wake());
                continue;
            }
            if thread.stop.load(Ordering::SeqCst) {
                // Whatever was queued before the stop has run: the queue was empty after
                // it was set.
                if thread.lock_queue().is_empty() {
                    return;
                }
                continue;
            }
            // The thread goes idle: the wake-ups its turns deferred go out now, and the
            // threads they wake wait for this one to park (`hand_over`).
            if matches!(thread.kind, ThreadKind::Pool(_)) {
                thread.wake.parking();
            }
            let until = self.waiting.iter().map(|(at, _)| *at).min();
            thread.parker.park(until);
            if matches!(thread.kind, ThreadKind::Pool(_)) {
                thread.wake.unparked();
            }
            self.wake_due();
        }
    }

    /// Run every queued turn; true if a Worker finished.
    fn run_queued(&mut self, thread: &Arc<ThreadShared>) -> bool {
        let mut finished = false;
        loop {
            std::mem::swap(&mut *thread.lock_queue(), &mut self.batch);
            if self.batch.is_empty() {
                return finished;
            }
            while let Some(worker) = self.batch.pop_front() {
                finished |= self.run_one(thread, worker);
            }
        }
    }

    /// Run one turn of `worker`; true if it finished.
    fn run_one(&mut self, thread: &Arc<ThreadShared>, worker: Arc<dyn RunsTurns>) -> bool {
        {
            // Work handed over by an earlier turn goes out before the next one runs.
            hand_over::flush();
            // It reports its deadline again.
            if !self.waiting.is_empty() {
                self.waiting.retain(|(_, w)| !Arc::ptr_eq(w, &worker));
            }
            match worker.run_turn(thread) {
                TurnEnd::Idle { until: Some(at) } => self.waiting.push((at, worker)),
                TurnEnd::Idle { until: None } => {}
                // Behind what is queued now.
                TurnEnd::Yielded => thread.enqueue(worker),
                TurnEnd::Nap => self.napping.push(worker),
                TurnEnd::Moved => worker.requeue(),
                TurnEnd::Finished => return true,
            }
        }
        false
    }

    /// Wake the idle Workers whose deadline has come.
    fn wake_due(&mut self) {
        if self.waiting.is_empty() {
            return;
        }
        let now = Instant::now();
        self.waiting.retain(|(at, worker)| {
            let due = *at <= now;
            if due {
                worker.wake();
            }
            !due
        });
    }
}

/// Apply the affinity and priority asked for, each independently.
fn apply_thread_settings(
    cpus: &[usize],
    priority: Option<u8>,
    refusal_logged: &AtomicBool,
) -> DedicatedThread {
    let mut refusals = Vec::new();
    let affinity = if cpus.is_empty() {
        ThreadSetting::NotRequested
    } else {
        match ffi::set_affinity(cpus) {
            Ok(()) => ThreadSetting::Applied,
            Err(err) => {
                refusals.push(format!("CPU affinity {cpus:?}: {err}"));
                ThreadSetting::Refused
            }
        }
    };
    let fifo_priority = match priority {
        None => ThreadSetting::NotRequested,
        Some(priority) => match ffi::set_fifo_priority(priority) {
            Ok(()) => ThreadSetting::Applied,
            Err(err) => {
                refusals.push(format!("SCHED_FIFO priority {priority}: {err}"));
                ThreadSetting::Refused
            }
        },
    };
    if !refusals.is_empty() && !refusal_logged.swap(true, Ordering::Relaxed) {
        log_warn!(
            "rclrs_tokio_executor",
            "a dedicated Worker thread runs without {} (logged once per executor)",
            refusals.join(" and ")
        );
    }
    DedicatedThread {
        affinity,
        fifo_priority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;

    /// A Worker that counts its turns and finishes after `turns` of them.
    struct Counting {
        turns: AtomicUsize,
        finish_after: usize,
        home: Mutex<Option<Arc<ThreadShared>>>,
    }

    impl RunsTurns for Counting {
        fn run_turn(&self, _thread: &Arc<ThreadShared>) -> TurnEnd {
            let turns = self.turns.fetch_add(1, Ordering::SeqCst) + 1;
            if turns >= self.finish_after {
                TurnEnd::Finished
            } else if turns % 2 == 0 {
                TurnEnd::Yielded
            } else {
                TurnEnd::Idle {
                    until: Some(Instant::now() + Duration::from_millis(1)),
                }
            }
        }

        fn wake(&self) {
            let home = self.home.lock().unwrap().clone();
            if let Some(home) = home {
                home.enqueue(Arc::new(Forward(Arc::new(Counting {
                    turns: AtomicUsize::new(0),
                    finish_after: 0,
                    home: Mutex::new(None),
                }))));
            }
        }

        fn requeue(self: Arc<Self>) {}
    }

    /// Stands in for a Worker woken at its deadline.
    struct Forward(Arc<Counting>);

    impl RunsTurns for Forward {
        fn run_turn(&self, thread: &Arc<ThreadShared>) -> TurnEnd {
            self.0.run_turn(thread)
        }
        fn wake(&self) {}
        fn requeue(self: Arc<Self>) {}
    }

    fn setup(name: &str) -> ThreadSetup {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let handle = runtime.handle().clone();
        std::mem::forget(runtime);
        ThreadSetup {
            name: name.to_string(),
            owner: 0,
            runtime: handle,
            cpus: Vec::new(),
            fifo_priority: None,
            refusal_logged: Arc::default(),
            on_placed: None,
        }
    }

    #[test]
    fn a_dedicated_thread_runs_its_worker_to_the_end_and_then_ends() {
        let thread = ThreadShared::new(ThreadKind::Dedicated);
        let worker = Arc::new(Counting {
            turns: AtomicUsize::new(0),
            finish_after: 1,
            home: Mutex::new(None),
        });
        let handle = spawn(&thread, setup("wt-dedicated"), Some(worker.clone())).unwrap();
        handle.join().unwrap();
        assert_eq!(worker.turns.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_pool_thread_runs_what_is_queued_from_other_threads_and_stops() {
        let thread = ThreadShared::new(ThreadKind::Pool(7));
        let handle = spawn(&thread, setup("wt-pool"), None).unwrap();
        let workers: Vec<_> = (0..50)
            .map(|_| {
                Arc::new(Counting {
                    turns: AtomicUsize::new(0),
                    finish_after: 3,
                    home: Mutex::new(None),
                })
            })
            .collect();
        for worker in &workers {
            *worker.home.lock().unwrap() = Some(Arc::clone(&thread));
            let sender = Arc::clone(&thread);
            let worker = Arc::clone(worker);
            std::thread::spawn(move || sender.enqueue(worker))
                .join()
                .unwrap();
        }
        // Each: a turn (idle until a deadline 1 ms on), woken at the deadline (a
        // stand-in turn), queued once more here; every turn runs.
        std::thread::sleep(Duration::from_millis(50));
        for worker in &workers {
            thread.enqueue(Arc::clone(worker) as Arc<dyn RunsTurns>);
        }
        std::thread::sleep(Duration::from_millis(50));
        thread.stop();
        handle.join().unwrap();
        for worker in &workers {
            assert!(worker.turns.load(Ordering::SeqCst) >= 2);
        }
    }

    #[test]
    fn a_refused_placement_is_reported_and_logged_once() {
        let logged = AtomicBool::new(false);
        let placed = std::thread::spawn(move || {
            let first = apply_thread_settings(&[100_000], None, &logged);
            let second = apply_thread_settings(&[4095], None, &logged);
            (first, second, logged.load(Ordering::Relaxed))
        })
        .join()
        .unwrap();
        assert_eq!(placed.0.affinity, ThreadSetting::Refused);
        assert_eq!(placed.0.fifo_priority, ThreadSetting::NotRequested);
        // A core number the machine does not have is refused too.
        assert_eq!(placed.1.affinity, ThreadSetting::Refused);
        assert!(placed.2);
    }
}
