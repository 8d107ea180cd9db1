//! Errors of this crate.

use rclrs::{RclErrorMsg, RclReturnCode, RclrsError};

/// Creating a Tokio executor failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokioExecutorError {
    /// The executor's own threads (its Worker threads and its Tokio runtime) could not
    /// be started (for example, the OS refused to spawn a thread).
    #[error("cannot start the executor's threads: {0}")]
    RuntimeBuild(#[source] std::io::Error),
    /// [`stop_on_signals`](crate::TokioExecutorOptions::stop_on_signals) was asked for,
    /// and the SIGINT/SIGTERM handlers or their listener thread could not be installed.
    #[error("cannot stop spins on signals: {0}")]
    Signals(String),
    /// The [`thread_name`](crate::TokioExecutorOptions::thread_name) holds a NUL byte,
    /// which no OS thread name can carry.
    #[error("invalid thread name {0:?}: it contains a NUL byte")]
    InvalidThreadName(String),
}

/// The message of the error a blocking `spin()` reports on the one thread its Workers need.
pub(crate) const SPIN_INSIDE_RUNTIME: &str =
    "rclrs_tokio_executor: the blocking spin() was called on the single-threaded Tokio \
     runtime that runs the executor's Workers, which it would block for good; use \
     `executor.spin_async(options).await`";

/// The message of the error a spin reports when the runtime passed as
/// [`runtime_handle`](crate::TokioExecutorOptions::runtime_handle) does not run the
/// executor's tasks (a current-thread runtime nobody drives, for example).
pub(crate) const RUNTIME_NOT_DRIVEN: &str =
    "rclrs_tokio_executor: the Tokio runtime passed as runtime_handle is not running the \
     executor's tasks (is anything driving it?); no callback can run";

/// The message of the error a spin reports when SIGINT or SIGTERM stopped it
/// ([`stop_on_signals`](crate::TokioExecutorOptions::stop_on_signals)).
pub(crate) const INTERRUPTED: &str =
    "rclrs_tokio_executor: spinning stopped on SIGINT or SIGTERM (stop_on_signals)";

/// An error of this crate, in the form `ExecutorRuntime::spin` reports errors.
fn own_error(message: &'static str) -> RclrsError {
    RclrsError::RclError {
        code: RclReturnCode::Error,
        msg: Some(RclErrorMsg::new(message)),
    }
}

fn is_own_error(error: &RclrsError, message: &str) -> bool {
    matches!(
        error,
        RclrsError::RclError { code: RclReturnCode::Error, msg: Some(msg) }
            if msg.to_string() == message
    )
}

/// The error a timed spin reports for a Worker, equal (`==`) to the one the basic
/// executor's wait-set runner for that Worker reports: `rcl_wait`'s `RCL_RET_TIMEOUT`,
/// with rcl's error message (empty, as `rcl_wait` sets none), if the Worker was idle when
/// the time ran out; the runner's own timeout, with no message, if it had just run
/// something.
pub(crate) fn timed_out(idle: bool) -> RclrsError {
    RclrsError::RclError {
        code: RclReturnCode::Timeout,
        msg: idle.then(|| RclErrorMsg::new("")),
    }
}

pub(crate) fn spin_inside_runtime() -> RclrsError {
    own_error(SPIN_INSIDE_RUNTIME)
}

pub(crate) fn runtime_not_driven() -> RclrsError {
    own_error(RUNTIME_NOT_DRIVEN)
}

pub(crate) fn interrupted() -> RclrsError {
    own_error(INTERRUPTED)
}

/// True if `error` says SIGINT or SIGTERM stopped the spin
/// ([`TokioExecutorOptions::stop_on_signals`](crate::TokioExecutorOptions::stop_on_signals)).
pub fn is_interrupted_error(error: &RclrsError) -> bool {
    is_own_error(error, INTERRUPTED)
}

/// True if `error` is the one the blocking `spin()` reports when it is called on the
/// thread of a current-thread Tokio runtime that runs the executor's Workers (the
/// runtime passed as `runtime_handle`, or one of the pool's threads), which it would
/// block for good (use `spin_async` there).
pub fn is_spin_inside_runtime_error(error: &RclrsError) -> bool {
    is_own_error(error, SPIN_INSIDE_RUNTIME)
}

/// True if `error` says the runtime passed as `runtime_handle` is not running the
/// executor's tasks.
pub fn is_runtime_not_driven_error(error: &RclrsError) -> bool {
    is_own_error(error, RUNTIME_NOT_DRIVEN)
}
