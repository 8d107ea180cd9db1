//! Every `unsafe` operation of this crate, each with the invariant it relies on.
//!
//! Three kinds live here:
//! - running an rclrs primitive (`RclPrimitive::execute` is `unsafe` because the payload's
//!   type must match the one the primitive was created for);
//! - a few rcl calls on entity handles, declared here by hand because rclrs keeps its rcl
//!   bindings private. The handle types cannot be named from outside rclrs, so they are
//!   passed as `*const c_void`: name queries, and the timer functions the timer
//!   scheduler needs (rcl documents them as thread-safe: they use atomics);
//! - the ros2_tracing tracepoints of libtracetools (`tracetools`);
//! - a timer-driving thread's timer slack (`prctl`), a dedicated Worker thread's CPU
//!   affinity and SCHED_FIFO priority (`sched_setaffinity`, `sched_setscheduler`), and
//!   the scheduling policy of quiet wake-ups (`runtime::hand_over`).

use crate::ros2_tracing;
use rclrs::{RclPrimitive, RclPrimitiveHandle, RclrsError, ReadyKind, Waitable};
use std::any::Any;
use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run `waitable`'s primitive once with the payload of the Worker that owns it.
///
/// The caller passes the payload of the Worker whose channel received `waitable`.
pub(crate) fn execute(
    waitable: &mut Waitable,
    ready: ReadyKind,
    payload: &mut dyn Any,
) -> Result<(), RclrsError> {
    let id = ros2_tracing::primitive_id(waitable.primitive());
    ros2_tracing::callback(id, || {
        // SAFETY: rclrs sends a primitive through a Worker's channel only if it was
        // created for that Worker's payload type (node-level primitives go to the node
        // Worker, whose payload is `()`). Every Waitable this executor holds stays with
        // the Worker whose channel delivered it, and the caller passes that Worker's
        // payload. Should the types differ anyway, rclrs 0.8 checks the downcast and
        // returns `InvalidPayload`.
        unsafe { waitable.primitive_mut().execute(ready, payload) }
    })
}

/// Run a primitive from a wait set (the fallback waiter) with a Worker's payload.
///
/// Same contract as [`execute`]: `payload` belongs to the Worker that owns `primitive`.
pub(crate) fn execute_primitive(
    primitive: &mut dyn RclPrimitive,
    ready: ReadyKind,
    payload: &mut dyn Any,
) -> Result<(), RclrsError> {
    let id = ros2_tracing::primitive_id(primitive);
    ros2_tracing::callback(id, || {
        // SAFETY: as in `execute`: the fallback waiter of a Worker only holds primitives
        // that arrived through that Worker's channel, and is lent that Worker's payload.
        unsafe { primitive.execute(ready, payload) }
    })
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
    fn rcl_timer_get_time_until_next_call(timer: *const c_void, out: *mut i64) -> i32;
    fn rcl_timer_get_next_call_time(timer: *const c_void, out: *mut i64) -> i32;
    fn rcl_timer_get_period(timer: *const c_void, out: *mut i64) -> i32;
    fn rcl_timer_set_on_reset_callback(
        timer: *const c_void,
        callback: Option<unsafe extern "C" fn(*const c_void, usize)>,
        user_data: *const c_void,
    ) -> i32;
    fn prctl(option: c_int, arg2: c_ulong, ...) -> c_int;
    fn rcl_subscription_get_topic_name(subscription: *const c_void) -> *const c_char;
    fn rcl_service_get_service_name(service: *const c_void) -> *const c_char;
    fn rcl_client_get_service_name(client: *const c_void) -> *const c_char;
    fn rcl_action_server_get_action_name(server: *const c_void) -> *const c_char;
    fn rcl_action_client_get_action_name(client: *const c_void) -> *const c_char;
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
        RclPrimitiveHandle::ActionServer(guard) => {
            let ptr = &*guard as *const _ as *const c_void;
            // SAFETY: `ptr` points to a live, initialised rcl_action_server_t (locked by
            // `guard`); the function only reads it.
            read(unsafe { rcl_action_server_get_action_name(ptr) })
        }
        RclPrimitiveHandle::ActionClient(guard) => {
            let ptr = &*guard as *const _ as *const c_void;
            // SAFETY: `ptr` points to a live, initialised rcl_action_client_t (locked by
            // `guard`); the function only reads it.
            read(unsafe { rcl_action_client_get_action_name(ptr) })
        }
    }
}

/// The address of an `rcl_timer_t`, for the timer scheduler: a timer primitive's own, or
/// an action server's goal-expiry timer (patch 0011).
///
/// The address stays valid while the primitive (held by its Worker's entity) lives; the
/// timer scheduler forgets it before the entity drops the primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RclTimer(*const c_void);

// SAFETY: the pointer is only passed to rcl's timer functions, which rcl documents as
// thread-safe (the timer's state is atomic), and only while the timer is alive (above).
unsafe impl Send for RclTimer {}
// SAFETY: as above; `&RclTimer` only hands out the same thread-safe calls.
unsafe impl Sync for RclTimer {}

