//! Where the executor's work runs: its own pool of Worker threads beside a Tokio
//! runtime of its own (the default), or a Tokio runtime the user hands in.
//!
//! # Why Worker threads of our own
//!
//! A Worker's callbacks never run in parallel with each other, so a Worker gains
//! nothing from a general scheduler, and at the rates robots run every wake-up through
//! one costs: on the hosts measured, a Worker parked in a Tokio runtime (its I/O and
//! time drivers, its task harness) cost a third more CPU at 10 kHz than one parked on
//! a futex of its own (`docs/performance-notes.md`). So each Worker is placed on
//! one of `n` Worker threads (`worker_thread`), which park on a futex and are woken
//! directly by a push callback's send: a wake-up unparks exactly the thread that owns
//! the Worker. Workers are spread over the threads (fewest Workers first), so
//! different Workers still run in parallel; with `follow_load` they then move between
//! the threads as their load says (see [`load_balance`]).
//!
//! # Tokio
//!
//! Tokio stays for what needs it: the async tasks rclrs hands over (`commands().run`,
//! the futures node-level callbacks return that do not finish at once), and Tokio
//! inside callbacks (`tokio::spawn`, timers, I/O). The pool's Worker threads enter the
//! executor's own current-thread runtime, which the blocking `spin()` drives while it
//! spins, and a thread of its own only where nothing else can (see [`OwnedRuntime`]);
//! callbacks reach it through `Handle::current()`. Users who want their own runtime instead
//! (work stealing, say) pass its handle: Worker turns then run as Tokio tasks there.

pub(crate) mod hand_over;
pub(crate) mod load_balance;
pub(crate) mod worker_thread;

use crate::options::DedicatedWorkers;
use crate::stats::worker_counters::WorkerCounters;
use load_balance::Home;
use std::future::Future;
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;
use worker_thread::{RunsTurns, ThreadKind, ThreadSetup, ThreadShared};

/// How the blocking `spin()` blocks the thread that calls it.
pub(crate) enum Blocking {
    /// Outside any Tokio runtime, or on a single-threaded runtime that runs none of the
    /// executor's work (whose other tasks wait, as under the basic executor's spin).
    Plain,
    /// On a thread of a multi-thread runtime: through `block_in_place`, so the runtime
    /// hands the thread's other tasks to its other threads meanwhile.
    InPlace,
    /// On a thread that runs the executor's Workers or its async tasks: the spin could
    /// wait for itself, so it refuses.
    Starves,
}

pub(crate) enum Threads {
    /// The executor's own threads.
    Pool {
        threads: Arc<[Arc<ThreadShared>]>,
        /// The pool's threads, joined when the executor is dropped.
        running: JoinList,
        /// The executor's Tokio runtime.
        runtime: OwnedRuntime,
    },
    /// A runtime the user passed in; Tokio decides where tasks run. `ran` is set by a
    /// probe task spawned onto it: whether the runtime runs our tasks at all.
    External {
        handle: RuntimeHandle,
        ran: Arc<AtomicBool>,
        /// The async tasks spawned there, aborted when the executor drops (see
        /// [`Threads::join`]).
        tasks: Mutex<Vec<AbortHandle>>,
    },
}

/// The executor's own Tokio runtime: current-thread, with I/O and timers.
///
/// # Who drives it
///
/// A current-thread runtime runs its tasks and its drivers only while some thread is
/// inside its `block_on`; any thread may be (one at a time, the others wait for it).
/// 1. A blocking `spin()` on a thread outside any runtime drives it for as long as it
///    spins ([`OwnedRuntime::drive`]): that thread is blocked anyway, as under the basic
///    executor, which runs its async tasks on it too. The async tasks rclrs hands over
///    only run while spinning, so for most processes no other thread is needed.
/// 2. Where no spin can drive it (`spin_async`, a spin on a thread inside another
///    runtime) or Tokio work of the user's is still alive when a spin ends (a task a
///    callback spawned, [`OwnedRuntime::after_spin`]), a thread of its own, `<name>-rt`,
///    starts and drives it from then on ([`OwnedRuntime::ensure_driven`]); a spin then
///    waits for its future on its own thread, as before.
/// 3. Work spawned onto it between spins from a thread of the user's (through a handle
///    a callback kept) runs once either of them drives it.
///
/// Dropping it drops the async tasks still on it; the executor's drop does that once
/// its thread (if any) has ended, outside the runtime (see [`OwnedRuntime::stop_and_drop`]).
pub(crate) struct OwnedRuntime {
    runtime: Mutex<Option<Arc<tokio::runtime::Runtime>>>,
    handle: RuntimeHandle,
    /// The thread of its own, once started: how to stop it, and the thread.
    driver: Mutex<Option<(oneshot::Sender<()>, std::thread::JoinHandle<()>)>>,
    name: String,
}

