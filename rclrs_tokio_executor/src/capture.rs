//! A runtime that runs nothing: [`CaptureRuntime`] hands every Worker rclrs creates
//! (its payload, its primitives and its async tasks) to the caller, who drives the rcl
//! entities by hand.
//!
//! This is how the benchmark floors (`raw_rcl`, a bare `rcl_wait` loop, and `raw_push`,
//! a bare push-callback loop) and the tests of the rclrs push hook use rclrs's entities
//! and take path with no executor in between. Code that wants the same (a test of one
//! entity, a loop of its own) can use it too:
//!
//! ```no_run
//! use rclrs::*;
//! use rclrs_tokio_executor::capture::CaptureRuntime;
//! use ros_env::std_msgs::msg::Int32;
//!
//! let context = Context::default_from_env().unwrap();
//! let capture = CaptureRuntime::new();
//! let executor = context.create_executor(capture.clone());
//! let node = executor.create_node("by_hand").unwrap();
//! let _subscription = node.create_subscription("chatter", |_: Int32| {}).unwrap();
//! let waitable = capture.take_last_waitable().unwrap();
//! assert!(waitable.primitive().kind() == RclPrimitiveKind::Subscription);
//! ```
//!
//! Nothing is ever spun: `spin` returns at once with no error. Async tasks are kept for
//! [`CaptureRuntime::run_tasks`], unless the runtime was made with
//! [`CaptureRuntime::dropping_tasks`]. Kept tasks often hold the nodes whose Worker
//! channels hold this runtime, so call [`CaptureRuntime::clear`] when done, or the
//! context (and its DDS participant) lives until the process exits.

use futures::future::BoxFuture;
use rclrs::{
    ExecutorChannel, ExecutorRuntime, ExecutorWorkerOptions, PayloadTask, RclrsError,
    SpinConditions, Waitable, WeakActivityListener, WorkerChannel,
};
use std::any::Any;
use std::sync::{Arc, Mutex};
use std::task::Context;

/// A Worker as the capture runtime saw it.
pub struct CapturedWorker {
    /// The Worker's payload, which its primitives are executed with.
    pub payload: Box<dyn Any + Send>,
    /// The primitives rclrs added to the Worker, in creation order.
    pub waitables: Vec<Waitable>,
    /// The async tasks rclrs handed to the Worker, not yet finished.
    pub tasks: Vec<BoxFuture<'static, ()>>,
}

impl std::fmt::Debug for CapturedWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapturedWorker")
            .field("waitables", &self.waitables.len())
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

/// An `ExecutorRuntime` that runs nothing and records what rclrs gives it (see the
/// [module documentation](self)). Clones share what was recorded.
#[derive(Clone, Default)]
pub struct CaptureRuntime {
    captured: Arc<Mutex<Captured>>,
}

impl std::fmt::Debug for CaptureRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureRuntime").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Captured {
    /// Every Worker created, in creation order (a taken one is removed).
    workers: Vec<Arc<Mutex<CapturedWorker>>>,
    /// The Worker that received the newest primitive.
    newest: Option<Arc<Mutex<CapturedWorker>>>,
    drop_tasks: bool,
}

impl CaptureRuntime {
    /// A runtime that keeps async tasks for [`run_tasks`](Self::run_tasks).
    pub fn new() -> Self {
        Self::default()
    }

    /// A runtime that drops every async task as rclrs hands it over: for loops that
    /// only execute primitives and must not keep nodes alive through their tasks.
    pub fn dropping_tasks() -> Self {
        let runtime = Self::default();
        runtime.captured.lock().unwrap().drop_tasks = true;
        runtime
    }