/// What `rcl_timer_get_time_until_next_call` says.
pub(crate) enum TimerDue {
    /// Nanoseconds until the next call; zero or negative means it is due now.
    In(i64),
    /// The timer is cancelled: it waits for a reset.
    Cancelled,
}

impl RclTimer {
    /// The timer of a timer primitive, or the goal-expiry timer of an action server;
    /// `None` for other primitives.
    pub(crate) fn of(primitive: &dyn RclPrimitive) -> Option<Self> {
        Self::locked(primitive).map(|(_, timer)| timer)
    }

    /// The primitive's timer (as in [`RclTimer::of`]) with the primitive's lock held:
    /// the timer's own lock, or the action server's, under which rclrs re-arms the
    /// expiry timer (`rcl_action_notify_goal_done`, `rcl_action_expire_goals`).
    fn locked(primitive: &dyn RclPrimitive) -> Option<(RclPrimitiveHandle<'_>, Self)> {
        let handle = primitive.handle();
        let timer = match &handle {
            RclPrimitiveHandle::Timer(guard) => &**guard as *const _ as *const c_void,
            RclPrimitiveHandle::ActionServer(_) => primitive.goal_expiry_timer()?.cast(),
            _ => return None,
        };
        Some((handle, Self(timer)))
    }

    /// Time until the next call, on the timer's own clock (ROS time under sim time).
    pub(crate) fn due(&self) -> TimerDue {
        const RCL_RET_TIMER_CANCELED: i32 = 801;
        let mut ns = 0i64;
        // SAFETY: `self.0` is a live rcl_timer_t (see the type's invariant), and the
        // function reads it atomically; `ns` is a valid out pointer.
        let ret = unsafe { rcl_timer_get_time_until_next_call(self.0, &mut ns) };
        match ret {
            0 => TimerDue::In(ns),
            RCL_RET_TIMER_CANCELED => TimerDue::Cancelled,
            // An invalid timer (being finalized): treat as cancelled, it is about to go.
            _ => TimerDue::Cancelled,
        }
    }

    /// When the next call is due, in the timer clock's nanoseconds (changes when the
    /// timer is called or reset); `None` if rcl refuses (timer being finalized).
    pub(crate) fn next_call_time(&self) -> Option<i64> {
        let mut t = 0i64;
        // SAFETY: live rcl_timer_t (type invariant), atomic read; valid out pointer.
        (unsafe { rcl_timer_get_next_call_time(self.0, &mut t) } == 0).then_some(t)
    }

    /// The timer's period in nanoseconds.
    pub(crate) fn period(&self) -> Option<i64> {
        let mut p = 0i64;
        // SAFETY: live rcl_timer_t (type invariant), atomic read; valid out pointer.
        (unsafe { rcl_timer_get_period(self.0, &mut p) } == 0).then_some(p)
    }

    /// Call `on_reset` whenever `primitive`'s timer is reset (`rcl_timer_reset`).
    /// Returns the registration, which must be cleared with [`RclTimer::clear_on_reset`]
    /// before the timer is finalized and before the registration is dropped.
    pub(crate) fn set_on_reset(
        primitive: &dyn RclPrimitive,
        on_reset: Box<OnReset>,
    ) -> Option<ResetRegistration> {
        let (guard, timer) = Self::locked(primitive)?;
        let context = Box::into_raw(Box::new(on_reset));
        // SAFETY: the timer is alive, and `guard` holds the lock under which rclrs resets
        // it (the timer's, or its action server's), so no reset races with the
        // registration; `context` stays allocated until the registration is dropped,
        // which happens only after `clear_on_reset` (the caller's contract). rcl may call
        // the trampoline from here for pending resets; it takes no lock.
        unsafe {
            rcl_timer_set_on_reset_callback(
                timer.0,
                Some(on_reset_trampoline),
                context as *const c_void,
            );
        }
        drop(guard);
        Some(ResetRegistration(context))
    }

    /// Stop calling the reset callback of `primitive`'s timer. Once this returns, rcl
    /// no longer uses the registration's context.
    pub(crate) fn clear_on_reset(primitive: &dyn RclPrimitive) {
        if let Some((guard, timer)) = Self::locked(primitive) {
            // SAFETY: the timer is alive, and `guard` holds the lock under which rclrs
            // calls `rcl_timer_reset` (which runs the callback), so no callback is
            // running while we clear it. Null callback and data clear it.
            unsafe {
                rcl_timer_set_on_reset_callback(timer.0, None, std::ptr::null());
            }
            drop(guard);
        }
    }
}

/// What a timer's reset callback runs: cheap, non-blocking (it runs inside
/// `rcl_timer_reset`, with rclrs's timer lock held).
pub(crate) type OnReset = dyn Fn() + Send + Sync;

/// Owns the context given to rcl as the reset callback's `user_data`.
pub(crate) struct ResetRegistration(*mut Box<OnReset>);

// SAFETY: the context is a Box of a Send + Sync closure, freed only in Drop.
unsafe impl Send for ResetRegistration {}

