//! Where the executor's tasks run: its own pool of single-threaded Tokio runtimes (the
//! default), or a Tokio runtime the user hands in.
//!
//! # Why a pool of current-thread runtimes
//!
//! A Worker's callbacks never run in parallel with each other, so a Worker task gains
//! nothing from Tokio's work stealing, while stealing has a price for an event-driven
//! executor: when every thread of a multi-thread runtime is idle, each wake-up from a
//! middleware thread unparks one thread to run the task, and that thread, finding work
//! while it was the last one searching, unparks another to keep searching. At a steady
//! 10 kHz that doubled the executor's CPU (both threads woke for every message).
//!
//! So each Worker task is placed on one of `n` threads, each running a current-thread
//! Tokio runtime with I/O and timers enabled: a wake-up unparks exactly the thread that
//! owns the task. Workers are spread over the threads (fewest Workers first), so
//! different Workers still run in parallel; async tasks go round-robin. With
//! `follow_load`, Worker tasks then move between the threads as their load says (see
//! [`placement`](super::placement)). Callbacks run inside a Tokio runtime context, so
//! `tokio::spawn`, timers and I/O work there. Users who prefer work stealing pass a
//! multi-thread runtime's handle instead.

use super::hand_over::{self, ThreadWake};
use super::placement::{self, Home, ThreadLoad};
use std::future::Future;
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};

/// One thread running a current-thread runtime until the pool shuts down.
pub(crate) struct PoolThread {
    handle: RuntimeHandle,
    /// Its sleep, for quiet wake-ups from the other pool threads (`hand_over`).
    wake: Arc<ThreadWake>,
    /// The Worker tasks placed here, and how busy they keep the thread.
    load: Arc<ThreadLoad>,
}

/// How the blocking `spin()` blocks the thread that calls it.
pub(crate) enum Blocking {
    /// Outside any Tokio runtime, or on a single-threaded runtime that runs none of the
    /// executor's tasks (whose other tasks wait, as under the basic executor's spin).
    Plain,
    /// On a thread of a multi-thread runtime: through `block_in_place`, so the runtime
    /// hands the thread's other tasks to its other threads meanwhile.
    InPlace,
    /// On the single thread that would run the Worker tasks the spin waits for: it
    /// could never end, so the spin refuses.
    Starves,
}

