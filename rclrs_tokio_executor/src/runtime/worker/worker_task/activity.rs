//! Activity listeners (`Worker::listen`, `Worker::listen_until`): called with the
//! Worker's payload after each callback of one of its entities, and after each payload
//! task, guard condition or fallback loan it runs, while spinning. The basic executor
//! calls them after each wait that ran something, which for one entity with a backlog
//! is once per message (it takes one per wait), so a `listen_until` condition sees
//! every step of the payload there; here it does too.

use crate::runtime::panics::log_panic;
use rclrs::{ActivityListenerCallback, WeakActivityListener};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Call every live listener with `payload`, forgetting those that are gone. A listener
/// that panics is contained and logged, and stays.
pub(super) fn notify(listeners: &mut Vec<WeakActivityListener>, payload: &mut dyn Any) {
    listeners.retain(|weak| {
        let Some(listener) = weak.upgrade() else {
            return false;
        };
        // Taken out while it runs, so that it may replace itself (`listen_until` does).
        let taken = listener.lock().unwrap().take();
        if let Some(mut callback) = taken {
            if let ActivityListenerCallback::Listen(listen) = &mut callback {
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| listen(payload))) {
                    log_panic("an activity listener", &*panic);
                }
            }
            listener.lock().unwrap().replace(callback);
        }
        true
    });
}
