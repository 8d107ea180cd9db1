//! A minimal `ExecutorRuntime` that never waits or runs anything by itself: it hands
//! every Waitable rclrs creates to the test, and keeps async tasks for the test to poll.
//! It lets tests exercise the rclrs push-callback hook directly, with no executor in
//! between.

use futures::future::BoxFuture;
use rclrs::{
    ExecutorChannel, ExecutorRuntime, ExecutorWorkerOptions, PayloadTask, RclPrimitiveKind,
    RclrsError, SpinConditions, Waitable, WeakActivityListener, WorkerChannel,
};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

#[derive(Default)]
pub struct Captured {
    pub waitables: Vec<Waitable>,
    pub tasks: Vec<BoxFuture<'static, ()>>,
}

#[derive(Clone, Default)]
pub struct CaptureRuntime {
    pub captured: Arc<Mutex<Captured>>,
}

impl CaptureRuntime {
    /// Remove and return the first captured Waitable of `kind`.
    pub fn take(&self, kind: RclPrimitiveKind) -> Option<Waitable> {
        let mut captured = self.captured.lock().unwrap();
        let index = captured
            .waitables
            .iter()
            .position(|w| w.primitive().kind() == kind)?;
        Some(captured.waitables.remove(index))
    }

    /// Drop everything captured. The async tasks rclrs hands over hold its nodes, whose
    /// Worker channels hold this capture: without this the context, and its DDS
    /// participant with its threads, would live until the process exits.
    pub fn clear(&self) {
        let mut captured = self.captured.lock().unwrap();
        captured.waitables.clear();
        captured.tasks.clear();
    }

    /// Poll every captured async task once; keep those still pending.
    pub fn run_tasks(&self) {
        let tasks: Vec<_> = std::mem::take(&mut self.captured.lock().unwrap().tasks);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut pending = Vec::new();
        for mut task in tasks {
            if let Poll::Pending = task.as_mut().poll(&mut cx) {
                pending.push(task);
            }
        }
        self.captured.lock().unwrap().tasks.extend(pending);
    }
}

struct Channel(Arc<Mutex<Captured>>);

impl ExecutorChannel for Channel {
    fn create_worker(&self, _options: ExecutorWorkerOptions) -> Arc<dyn WorkerChannel> {
        Arc::new(Channel(Arc::clone(&self.0)))
    }
    fn wake_all_wait_sets(&self) {}
}

impl WorkerChannel for Channel {
    fn add_async_task(&self, f: BoxFuture<'static, ()>) {
        self.0.lock().unwrap().tasks.push(f);
    }
    fn add_to_wait_set(&self, new_entity: Waitable) {
        self.0.lock().unwrap().waitables.push(new_entity);
    }
    fn send_payload_task(&self, _f: PayloadTask) {}
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
