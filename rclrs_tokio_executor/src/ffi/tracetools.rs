//! The ros2_tracing tracepoints the executor emits, from `libtracetools` (the library
//! every ROS 2 rcl links; in the PyPI wheels it bundles its own lttng-ust).
//!
//! Each function of libtracetools checks whether its LTTng tracepoint is enabled in a
//! session and returns at once if not; the executor calls them only while its own
//! switch is on (`crate::ros2_tracing`). The signatures are those of tracetools'
//! `tracetools.h`, the same on every distro rclrs 0.8 supports (Humble to Rolling):
//! every argument is a pointer used as an identifier (tracetools copies it into the
//! event and never dereferences it), or a NUL-terminated string it copies.

use std::ffi::{c_char, c_void, CStr};

#[link(name = "tracetools")]
extern "C" {
    fn ros_trace_callback_start(callback: *const c_void, is_intra_process: bool);
    fn ros_trace_callback_end(callback: *const c_void);
    fn ros_trace_rclcpp_subscription_init(
        subscription_handle: *const c_void,
        subscription: *const c_void,
    );
    fn ros_trace_rclcpp_subscription_callback_added(
        subscription: *const c_void,
        callback: *const c_void,
    );
    fn ros_trace_rclcpp_service_callback_added(
        service_handle: *const c_void,
        callback: *const c_void,
    );
    fn ros_trace_rclcpp_timer_callback_added(timer_handle: *const c_void, callback: *const c_void);
    fn ros_trace_rclcpp_callback_register(callback: *const c_void, function_symbol: *const c_char);
}

/// An address that names something in a trace: a callback, an executor-side entity, or
/// an rcl handle. Only its value goes into events; it is never dereferenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TraceId(usize);

impl TraceId {
    /// The address of `thing`.
    pub(crate) fn of<T: ?Sized>(thing: &T) -> Self {
        Self(thing as *const T as *const () as usize)
    }

    fn ptr(self) -> *const c_void {
        self.0 as *const c_void
    }
}

/// `ros2:callback_start` for `callback` (never intra-process: rclrs has no
/// intra-process delivery).
pub(crate) fn callback_start(callback: TraceId) {
    // SAFETY: tracetools only copies the pointer value into the event.
    unsafe { ros_trace_callback_start(callback.ptr(), false) }
}

/// `ros2:callback_end` for `callback`.
pub(crate) fn callback_end(callback: TraceId) {
    // SAFETY: tracetools only copies the pointer value into the event.
    unsafe { ros_trace_callback_end(callback.ptr()) }
}

/// `ros2:rclcpp_subscription_init`: `subscription` (the executor's object for it) stands
/// for the rcl subscription `handle`.
pub(crate) fn subscription_init(handle: TraceId, subscription: TraceId) {
    // SAFETY: tracetools only copies the two pointer values into the event.
    unsafe { ros_trace_rclcpp_subscription_init(handle.ptr(), subscription.ptr()) }
}

/// `ros2:rclcpp_subscription_callback_added`: `callback` runs for `subscription`.
pub(crate) fn subscription_callback_added(subscription: TraceId, callback: TraceId) {
    // SAFETY: tracetools only copies the two pointer values into the event.
    unsafe { ros_trace_rclcpp_subscription_callback_added(subscription.ptr(), callback.ptr()) }
}

/// `ros2:rclcpp_service_callback_added`: `callback` runs for the rcl service `handle`.
pub(crate) fn service_callback_added(handle: TraceId, callback: TraceId) {
    // SAFETY: tracetools only copies the two pointer values into the event.
    unsafe { ros_trace_rclcpp_service_callback_added(handle.ptr(), callback.ptr()) }
}

/// `ros2:rclcpp_timer_callback_added`: `callback` runs for the rcl timer `handle`.
pub(crate) fn timer_callback_added(handle: TraceId, callback: TraceId) {
    // SAFETY: tracetools only copies the two pointer values into the event.
    unsafe { ros_trace_rclcpp_timer_callback_added(handle.ptr(), callback.ptr()) }
}

/// `ros2:rclcpp_callback_register`: the name tools show for `callback`.
pub(crate) fn callback_register(callback: TraceId, symbol: &CStr) {
    // SAFETY: tracetools copies the pointer value and the NUL-terminated string, which
    // `symbol` keeps alive for the call.
    unsafe { ros_trace_rclcpp_callback_register(callback.ptr(), symbol.as_ptr()) }
}