pub(crate) enum Threads {
    /// The executor's own threads.
    Pool {
        threads: Vec<PoolThread>,
        next_task: AtomicUsize,
        stop: Mutex<Vec<oneshot::Sender<()>>>,
        /// The threads themselves, joined when the executor is dropped.
        running: JoinList,
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

/// A runtime's handle, which the executor gives up once it is dropped.
///
/// A Tokio handle keeps its runtime's I/O driver open (an epoll descriptor and an
/// eventfd), even after the runtime itself shut down; and the handles rclrs gives the
/// user (a node, a Worker, an entity) reach the executor's shared state, which holds
/// these. So a Worker kept beyond its executor would otherwise keep two descriptors per
/// pool thread of an executor long gone. Once given up, whatever is spawned is dropped
/// unrun, as Tokio itself does on a runtime that shut down.
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
    fn spawn<F>(&self, task: F) -> Option<JoinHandle<F::Output>>
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
}

impl Threads {
    /// Start `count` threads named `name`.
    pub(crate) fn start_pool(count: usize, name: &str) -> std::io::Result<Self> {
        let mut threads = Vec::with_capacity(count);
        let mut stop = Vec::with_capacity(count);
        let mut running = Vec::with_capacity(count);
        for index in 0..count.max(1) {
            let wake = Arc::new(ThreadWake::default());
            let (parking, unparked, starting) =
                (Arc::clone(&wake), Arc::clone(&wake), Arc::clone(&wake));
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .on_thread_park(move || parking.parking())
                .on_thread_unpark(move || unparked.unparked())
                .build()?;
            let handle = runtime.handle().clone();
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("{name}-{index}"))
                .spawn(move || {
                    starting.started(index);
                    // Runs the thread's tasks until the pool stops; dropping the runtime
                    // here, on its own thread, drops (tears down) the tasks still on it.
                    runtime.block_on(async move {
                        let _ = stop_rx.await;
                    });
                    starting.stopped();
                })?;
            running.push(thread);
            threads.push(PoolThread {
                handle: RuntimeHandle::new(handle),
                wake,
                load: Arc::default(),
            });
            stop.push(stop_tx);
        }
        Ok(Self::Pool {
            threads,
            next_task: AtomicUsize::new(0),
            stop: Mutex::new(stop),
            running: Mutex::new(running),
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

    /// Spawn a Worker task: on pool thread `at`, or else the one with the fewest Workers;
    /// `task` gets the placement (`None` on a user's runtime) and holds it while it runs.
    pub(crate) fn spawn_worker<F>(&self, at: Option<usize>, task: impl FnOnce(Option<Home>) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match self {
            Self::Pool { threads, .. } => {
                let index = at.filter(|&i| i < threads.len()).unwrap_or_else(|| {
                    (0..threads.len())
                        .min_by_key(|&i| threads[i].load.workers())
                        .expect("a pool has at least one thread")
                });
                let thread = &threads[index];
                let home = Home::new(index, Arc::clone(&thread.load));
                thread.handle.spawn(task(Some(home)));
            }
            // A Worker task ends when told to shut down (`workers.rs`).
            Self::External { handle, .. } => {
                handle.spawn(task(None));
            }
        }
    }

    /// About to wake a Worker task placed on pool thread `index`: from another pool
    /// thread that is parking, let the wake-up wait for it instead of preempting it (see
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

    /// Whether the Worker task at `home` should move to another pool thread, and which
    /// (see [`placement::decide`]).
    pub(crate) fn decide_move(&self, home: &Home, now: Instant) -> Option<usize> {
        let Self::Pool { threads, .. } = self else {
            return None;
        };
        let loads: Vec<Arc<ThreadLoad>> = threads.iter().map(|t| Arc::clone(&t.load)).collect();
        placement::decide(&loads, home, now)
    }

    /// Spawn an async task: on the current pool thread when called from one (it is
    /// already running, so no other thread wakes), otherwise round-robin.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self {
            Self::Pool {
                threads, next_task, ..
            } => {
                if let Ok(current) = Handle::try_current() {
                    if threads.iter().any(|t| t.handle.id == current.id()) {
                        current.spawn(task);
                        return;
                    }
                }
                let index = next_task.fetch_add(1, Ordering::Relaxed) % threads.len();
                threads[index].handle.spawn(task);
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

    /// The runtime a dedicated Worker thread enters, so its callbacks can use Tokio: the
    /// pool thread with the fewest Workers, or the user's runtime. `None` once the
    /// executor was dropped.
    pub(crate) fn handle_for_dedicated(&self) -> Option<Handle> {
        match self {
            Self::Pool { threads, .. } => threads
                .iter()
                .min_by_key(|t| t.load.workers())
                .expect("a pool has at least one thread")
                .handle
                .get(),
            Self::External { handle, .. } => handle.get(),
        }
    }

    /// How the blocking `spin()` may block the calling thread (see [`Blocking`]).
    pub(crate) fn blocking_here(&self) -> Blocking {
        let Ok(current) = Handle::try_current() else {
            return Blocking::Plain;
        };
        let ours = match self {
            Self::Pool { .. } => self.is_pool_thread(),
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

    /// Whether the calling thread is one of the pool's threads.
    pub(crate) fn is_pool_thread(&self) -> bool {
        let Self::Pool { threads, .. } = self else {
            return false;
        };
        Handle::try_current()
            .is_ok_and(|current| threads.iter().any(|t| t.handle.id == current.id()))
    }

    /// Stop the pool's threads; their runtimes drop the tasks still on them.
    pub(crate) fn stop(&self) {
        if let Self::Pool { stop, .. } = self {
            for sender in stop.lock().unwrap().drain(..) {
                let _ = sender.send(());
            }
        }
    }

    /// Wait (up to [`TEARDOWN_PATIENCE`]) for the stopped pool threads to end, but for
    /// the calling thread: the tasks their runtimes drop may hold the last nodes, whose
    /// drop finalizes rcl entities and the context (its DDS participant). Returning
    /// earlier would let a process exit while that runs, and the middleware's static
    /// destructors run under it.
    ///
    /// Then give up the runtimes' handles (see [`RuntimeHandle`]). On a runtime the user
    /// passed in, which lives on, abort the async tasks still there instead: as a pool
    /// thread's runtime drops what is left on it, so that a future waiting for ever (or
    /// for the next spin, as rclrs's node task does, holding the node's graph guard
    /// condition and so the node itself) is dropped with the executor. The runtime
    /// drops them on its own threads, soon after.
    pub(crate) fn join(&self) {
        match self {
            Self::Pool {
                running, threads, ..
            } => {
                join_listed(running);
                threads.iter().for_each(|t| t.handle.give_up());
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
