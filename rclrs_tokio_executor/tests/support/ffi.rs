//! The only `unsafe` of the test support: running a captured rclrs primitive, and
//! pinning a test's thread to one CPU.

use rclrs::{RclrsError, ReadyKind, Waitable};

/// Execute a node-level primitive once (node-level primitives take the `()` payload).
pub fn execute_node_primitive(waitable: &mut Waitable) -> Result<(), RclrsError> {
    // SAFETY: the capture runtime only receives node-level primitives through the
    // executor's node Worker, whose payload type is `()`; rclrs checks the downcast too.
    unsafe { waitable.primitive_mut().execute(ReadyKind::Basic, &mut ()) }
}

/// Pin the calling thread to the lowest-numbered CPU it may run on, so that it, and every
/// thread it starts from now on, sees a one-CPU machine (`available_parallelism` is 1).
/// Linux only; elsewhere it does nothing and returns false.
#[cfg(target_os = "linux")]
pub fn pin_this_thread_to_one_cpu() -> bool {
    use std::ffi::{c_int, c_ulong};
    // glibc's and the kernel's `cpu_set_t`: 1024 bits.
    const WORDS: usize = 1024 / c_ulong::BITS as usize;
    extern "C" {
        fn sched_getaffinity(pid: c_int, size: usize, mask: *mut c_ulong) -> c_int;
        fn sched_setaffinity(pid: c_int, size: usize, mask: *const c_ulong) -> c_int;
    }
    let mut mask = [0 as c_ulong; WORDS];
    // SAFETY: pid 0 is the calling thread; `mask` is a live array of the size passed,
    // which the kernel fills in.
    if unsafe { sched_getaffinity(0, std::mem::size_of_val(&mask), mask.as_mut_ptr()) } != 0 {
        return false;
    }
    let Some(word) = mask.iter().position(|&w| w != 0) else {
        return false;
    };
    let lowest = mask[word] & mask[word].wrapping_neg();
    let mut one = [0 as c_ulong; WORDS];
    one[word] = lowest;
    // SAFETY: as above; the kernel only reads `one`.
    unsafe { sched_setaffinity(0, std::mem::size_of_val(&one), one.as_ptr()) == 0 }
}

#[cfg(not(target_os = "linux"))]
pub fn pin_this_thread_to_one_cpu() -> bool {
    false
}
