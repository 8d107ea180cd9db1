//! One `spin()`: open the gate, wait for a stop condition, close the gate, wait for the
//! callbacks in flight. Every wait is a notification; nothing sleeps in a loop.
//!
//! Stop conditions, as with the rclrs basic executor:
//! - `halt_spinning` (rclrs calls `wake_all_wait_sets`, which wakes this future);
//! - the context is no longer valid (checked whenever the future wakes);
//! - `until_promise_resolved`: the promise resolves or its sender is dropped;
//! - `timeout`: reported as `RclReturnCode::Timeout`, even if work was done;
//! - `only_next_available_work`: once a unit of work has run. Work that was already
//!   queued when the spin started is run even if the timeout is zero.

use crate::runtime::shared::ExecutorShared;
use rclrs::{RclReturnCode, RclrsError, SpinConditions};
use std::sync::{atomic::Ordering, Arc};
use std::time::Duration;
use tokio::time::Instant;

pub(crate) async fn spin(
    shared: Arc<ExecutorShared>,
    conditions: SpinConditions,
) -> Vec<RclrsError> {
    let SpinConditions {
        options,
        halt_spinning,
        context,
        ..
    } = conditions;
    let mut errors = Vec::new();
    if !context.ok() || shared.is_shut_down() {
        return errors;
    }
    let deadline = options.timeout.map(|t| Instant::now() + t);
    let only_next = options.only_next_available_work;
    let mut promise = options.until_promise_resolved;
    let work_seen = shared.gate.work_done();
    let queued_at_start = shared.queued.load(Ordering::SeqCst) > 0;

    shared.gate.open();
    loop {
        let woken = shared.wake_spin.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if halt_spinning.load(Ordering::Acquire) || !context.ok() || shared.is_shut_down() {
            break;
        }
        let promise_resolved = async {
            match promise.as_mut() {
                Some(p) => {
                    let _ = p.await;
                }
                None => std::future::pending().await,
            }
        };
        let timed_out = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        let worked = async {
            if only_next {
                shared.gate.worked_since(work_seen).await
            } else {
                std::future::pending().await
            }
        };
        tokio::select! {
            biased;
            _ = woken => continue,
            _ = worked => break,
            _ = promise_resolved => break,
            _ = timed_out => {
                if queued_at_start && shared.gate.work_done() == work_seen {
                    // Work was waiting when the spin began: a zero or short timeout
                    // still runs it, as the basic executor's non-blocking wait does.
                    let _ = tokio::time::timeout(
                        Duration::from_secs(1),
                        shared.gate.worked_since(work_seen),
                    )
                    .await;
                }
                errors.push(RclrsError::RclError {
                    code: RclReturnCode::Timeout,
                    msg: None,
                });
                break;
            }
        }
    }
    shared.gate.close();
    shared.gate.drained().await;
    errors
}
