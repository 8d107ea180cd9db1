//! ros2_tracing events from the executor, so that an LTTng trace of a node on it holds
//! what a trace of an rclcpp node holds: `ros2:callback_start` and `ros2:callback_end`
//! around every callback, and the registration events that tie each callback to its
//! rcl entity, which `tracetools_analysis` and Trace Compass read.
//!
//! # Switch
//!
//! Off by default: a callback then costs one relaxed load more. On with
//! [`set_ros2_tracing`], or with `RCLRS_TOKIO_ROS2_TRACING=1` in the environment (read
//! when the first entity is registered). While on, each event is a call into
//! libtracetools, which returns at once unless an LTTng session records `ros2:*`.
//! Registration events are emitted when an entity reaches its Worker, so the switch must
//! be on, and the session recording, before the node's entities are created (as with
//! rclcpp, whose registration events come from the entities' constructors).
//!
//! # Events, and what they name
//!
//! A callback is named by the address of the rclrs primitive that runs it (one per
//! entity), or by the address of a fan-out callback's handle. At registration
//! (`runtime::worker_task::registration`):
//! - a subscription: `rclcpp_subscription_init(rcl handle, primitive)`,
//!   `rclcpp_subscription_callback_added(primitive, callback)`;
//! - a service: `rclcpp_service_callback_added(rcl handle, callback)`;
//! - a timer: `rclcpp_timer_callback_added(rcl handle, callback)`;
//! - every entity, and every fan-out callback: `rclcpp_callback_register(callback,
//!   name)`, the name tools show: `subscription /chatter`, `service /add`, `client
//!   /add`, `action server /fibonacci`, `timer, period 100000000 ns`, `event`, or
//!   `fan-out callback <topic as given>`.
//!
//! The rcl handles are the ones rcl's own `rcl_subscription_init`, `rcl_service_init`
//! and `rcl_timer_init` events name (rclrs patch 0023 makes that so), which carry the
//! topic or service and the node. Not emitted, for want of a counterpart in the tools or
//! of the data: `rclcpp_timer_link_node` (an rclrs timer does not know its node), and
//! an `*_callback_added` for clients, action servers and clients (rclcpp and
//! rclcpp_action have none; their callbacks are known by the registered name only), and
//! for fan-out callbacks (the fan-out cannot see its subscription's rcl handle).
//!
//! `callback_start`/`callback_end` enclose one execution of the primitive
//! (`ffi::execute`): rclrs's take and the callback it runs, so an execution whose take
//! finds nothing (the last one of a drain that empties rmw's queue) shows as a short
//! callback too. A fan-out callback's pair is inside the pair of the subscription whose
//! take ran it when it runs inline. Closures sent with `Worker::run` belong to no entity
//! and emit nothing; guard conditions neither.

pub(crate) use crate::ffi::TraceId;
use crate::ffi::{self, tracetools};
use rclrs::{RclPrimitive, RclPrimitiveHandle, RclPrimitiveKind};
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, Once};

/// The environment variable that switches ros2_tracing events on at start.
pub const ROS2_TRACING_ENV: &str = "RCLRS_TOKIO_ROS2_TRACING";

const OFF: u8 = 0;
const ON: u8 = 1;
static SWITCH: AtomicU8 = AtomicU8::new(OFF);
static FROM_ENV: Once = Once::new();

