//! SIGINT and SIGTERM, as ROS users expect them of a benchmark node: the measured
//! window stops at once, the node prints what it measured up to then with
//! `"interrupted": true`, and exits with 128 + the signal's number (130 for SIGINT, 143
//! for SIGTERM). A second signal while the node winds down ends it at once.
//!
//! [`install`] registers the handlers (they only store the signal's number); the
//! workloads poll [`interrupted`] between steps and sleep with [`sleep_until`].

use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

struct Flags {
    /// The number of the first signal received; 0 for none.
    signal: Arc<AtomicUsize>,
    /// Set with it, for signal-hook's "a second signal exits" guard.
    any: Arc<AtomicBool>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// Register the SIGINT and SIGTERM handlers (once; later calls do nothing).
pub fn install() -> std::io::Result<()> {
    if FLAGS.get().is_some() {
        return Ok(());
    }
    let flags = Flags {
        signal: Arc::new(AtomicUsize::new(0)),
        any: Arc::new(AtomicBool::new(false)),
    };
    for signal in [SIGINT, SIGTERM] {
        // Registered first, so it runs before `any` is set: only a second signal exits.
        signal_hook::flag::register_conditional_shutdown(
            signal,
            128 + signal,
            Arc::clone(&flags.any),
        )?;
        signal_hook::flag::register(signal, Arc::clone(&flags.any))?;
        signal_hook::flag::register_usize(signal, Arc::clone(&flags.signal), signal as usize)?;
    }
    let _ = FLAGS.set(flags);
    Ok(())
}

/// The signal that interrupted the run, if one did.
pub fn signal() -> Option<i32> {
    let number = FLAGS.get()?.signal.load(Ordering::Relaxed);
    (number != 0).then_some(number as i32)
}

/// True once SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    signal().is_some()
}

/// The exit code that says the run was interrupted: 128 + the signal's number.
pub fn exit_code() -> Option<i32> {
    signal().map(|number| 128 + number)
}

/// Sleep until `when`, or until a signal arrives (checked every 10 ms). False if
/// interrupted.
pub fn sleep_until(when: Instant) -> bool {
    loop {
        if interrupted() {
            return false;
        }
        let Some(left) = when.checked_duration_since(Instant::now()) else {
            return true;
        };
        std::thread::sleep(left.min(Duration::from_millis(10)));
    }
}
