//! The only `unsafe` of the benchmark nodes: running a captured rclrs primitive.

use rclrs::{RclPrimitive, RclrsError, ReadyKind};
use std::any::Any;

/// Run `primitive` once with the payload of the Worker it was created on.
pub(crate) fn execute(
    primitive: &mut dyn RclPrimitive,
    ready: ReadyKind,
    payload: &mut dyn Any,
) -> Result<(), RclrsError> {
    // SAFETY: the raw loop passes each primitive the payload captured from the Worker
    // whose channel delivered it (`rclrs_tokio_executor::capture::CapturedWorker`);
    // rclrs also checks the downcast and returns InvalidPayload on a mismatch.
    unsafe { primitive.execute(ready, payload) }
}