    /// Remove the most recently created Worker and return its payload, primitives and
    /// tasks. Primitives and tasks rclrs adds to it later are still recorded in it, but
    /// nobody gets them.
    pub fn take_last_worker(&self) -> Option<CapturedWorker> {
        let worker = self.captured.lock().unwrap().workers.pop()?;
        let mut worker = worker.lock().unwrap();
        Some(CapturedWorker {
            payload: std::mem::replace(&mut worker.payload, Box::new(())),
            waitables: std::mem::take(&mut worker.waitables),
            tasks: std::mem::take(&mut worker.tasks),
        })
    }

    /// Remove and return the newest primitive (the entity just created).
    pub fn take_last_waitable(&self) -> Option<Waitable> {
        let newest = self.captured.lock().unwrap().newest.clone()?;
        let waitable = newest.lock().unwrap().waitables.pop();
        waitable
    }

    /// Poll every recorded async task once (with a waker that does nothing); keep
    /// those still pending.
    pub fn run_tasks(&self) {
        let workers = self.captured.lock().unwrap().workers.clone();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        for worker in workers {
            let tasks = std::mem::take(&mut worker.lock().unwrap().tasks);
            let mut pending = Vec::new();
            for mut task in tasks {
                if task.as_mut().poll(&mut cx).is_pending() {
                    pending.push(task);
                }
            }
            worker.lock().unwrap().tasks.extend(pending);
        }
    }

    /// Drop every recorded primitive and task.
    pub fn clear(&self) {
        let workers = {
            let mut captured = self.captured.lock().unwrap();
            captured.newest = None;
            std::mem::take(&mut captured.workers)
        };
        for worker in workers {
            // Dropped outside the lock: a task's drop may drop a node, which may call
            // back into its Worker's channel.
            let (waitables, tasks) = {
                let mut worker = worker.lock().unwrap();
                (
                    std::mem::take(&mut worker.waitables),
                    std::mem::take(&mut worker.tasks),
                )
            };
            drop((waitables, tasks));
        }
    }
}

/// The executor channel: makes a recording slot per Worker.
struct Channel(Arc<Mutex<Captured>>);

/// One Worker's channel: records into its slot.
struct WorkerSlot {
    captured: Arc<Mutex<Captured>>,
    worker: Arc<Mutex<CapturedWorker>>,
}

impl ExecutorChannel for Channel {
    fn create_worker(&self, options: ExecutorWorkerOptions) -> Arc<dyn WorkerChannel> {
        let worker = Arc::new(Mutex::new(CapturedWorker {
            payload: options.payload,
            waitables: Vec::new(),
            tasks: Vec::new(),
        }));
        self.0.lock().unwrap().workers.push(Arc::clone(&worker));
        Arc::new(WorkerSlot {
            captured: Arc::clone(&self.0),
            worker,
        })
    }

    fn wake_all_wait_sets(&self) {}
}

impl WorkerChannel for WorkerSlot {
    fn add_async_task(&self, task: BoxFuture<'static, ()>) {
        if !self.captured.lock().unwrap().drop_tasks {
            self.worker.lock().unwrap().tasks.push(task);
        }
    }

    fn add_to_wait_set(&self, new_entity: Waitable) {
        self.worker.lock().unwrap().waitables.push(new_entity);
        self.captured.lock().unwrap().newest = Some(Arc::clone(&self.worker));
    }

    fn send_payload_task(&self, _task: PayloadTask) {}

    fn add_activity_listener(&self, _listener: WeakActivityListener) {}
}

impl ExecutorRuntime for CaptureRuntime {
    fn channel(&self) -> Arc<dyn ExecutorChannel> {
        Arc::new(Channel(Arc::clone(&self.captured)))
    }

    fn spin(&mut self, _conditions: SpinConditions) -> Vec<RclrsError> {
        Vec::new()
    }

    fn spin_async(
        self: Box<Self>,
        _conditions: SpinConditions,
    ) -> BoxFuture<'static, (Box<dyn ExecutorRuntime>, Vec<RclrsError>)> {
        Box::pin(async move { (self as Box<dyn ExecutorRuntime>, Vec::new()) })
    }
}