impl Drop for ResetRegistration {
    fn drop(&mut self) {
        // SAFETY: made by Box::into_raw in set_on_reset, dropped once, and (by the contract
        // of set_on_reset) rcl stopped using it when the callback was cleared.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

unsafe extern "C" fn on_reset_trampoline(user_data: *const c_void, _count: usize) {
    if user_data.is_null() {
        return;
    }
    // SAFETY: `user_data` is the context of a live ResetRegistration (it is freed only
    // after the callback was cleared).
    let on_reset = unsafe { &*(user_data as *const Box<OnReset>) };
    // A panic must not unwind into C.
    let _ = catch_unwind(AssertUnwindSafe(on_reset));
}

/// Let the calling thread's timed waits end within a nanosecond of their deadline
/// instead of Linux's default 50 µs slack. Best effort: returns false if refused.
pub(crate) fn set_precise_timer_slack() -> bool {
    const PR_SET_TIMERSLACK: c_int = 29;
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long and only affects this thread.
    unsafe { prctl(PR_SET_TIMERSLACK, 1) == 0 }
}

#[cfg(target_os = "linux")]
mod thread_settings {
    use std::ffi::{c_int, c_ulong};

    /// glibc's and the kernel's `cpu_set_t`: 1024 bits.
    const CPU_SET_WORDS: usize = 1024 / c_ulong::BITS as usize;
    const SCHED_FIFO: c_int = 1;
    const SCHED_OTHER: c_int = 0;
    const SCHED_BATCH: c_int = 3;

    #[repr(C)]
    struct SchedParam {
        sched_priority: c_int,
    }

    extern "C" {
        fn sched_setaffinity(pid: c_int, size: usize, mask: *const c_ulong) -> c_int;
        fn sched_setscheduler(pid: c_int, policy: c_int, param: *const SchedParam) -> c_int;
        fn sched_getscheduler(pid: c_int) -> c_int;
        fn gettid() -> c_int;
    }

    /// The calling thread's kernel id, if it runs under SCHED_OTHER (the only policy we
    /// switch for quiet wake-ups, `runtime::hand_over`).
    pub(crate) fn normal_thread_id() -> Option<i32> {
        // SAFETY: both calls only read the calling thread's state.
        let (policy, tid) = unsafe { (sched_getscheduler(0), gettid()) };
        (policy == SCHED_OTHER).then_some(tid)
    }

    /// Switch thread `tid` of this process between SCHED_BATCH (`quiet`: its wake-ups do
    /// not preempt a running task) and SCHED_OTHER, keeping its nice value. False if
    /// refused.
    pub(crate) fn set_quiet(tid: i32, quiet: bool) -> bool {
        let param = SchedParam { sched_priority: 0 };
        let policy = if quiet { SCHED_BATCH } else { SCHED_OTHER };
        // SAFETY: `param` is a live struct with the layout of `struct sched_param`, which
        // the kernel only reads; `tid` names a thread of this process.
        unsafe { sched_setscheduler(tid, policy, &param) == 0 }
    }

    /// Pin the calling thread to `cpus`.
    pub(crate) fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
        let mut mask = [0 as c_ulong; CPU_SET_WORDS];
        let bits = c_ulong::BITS as usize;
        for &cpu in cpus {
            if cpu >= CPU_SET_WORDS * bits {
                return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
            }
            mask[cpu / bits] |= 1 << (cpu % bits);
        }
        // SAFETY: pid 0 is the calling thread; `mask` is a live, initialised array of the
        // size passed, which the kernel only reads.
        let result = unsafe { sched_setaffinity(0, std::mem::size_of_val(&mask), mask.as_ptr()) };
        if result == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Put the calling thread under SCHED_FIFO at `priority`.
    pub(crate) fn set_fifo_priority(priority: u8) -> std::io::Result<()> {
        let param = SchedParam {
            sched_priority: c_int::from(priority),
        };
        // SAFETY: pid 0 is the calling thread; `param` is a live struct with the layout of
        // `struct sched_param` (one int), which the kernel only reads.
        let result = unsafe { sched_setscheduler(0, SCHED_FIFO, &param) };
        if result == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod thread_settings {
    /// Not on this OS: no quiet wake-ups.
    pub(crate) fn normal_thread_id() -> Option<i32> {
        None
    }

    /// Not on this OS: a no-op.
    pub(crate) fn set_quiet(_tid: i32, _quiet: bool) -> bool {
        false
    }

    /// Not on this OS: a no-op (see `DedicatedWorkers`).
    pub(crate) fn set_affinity(_cpus: &[usize]) -> std::io::Result<()> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }

    /// Not on this OS: a no-op (see `DedicatedWorkers`).
    pub(crate) fn set_fifo_priority(_priority: u8) -> std::io::Result<()> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }
}

pub(crate) use thread_settings::{normal_thread_id, set_affinity, set_fifo_priority, set_quiet};

pub(crate) mod tracetools;
pub(crate) use tracetools::TraceId;
