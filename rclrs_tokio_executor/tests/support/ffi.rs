//! The only `unsafe` of the test support: running a captured rclrs primitive.

use rclrs::{RclrsError, ReadyKind, Waitable};

/// Execute a node-level primitive once (node-level primitives take the `()` payload).
pub fn execute_node_primitive(waitable: &mut Waitable) -> Result<(), RclrsError> {
    // SAFETY: the capture runtime only receives node-level primitives through the
    // executor's node Worker, whose payload type is `()`; rclrs checks the downcast too.
    unsafe { waitable.primitive_mut().execute(ReadyKind::Basic, &mut ()) }
}
