//! The `raw_rcl` floor: the same rclrs subscription, drained by a tight loop with no
//! executor. A capture runtime collects the Worker's payload and primitives as rclrs
//! creates them; one thread then waits on an rcl wait set and, for each ready
//! subscription, takes until `TAKE_FAILED`. It is the fastest this rmw and rclrs's own
//! take path allow, the limit every executor is measured against.

use futures::future::BoxFuture;
use rclrs::{
    Context, ExecutorChannel, ExecutorRuntime, ExecutorWorkerOptions, PayloadTask,
    RclPrimitiveKind, RclReturnCode, RclrsError, SpinConditions, WaitSet, Waitable,
    WeakActivityListener, WorkerChannel,
};
use std::any::Any;
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};
use std::time::Duration;

/// A Worker as the capture runtime saw it: its payload and its primitives.
pub struct CapturedWorker {
    /// The Worker's payload.
    pub payload: Box<dyn Any + Send>,
    /// Primitives rclrs added to the Worker.
    pub waitables: Vec<Waitable>,
}

/// An `ExecutorRuntime` that runs nothing: it only records Workers and primitives.
#[derive(Clone, Default)]
pub struct CaptureRuntime {
    workers: Arc<Mutex<Vec<Arc<Mutex<CapturedWorker>>>>>,
}

impl CaptureRuntime {
    /// Take the most recently created Worker's payload and primitives.
    pub fn take_last_worker(&self) -> Option<CapturedWorker> {
        let worker = self.workers.lock().unwrap().pop()?;
        let mut worker = worker.lock().unwrap();
        Some(CapturedWorker {
            payload: std::mem::replace(&mut worker.payload, Box::new(())),
            waitables: std::mem::take(&mut worker.waitables),
        })
    }
}

struct Channel(Arc<Mutex<Vec<Arc<Mutex<CapturedWorker>>>>>);
struct WorkerSlot(Arc<Mutex<CapturedWorker>>);

impl ExecutorChannel for Channel {
    fn create_worker(&self, options: ExecutorWorkerOptions) -> Arc<dyn WorkerChannel> {
        let worker = Arc::new(Mutex::new(CapturedWorker {
            payload: options.payload,
            waitables: Vec::new(),
        }));
        self.0.lock().unwrap().push(Arc::clone(&worker));
        Arc::new(WorkerSlot(worker))
    }
    fn wake_all_wait_sets(&self) {}
}

impl WorkerChannel for WorkerSlot {
    fn add_async_task(&self, _f: BoxFuture<'static, ()>) {}
    fn add_to_wait_set(&self, new_entity: Waitable) {
        self.0.lock().unwrap().waitables.push(new_entity);
    }
    fn send_payload_task(&self, _f: PayloadTask) {}
    fn add_activity_listener(&self, _listener: WeakActivityListener) {}
}

impl ExecutorRuntime for CaptureRuntime {
    fn channel(&self) -> Arc<dyn ExecutorChannel> {
        Arc::new(Channel(Arc::clone(&self.workers)))
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

/// Wait for the Worker's primitives and drain each ready one until `TAKE_FAILED`,
/// until `stop` is set.
pub fn drain_loop(
    context: &Context,
    mut worker: CapturedWorker,
    stop: Arc<AtomicBool>,
) -> Result<(), RclrsError> {
    let mut wait_set = WaitSet::new(context)?;
    wait_set.add(std::mem::take(&mut worker.waitables))?;
    let payload = &mut *worker.payload;
    while !stop.load(Ordering::Relaxed) {
        let result = wait_set.wait(Some(Duration::from_millis(50)), |ready, primitive| {
            if primitive.kind() != RclPrimitiveKind::Subscription {
                // The Worker's guard condition: nothing to take.
                return crate::ffi::execute(primitive, ready, payload);
            }
            loop {
                rclrs::reset_take_failed();
                crate::ffi::execute(primitive, ready, payload)?;
                if rclrs::take_failed_since_reset() {
                    return Ok(());
                }
            }
        });
        match result {
            Ok(()) => {}
            // Nothing arrived within the wait's timeout: check `stop` and wait again.
            Err(RclrsError::RclError {
                code: RclReturnCode::Timeout,
                ..
            }) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}
