//! The `raw_push` floor: what a push-driven design can reach at best. The same rclrs
//! subscriptions and take path as every other Rust row, captured the same way as for
//! [`raw_rcl`](crate::raw_rcl), but no wait set and no executor: each subscription's
//! rcl push callback sets a flag and unparks one dedicated thread, which takes from
//! every subscription until `TAKE_FAILED` and parks again.
//!
//! The callback only does an atomic swap, and an unpark when the flag was clear (a
//! notified flag checked first, so a burst costs one wake-up). The thread clears the
//! flag before it drains, so an arrival during a drain is never lost: it sets the flag
//! again and the next round takes it.

use rclrs::{OnReadyCallback, RclPrimitiveKind, RclrsError, ReadyKind};
use rclrs_tokio_executor::capture::CapturedWorker;
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};
use std::time::Duration;

/// Drain the Worker's subscriptions whenever their push callbacks say something
/// arrived, until `stop` is set.
pub fn drain_on_push(mut worker: CapturedWorker, stop: Arc<AtomicBool>) -> Result<(), RclrsError> {
    let notified = Arc::new(AtomicBool::new(false));
    let drainer = std::thread::current();
    let on_ready: OnReadyCallback = {
        let notified = Arc::clone(&notified);
        Arc::new(move |_: ReadyKind, _: usize| {
            if !notified.swap(true, Ordering::AcqRel) {
                drainer.unpark();
            }
        })
    };
    let mut subscriptions: Vec<_> = std::mem::take(&mut worker.waitables)
        .into_iter()
        .filter(|w| w.primitive().kind() == RclPrimitiveKind::Subscription)
        .collect();
    // Registered after the subscriptions were matched: rmw reports what already
    // arrived from inside the registration, which sets the flag.
    let registrations = subscriptions
        .iter()
        .map(|w| w.primitive().register_on_ready(Arc::clone(&on_ready)))
        .collect::<Result<Vec<_>, _>>()?;
    if registrations.iter().any(Option::is_none) {
        return Err(RclrsError::RclError {
            code: rclrs::RclReturnCode::Unsupported,
            msg: None,
        });
    }
    let payload = &mut *worker.payload;
    let mut result = Ok(());
    while !stop.load(Ordering::Relaxed) && result.is_ok() {
        if !notified.swap(false, Ordering::AcqRel) {
            // Woken by an unpark, or after a while to look at `stop`.
            std::thread::park_timeout(Duration::from_millis(50));
            continue;
        }
        result = subscriptions.iter_mut().try_for_each(|subscription| loop {
            rclrs::reset_take_failed();
            crate::ffi::execute(subscription.primitive_mut(), ReadyKind::Basic, payload)?;
            if rclrs::take_failed_since_reset() {
                return Ok(());
            }
        });
    }
    // Teardown order: no callback can run once the registrations are gone; then the
    // subscriptions may be finalized.
    drop(registrations);
    drop(subscriptions);
    result
}