impl OwnedRuntime {
    fn start(name: &str) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Self {
            handle: RuntimeHandle::new(runtime.handle().clone()),
            runtime: Mutex::new(Some(Arc::new(runtime))),
            driver: Mutex::default(),
            name: format!("{name}-rt"),
        })
    }

    fn runtime(&self) -> Option<Arc<tokio::runtime::Runtime>> {
        self.runtime
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Run `future` to its end on this thread, driving the runtime meanwhile (or
    /// waiting for the thread that drives it). The caller is outside any runtime.
    pub(crate) fn drive<F: Future>(&self, future: F) -> F::Output {
        match self.runtime() {
            Some(runtime) => runtime.block_on(future),
            None => futures::executor::block_on(future),
        }
    }

    /// Start the runtime's own thread, unless it runs.
    pub(crate) fn ensure_driven(&self) {
        let mut driver = self.driver.lock().unwrap_or_else(|e| e.into_inner());
        if driver.is_some() {
            return;
        }
        let Some(runtime) = self.runtime() else {
            return;
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let started = std::thread::Builder::new()
            .name(self.name.clone())
            .spawn(move || {
                runtime.block_on(async move {
                    let _ = stopped.await;
                });
            });
        match started {
            Ok(thread) => *driver = Some((stop, thread)),
            Err(err) => rclrs::log_error!(
                "rclrs_tokio_executor",
                "cannot start the Tokio runtime's thread ({err}); its tasks run only while \
                 a blocking spin drives them"
            ),
        }
    }

    /// A spin that drove the runtime ended: if Tokio work other than the executor's own
    /// async tasks (`ours` of them are alive) is alive, it needs a driver between spins.
    pub(crate) fn after_spin(&self, ours: u64) {
        let Some(handle) = self.handle.get() else {
            return;
        };
        if handle.metrics().num_alive_tasks() as u64 > ours {
            self.ensure_driven();
        }
    }

    /// Stop the runtime's thread (waiting up to [`TEARDOWN_PATIENCE`] for it), then drop
    /// the runtime, which drops the async tasks still on it: they may hold the last
    /// nodes, whose drop finalizes rcl entities and the context. Called by the
    /// executor's drop. On a thread inside a runtime, Tokio refuses the drop: a thread of
    /// its own drops it instead, at once for another runtime's thread, once it is free
    /// for one of its own (a task dropping the executor).
    fn stop_and_drop(&self) {
        let driver = self.driver.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((stop, thread)) = driver {
            let _ = stop.send(());
            let list = Mutex::new(vec![thread]);
            join_listed(&list);
        }
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.handle.give_up();
        let Some(runtime) = runtime else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            drop(runtime);
            return;
        }
        // Tokio refuses to drop a runtime on a thread inside any runtime (a task
        // dropping the executor, or a blocking spin inside the user's runtime).
        let inside_own = self.handle.is_current();
        let reaper = std::thread::Builder::new()
            .name(self.name.clone())
            .spawn(move || {
                // Returns once a thread inside this runtime has left it.
                runtime.block_on(async {});
                drop(runtime);
            });
        match reaper {
            // Inside another runtime, nothing holds this one: the drop is over when
            // the executor's is, as on a thread outside every runtime.
            Ok(reaper) if !inside_own => {
                let _ = reaper.join();
            }
            Ok(_) => {}
            Err(err) => rclrs::log_error!(
                "rclrs_tokio_executor",
                "cannot drop the Tokio runtime outside itself ({err}); it is leaked"
            ),
        }
    }
}

/// A runtime's handle, which the executor gives up once it is dropped.
///
/// A Tokio handle keeps its runtime's I/O driver open (an epoll descriptor and an
/// eventfd), even after the runtime itself shut down; and the handles rclrs gives the
/// user (a node, a Worker, an entity) reach the executor's shared state, which holds
/// these. So a Worker kept beyond its executor would otherwise keep two descriptors
/// open for an executor long gone. Once given up, whatever is spawned is dropped unrun,
/// as Tokio itself does on a runtime that shut down.
pub(crate) struct RuntimeHandle {
    id: tokio::runtime::Id,
    handle: Mutex<Option<Handle>>,
}

impl RuntimeHandle {
    fn new(handle: Handle) -> Self {
        Self {
            id: handle.id(),
            handle: Mutex::new(Some(handle)),
        }
    }

    /// The handle, unless the executor gave it up.
    fn get(&self) -> Option<Handle> {
        self.handle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Spawn `task` on the runtime; once the handle is given up, drop it (outside the
    /// lock, since what it holds may spawn as it drops).
    fn spawn<F>(&self, task: F) -> Option<tokio::task::JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.get() {
            Some(handle) => Some(handle.spawn(task)),
            None => {
                drop(task);
                None
            }
        }
    }

    fn give_up(&self) {
        self.handle.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Whether the calling thread is inside this runtime (one of its threads, or a
    /// thread that entered it).
    fn is_current(&self) -> bool {
        Handle::try_current().is_ok_and(|current| current.id() == self.id)
    }
}

/// What every Worker thread of one executor shares: its name, its owner and its
/// runtime.
pub(crate) struct ThreadTemplate {
    pub(crate) name: String,
    pub(crate) owner: usize,
    pub(crate) refusal_logged: Arc<AtomicBool>,
}

impl Threads {
    /// Start `count` Worker threads named `<name>-<index>` and the executor's Tokio
    /// runtime (`<name>-rt`).
    pub(crate) fn start_pool(count: usize, template: &ThreadTemplate) -> std::io::Result<Self> {
        let runtime = OwnedRuntime::start(&template.name)?;
        let handle = runtime.handle.get().expect("a new runtime's handle");
        let threads: Arc<[Arc<ThreadShared>]> = (0..count.max(1))
            .map(|index| ThreadShared::new(ThreadKind::Pool(index)))
            .collect();
        let mut running = Vec::with_capacity(threads.len());
        for (index, thread) in threads.iter().enumerate() {
            let setup = ThreadSetup {
                name: format!("{}-{index}", template.name),
                owner: template.owner,
                runtime: handle.clone(),
                cpus: Vec::new(),
                fifo_priority: None,
                refusal_logged: Arc::clone(&template.refusal_logged),
                on_placed: None,
            };
            match worker_thread::spawn(thread, setup, None) {
                Ok(joined) => running.push(joined),
                Err(err) => {
                    // Those already started end, and so does the runtime.
                    threads.iter().for_each(|t| t.stop());
                    let started = Mutex::new(running);
                    join_listed(&started);
                    runtime.stop_and_drop();
                    return Err(err);
                }
            }
        }
        Ok(Self::Pool {
            threads,
            running: Mutex::new(running),
            runtime,
        })
    }

    pub(crate) fn external(handle: Handle) -> Self {
        let ran = Arc::new(AtomicBool::new(false));
        let probe = Arc::clone(&ran);
        handle.spawn(async move { probe.store(true, Ordering::Release) });
        Self::External {
            handle: RuntimeHandle::new(handle),
            ran,
            tasks: Mutex::default(),
        }
    }

    /// For a user's runtime that has not yet run our probe task: the flag it will set.
    pub(crate) fn runtime_probe(&self) -> Option<Arc<AtomicBool>> {
        match self {
            Self::External { ran, .. } if !ran.load(Ordering::Acquire) => Some(Arc::clone(ran)),
            _ => None,
        }
    }

    /// The pool's threads (`None` on a user's runtime).
    pub(crate) fn pool(&self) -> Option<Arc<[Arc<ThreadShared>]>> {
        match self {
            Self::Pool { threads, .. } => Some(Arc::clone(threads)),
            Self::External { .. } => None,
        }
    }

    /// A place on pool thread `index`, counted there until dropped.
    pub(crate) fn home_at(&self, index: usize) -> Option<Home> {
        let Self::Pool { threads, .. } = self else {
            return None;
        };
        let thread = threads.get(index)?;
        Some(Home::new(index, Arc::clone(&thread.load)))
    }

    /// A place on the pool thread with the fewest Workers.
    pub(crate) fn home_at_fewest(&self) -> Option<Home> {
        let Self::Pool { threads, .. } = self else {
            return None;
        };
        let index = (0..threads.len()).min_by_key(|&i| threads[i].load.workers())?;
        self.home_at(index)
    }

    /// Start a dedicated Worker's thread, `first` queued on it, placed as `dedicated`
    /// asks, inside the executor's Tokio runtime (or the user's). `Ok(false)` once the
    /// executor was dropped (nothing started).
    pub(crate) fn start_dedicated(
        &self,
        template: &ThreadTemplate,
        joins: &JoinList,
        thread: &Arc<ThreadShared>,
        dedicated: &DedicatedWorkers,
        counters: &Arc<WorkerCounters>,
        first: Arc<dyn RunsTurns>,
    ) -> std::io::Result<bool> {
        let Some(runtime) = self.handle_for_workers() else {
            return Ok(false);
        };
        let placed = Arc::clone(counters);
        let setup = ThreadSetup {
            name: format!("{}-d{}", template.name, counters.id),
            owner: template.owner,
            runtime,
            cpus: dedicated.cpus.clone(),
            fifo_priority: dedicated.fifo_priority,
            refusal_logged: Arc::clone(&template.refusal_logged),
            on_placed: Some(Box::new(move |got| placed.set_dedicated(got))),
        };
        let joined = worker_thread::spawn(thread, setup, Some(first))?;
        keep_for_join(joins, joined);
        Ok(true)
    }

    /// Drive a Worker task's turns on the user's runtime (the pool runs them on its
    /// threads instead). A Worker task ends when told to shut down (`workers.rs`).
    pub(crate) fn spawn_worker_task<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if let Self::External { handle, .. } = self {
            handle.spawn(task);
        }
    }

    /// The executor's own runtime (`None` on a user's runtime).
    pub(crate) fn owned_runtime(&self) -> Option<&OwnedRuntime> {
        match self {
            Self::Pool { runtime, .. } => Some(runtime),
            Self::External { .. } => None,
        }
    }

    /// About to wake a Worker placed on pool thread `index`: from another pool thread
    /// that is parking, let the wake-up wait for it instead of preempting it (see
    /// `hand_over`).
    pub(crate) fn before_waking(&self, index: usize) {
        if let Self::Pool { threads, .. } = self {
            if hand_over::wakes_quietly(index) {
                if let Some(thread) = threads.get(index) {
                    thread.wake.quiet();
                }
            }
        }
    }

    /// Whether the Worker placed at `home` should move to another pool thread, and which
    /// (see [`load_balance::decide`]).
    pub(crate) fn decide_move(&self, home: &Home, now: Instant) -> Option<usize> {
        let Self::Pool { threads, .. } = self else {
            return None;
        };
        let loads: Vec<_> = threads.iter().map(|t| Arc::clone(&t.load)).collect();
        load_balance::decide(&loads, home, now)
    }

    /// Spawn an async task on the executor's runtime (or the user's).
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self {
            Self::Pool { runtime, .. } => {
                runtime.handle.spawn(task);
            }
            Self::External { handle, tasks, .. } => {
                if let Some(spawned) = handle.spawn(task) {
                    let mut tasks = tasks.lock().unwrap_or_else(|e| e.into_inner());
                    // Forget the finished ones whenever the list is full, so it stays
                    // within twice the tasks alive.
                    if tasks.len() == tasks.capacity() {
                        tasks.retain(|task| !task.is_finished());
                    }
                    tasks.push(spawned.abort_handle());
                }
            }
        }
    }

    /// The runtime Worker threads enter, so callbacks can use Tokio: the executor's, or
    /// the user's. `None` once the executor was dropped.
    pub(crate) fn handle_for_workers(&self) -> Option<Handle> {
        match self {
            Self::Pool { runtime, .. } => runtime.handle.get(),
            Self::External { handle, .. } => handle.get(),
        }
    }

    /// How the blocking `spin()` may block the calling thread (see [`Blocking`]).
    pub(crate) fn blocking_here(&self) -> Blocking {
        let Ok(current) = Handle::try_current() else {
            return Blocking::Plain;
        };
        let ours = match self {
            Self::Pool { runtime, .. } => runtime.handle.id == current.id(),
            Self::External { handle, .. } => handle.id == current.id(),
        };
        match current.runtime_flavor() {
            RuntimeFlavor::MultiThread => Blocking::InPlace,
            _ if ours => Blocking::Starves,
            _ => Blocking::Plain,
        }
    }

    /// Whether these are the executor's own threads (not a runtime the user passed in).
    pub(crate) fn is_pool(&self) -> bool {
        matches!(self, Self::Pool { .. })
    }

    /// Whether the calling thread is one of the executor's own: a Worker thread, or one
    /// inside its runtime.
    pub(crate) fn is_own_thread(&self) -> bool {
        match self {
            Self::Pool { runtime, .. } => runtime.handle.is_current(),
            Self::External { .. } => false,
        }
    }

    /// Stop the pool's threads once they ran the turns queued now (the Workers'
    /// shutdown turns).
    pub(crate) fn stop(&self) {
        if let Self::Pool { threads, .. } = self {
            threads.iter().for_each(|t| t.stop());
        }
    }

    /// Wait (up to [`TEARDOWN_PATIENCE`]) for the stopped pool threads to end, but for
    /// the calling thread: their Workers tear down their entities there. Then stop the
    /// executor's runtime and wait for its thread, which drops the async tasks still on
    /// it: they may hold the last nodes, whose drop finalizes rcl entities and the
    /// context (its DDS participant). Returning earlier would let a process exit while
    /// that runs, and the middleware's static destructors run under it.
    ///
    /// Then give up the runtimes' handles (see [`RuntimeHandle`]). On a runtime the user
    /// passed in, which lives on, abort the async tasks still there instead: as the
    /// executor's runtime drops what is left on it, so that a future waiting for ever
    /// (or for the next spin, as rclrs's node task does, holding the node's graph guard
    /// condition and so the node itself) is dropped with the executor. The runtime
    /// drops them on its own threads, soon after.
    pub(crate) fn join(&self) {
        match self {
            Self::Pool {
                running, runtime, ..
            } => {
                join_listed(running);
                runtime.stop_and_drop();
            }
            Self::External { handle, tasks, .. } => {
                handle.give_up();
                let tasks = std::mem::take(&mut *tasks.lock().unwrap_or_else(|e| e.into_inner()));
                tasks.iter().for_each(AbortHandle::abort);
            }
        }
    }
}

/// How long dropping the executor waits for each kind of its threads to end.
pub(crate) const TEARDOWN_PATIENCE: Duration = Duration::from_secs(2);

/// A thread list that the executor's drop joins.
pub(crate) type JoinList = Mutex<Vec<std::thread::JoinHandle<()>>>;

/// Add `thread` to `list`, forgetting the threads in it that already ended (they need no
/// join), so that a list of short-lived threads does not grow.
pub(crate) fn keep_for_join(list: &JoinList, thread: std::thread::JoinHandle<()>) {
    let mut threads = list.lock().unwrap_or_else(|e| e.into_inner());
    threads.retain(|t| !t.is_finished());
    threads.push(thread);
}

/// Take the threads out of `list` (told to end) and wait for each, but for the calling
/// thread (it would wait for itself), for [`TEARDOWN_PATIENCE`] at most; a thread still
/// running then is left detached.
pub(crate) fn join_listed(list: &JoinList) {
    let threads = std::mem::take(&mut *list.lock().unwrap_or_else(|e| e.into_inner()));
    let current = std::thread::current().id();
    let deadline = Instant::now() + TEARDOWN_PATIENCE;
    for thread in threads.into_iter().filter(|t| t.thread().id() != current) {
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(100));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
}
