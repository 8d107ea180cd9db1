//! The `raw_rcl` floor: the same rclrs subscription, drained by a tight loop with no
//! executor. A capture runtime ([`rclrs_tokio_executor::capture`]) collects the Worker's payload and primitives as
//! rclrs creates them; one thread then waits on an rcl wait set and, for each ready
//! subscription, takes until `TAKE_FAILED`. It is the fastest this rmw and rclrs's own
//! take path allow, the limit every executor is measured against.

use rclrs::{Context, RclPrimitiveKind, RclrsError, WaitSet};
use rclrs_tokio_executor::capture::CapturedWorker;
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};
use std::time::Duration;

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
            Err(err) if crate::is_timeout(&err) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}