/// Emit ros2_tracing events from every Tokio executor of this process (`on`), or stop.
/// Entities registered while it was off have no registration events.
pub fn set_ros2_tracing(on: bool) {
    // The environment no longer decides.
    FROM_ENV.call_once(|| {});
    SWITCH.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether the executor emits ros2_tracing events (see [`set_ros2_tracing`]).
pub fn ros2_tracing() -> bool {
    switch_from_env();
    enabled()
}

/// The per-callback check: one relaxed load.
#[inline]
fn enabled() -> bool {
    SWITCH.load(Ordering::Relaxed) == ON
}

fn switch_from_env() {
    FROM_ENV.call_once(|| {
        let on = std::env::var(ROS2_TRACING_ENV)
            .is_ok_and(|v| matches!(v.as_str(), "1" | "true" | "on" | "yes"));
        if on {
            SWITCH.store(ON, Ordering::Relaxed);
        }
    });
}

/// Run `callback_body`, the execution of the callback `id`, between its
/// `callback_start` and `callback_end` (also when it unwinds).
#[inline]
pub(crate) fn callback<R>(id: TraceId, callback_body: impl FnOnce() -> R) -> R {
    if !enabled() {
        return callback_body();
    }
    struct End(TraceId);
    impl Drop for End {
        fn drop(&mut self) {
            tracetools::callback_end(self.0);
        }
    }
    tracetools::callback_start(id);
    let _end = End(id);
    callback_body()
}

/// The callback id of `primitive`: its address, which stays put while it lives.
pub(crate) fn primitive_id(primitive: &dyn RclPrimitive) -> TraceId {
    TraceId::of(primitive)
}

/// What was last registered under each callback id: the rcl handle and the name. A
/// primitive can reach a Worker twice (rclrs's `/clock` subscription moves on to the
/// clock task), and tools need each entity's events once.
static REGISTERED: Mutex<Option<HashMap<TraceId, (TraceId, String)>>> = Mutex::new(None);

/// The registration events of an entity that reached its Worker.
pub(crate) fn registered(primitive: &dyn RclPrimitive) {
    switch_from_env();
    if !enabled() || primitive.kind() == RclPrimitiveKind::GuardCondition {
        return;
    }
    let callback = primitive_id(primitive);
    let (kind, handle) = rcl_handle(primitive);
    let name = match primitive.kind() {
        RclPrimitiveKind::Timer => match ffi::RclTimer::of(primitive).and_then(|t| t.period()) {
            Some(ns) => format!("timer, period {ns} ns"),
            None => String::from("timer"),
        },
        RclPrimitiveKind::Event => String::from("event"),
        _ => format!("{kind} {}", ffi::entity_name(primitive)),
    };
    {
        let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        let seen = registered.get_or_insert_with(HashMap::new);
        if seen.get(&callback) == Some(&(handle, name.clone())) {
            return;
        }
        seen.insert(callback, (handle, name.clone()));
    }
    match primitive.kind() {
        RclPrimitiveKind::Subscription => {
            tracetools::subscription_init(handle, callback);
            tracetools::subscription_callback_added(callback, callback);
        }
        RclPrimitiveKind::Service => tracetools::service_callback_added(handle, callback),
        RclPrimitiveKind::Timer => tracetools::timer_callback_added(handle, callback),
        _ => {}
    }
    register_name(callback, name);
}

/// The registration event of a fan-out callback on `topic`.
pub(crate) fn fanout_callback_added(id: TraceId, topic: &str) {
    switch_from_env();
    if enabled() {
        register_name(id, format!("fan-out callback {topic}"));
    }
}

fn register_name(callback: TraceId, name: String) {
    // Names come from rcl (no NUL inside); should one hold a NUL, it is cut there.
    let name = CString::new(name).unwrap_or_else(|err| {
        let end = err.nul_position();
        CString::new(&err.into_vec()[..end]).unwrap_or_default()
    });
    tracetools::callback_register(callback, &name);
}

/// The kind of `primitive` as a word, and the address of its rcl handle (the rcl struct
/// rclrs passes to every rcl call for it).
fn rcl_handle(primitive: &dyn RclPrimitive) -> (&'static str, TraceId) {
    match primitive.handle() {
        RclPrimitiveHandle::Subscription(guard) => ("subscription", TraceId::of(&*guard)),
        RclPrimitiveHandle::Service(guard) => ("service", TraceId::of(&*guard)),
        RclPrimitiveHandle::Client(guard) => ("client", TraceId::of(&*guard)),
        RclPrimitiveHandle::Timer(guard) => ("timer", TraceId::of(&*guard)),
        RclPrimitiveHandle::GuardCondition(guard) => ("guard condition", TraceId::of(&*guard)),
        RclPrimitiveHandle::Event(guard) => ("event", TraceId::of(&*guard)),
        RclPrimitiveHandle::ActionServer(guard) => ("action server", TraceId::of(&*guard)),
        RclPrimitiveHandle::ActionClient(guard) => ("action client", TraceId::of(&*guard)),
    }
}
