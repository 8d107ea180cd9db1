//! Stopping spins on SIGINT and SIGTERM, as rclcpp does (opt-in:
//! [`TokioExecutorOptions::stop_on_signals`](crate::TokioExecutorOptions::stop_on_signals)).
//!
//! # Protocol
//!
//! The first executor that opts in installs the process's SIGINT and SIGTERM handlers
//! (through `signal-hook`) and starts one listener thread. The handlers only write to a
//! pipe; the listener thread records the first signal's number in [`RECEIVED`] and wakes
//! the spin of every executor that opted in (a `Weak` list, so registering never keeps
//! an executor alive). A spin checks [`received`] whenever it wakes and at its start, so
//! from the first signal on every spin of those executors ends at once, with the error
//! [`is_interrupted_error`](crate::is_interrupted_error) recognises, as rclcpp's spins
//! end once its signal handler has shut the context down. A second signal exits the
//! process with 128 + the signal's number, so a wedged callback cannot make Ctrl-C hang.

use crate::runtime::shared::ExecutorShared;
use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The first signal's number; 0 until one arrives.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The executors whose spins a signal stops.
static LISTENERS: Mutex<Vec<Weak<ExecutorShared>>> = Mutex::new(Vec::new());

/// Whether the handlers and the listener thread are installed (`Err`: why not).
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// The signal that stops spins, if one arrived.
pub(crate) fn received() -> Option<i32> {
    let number = RECEIVED.load(Ordering::Acquire);
    (number != 0).then_some(number)
}

/// Stop `shared`'s spins on SIGINT and SIGTERM from now on.
pub(crate) fn stop_spins_of(shared: &Arc<ExecutorShared>) -> Result<(), String> {
    INSTALLED.get_or_init(install).clone()?;
    let mut listeners = LISTENERS.lock().unwrap_or_else(|e| e.into_inner());
    listeners.retain(|l| l.strong_count() > 0);
    listeners.push(Arc::downgrade(shared));
    Ok(())
}

fn install() -> Result<(), String> {
    let seen = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        // Runs before `seen` is set below: only a second signal exits.
        signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, Arc::clone(&seen))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&seen)))
            .map_err(|e| format!("cannot install the handler of signal {signal}: {e}"))?;
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| format!("cannot listen for SIGINT and SIGTERM: {e}"))?;
    std::thread::Builder::new()
        .name("rclrs-tokio-sig".into())
        .spawn(move || {
            for signal in signals.forever() {
                let _ = RECEIVED.compare_exchange(0, signal, Ordering::AcqRel, Ordering::Acquire);
                let listeners = LISTENERS.lock().unwrap_or_else(|e| e.into_inner());
                for shared in listeners.iter().filter_map(Weak::upgrade) {
                    shared.wake_spin.notify_waiters();
                }
            }
        })
        .map_err(|e| format!("cannot start the signal listener thread: {e}"))?;
    Ok(())
}

/// SIGINT or SIGTERM arrived, and `shared`'s spins stop on it.
pub(crate) fn interrupted(shared: &ExecutorShared) -> bool {
    shared.stops_on_signals && received().is_some()
}
