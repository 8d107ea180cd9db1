//! Every `unsafe` operation of this crate, each with the invariant it relies on.
//!
//! Two kinds live here:
//! - running an rclrs primitive (`RclPrimitive::execute` is `unsafe` because the payload's
//!   type must match the one the primitive was created for);
//! - a few read-only rcl queries on entity handles, declared here by hand because rclrs
//!   keeps its rcl bindings private. The handle types cannot be named from outside
//!   rclrs, so they are passed as `*const c_void`; the functions only read them.

use rclrs::{RclPrimitive, RclPrimitiveHandle, RclrsError, ReadyKind, Waitable};
use std::any::Any;
use std::ffi::{c_char, c_void, CStr};

/// Run `waitable`'s primitive once with the payload of the Worker that owns it.
///
/// The caller passes the payload of the Worker whose channel received `waitable`.
pub(crate) fn execute(
    waitable: &mut Waitable,
    ready: ReadyKind,
    payload: &mut dyn Any,
) -> Result<(), RclrsError> {
    // SAFETY: rclrs sends a primitive through a Worker's channel only if it was created
    // for that Worker's payload type (node-level primitives go to the node Worker, whose
    // payload is `()`). Every Waitable this executor holds stays with the Worker whose
    // channel delivered it, and the caller passes that Worker's payload. Should the types
    // differ anyway, rclrs 0.8 checks the downcast and returns `InvalidPayload`.
    unsafe { waitable.primitive_mut().execute(ready, payload) }
}

/// Run a primitive from a wait set (the fallback waiter) with a Worker's payload.
///
/// Same contract as [`execute`]: `payload` belongs to the Worker that owns `primitive`.
pub(crate) fn execute_primitive(
    primitive: &mut dyn RclPrimitive,
    ready: ReadyKind,
    payload: &mut dyn Any,
) -> Result<(), RclrsError> {
    // SAFETY: as in `execute`: the fallback waiter of a Worker only holds primitives that
    // arrived through that Worker's channel, and is lent that Worker's payload.
    unsafe { primitive.execute(ready, payload) }
}

/// Run a guard condition's primitive (its rclrs callback, if any) without a payload.
pub(crate) fn execute_guard_condition(
    primitive: &mut dyn RclPrimitive,
    ready: ReadyKind,
) -> Result<(), RclrsError> {
    debug_assert!(primitive.kind() == rclrs::RclPrimitiveKind::GuardCondition);
    // SAFETY: rclrs 0.8's guard-condition primitive ignores its payload argument (it
    // only calls the guard condition's own callback), so any payload type is correct.
    unsafe { primitive.execute(ready, &mut ()) }
}

extern "C" {
    fn rcl_subscription_get_topic_name(subscription: *const c_void) -> *const c_char;
    fn rcl_service_get_service_name(service: *const c_void) -> *const c_char;
    fn rcl_client_get_service_name(client: *const c_void) -> *const c_char;
}

/// The topic or service name of a primitive, for log messages.
pub(crate) fn entity_name(primitive: &dyn RclPrimitive) -> String {
    fn read(name: *const c_char) -> String {
        if name.is_null() {
            return String::from("<unnamed>");
        }
        // SAFETY: rcl returns either null (checked above) or a pointer to the entity's
        // NUL-terminated name, which lives as long as the entity; the guard held by the
        // caller keeps the entity alive and locked while we copy it out.
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    }
    match primitive.handle() {
        RclPrimitiveHandle::Subscription(guard) => {
            let ptr = &*guard as *const _ as *const c_void;
            // SAFETY: `ptr` points to a live, initialised rcl_subscription_t (locked by
            // `guard`); the function only reads it.
            read(unsafe { rcl_subscription_get_topic_name(ptr) })
        }
        RclPrimitiveHandle::Service(guard) => {
            let ptr = &*guard as *const _ as *const c_void;
            // SAFETY: `ptr` points to a live, initialised rcl_service_t (locked by `guard`).
            read(unsafe { rcl_service_get_service_name(ptr) })
        }
        RclPrimitiveHandle::Client(guard) => {
            let ptr = &*guard as *const _ as *const c_void;
            // SAFETY: `ptr` points to a live, initialised rcl_client_t (locked by `guard`).
            read(unsafe { rcl_client_get_service_name(ptr) })
        }
        RclPrimitiveHandle::GuardCondition(_) => String::from("<guard condition>"),
        RclPrimitiveHandle::Timer(_) => String::from("<timer>"),
        RclPrimitiveHandle::Event(_) => String::from("<event>"),
        RclPrimitiveHandle::ActionServer(_) => String::from("<action server>"),
        RclPrimitiveHandle::ActionClient(_) => String::from("<action client>"),
    }
}
