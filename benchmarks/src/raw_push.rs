//! The `raw_push` floor: what a push-driven design can reach at best. The same rclrs
//! subscriptions and take path as every other Rust row, captured the same way as for
//! [`raw_rcl`](crate::raw_rcl), but no wait set and no executor: each subscription's
//! rcl push callback adds the arrivals it reports to the subscription's count and
//! unparks one dedicated thread, which takes each subscription once per counted arrival
//! and parks again. Like rclcpp's EventsExecutor (one execution per event), it never
//! pays for a take that finds nothing while the count is exact; since the count is
//! arrivals and rmw may have dropped some (QoS depth), it stops a subscription at the
//! first `TAKE_FAILED`.
//!
//! The callback only does an atomic add and swap, and an unpark when the notified flag
//! was clear (so a burst costs one wake-up). The thread clears the flag before it
//! claims the counts, so an arrival during a drain is never lost: it sets the flag
//! again and the next round takes it.

use rclrs::{OnReadyCallback, RclPrimitiveKind, RclrsError, ReadyKind};
use rclrs_tokio_executor::capture::CapturedWorker;
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};
use std::time::Duration;

/// Drain the Worker's subscriptions whenever their push callbacks say something
/// arrived, until `stop` is set.
pub fn drain_on_push(mut worker: CapturedWorker, stop: Arc<AtomicBool>) -> Result<(), RclrsError> {
    let notified = Arc::new(AtomicBool::new(false));
    let drainer = std::thread::current();
    let mut subscriptions: Vec<_> = std::mem::take(&mut worker.waitables)
        .into_iter()
        .filter(|w| w.primitive().kind() == RclPrimitiveKind::Subscription)
        .collect();
    let arrivals: Vec<Arc<AtomicUsize>> = subscriptions.iter().map(|_| Arc::default()).collect();
    // Registered after the subscriptions were matched: rmw reports what already
    // arrived from inside the registration, which sets the flag.
    let registrations = subscriptions
        .iter()
        .zip(&arrivals)
        .map(|(w, arrived)| {
            let (notified, arrived, drainer) =
                (Arc::clone(&notified), Arc::clone(arrived), drainer.clone());
            let on_ready: OnReadyCallback = Arc::new(move |_: ReadyKind, count: usize| {
                arrived.fetch_add(count, Ordering::AcqRel);
                if !notified.swap(true, Ordering::AcqRel) {
                    drainer.unpark();
                }
            });
            w.primitive().register_on_ready(on_ready)
        })
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
        result = subscriptions
            .iter_mut()
            .zip(&arrivals)
            .try_for_each(|(subscription, arrived)| {
                for _ in 0..arrived.swap(0, Ordering::AcqRel) {
                    rclrs::reset_take_failed();
                    crate::ffi::execute(subscription.primitive_mut(), ReadyKind::Basic, payload)?;
                    if rclrs::take_failed_since_reset() {
                        break;
                    }
                }
                Ok(())
            });
    }
    // Teardown order: no callback can run once the registrations are gone; then the
    // subscriptions may be finalized.
    drop(registrations);
    drop(subscriptions);
    result
}
