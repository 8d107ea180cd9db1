//! Errors of this crate.

use rclrs::{RclErrorMsg, RclReturnCode, RclrsError};
use std::fmt;

/// Creating a Tokio executor failed.
#[derive(Debug)]
pub enum TokioExecutorError {
    /// The owned multi-thread Tokio runtime could not be built (for example, the OS
    /// refused to spawn its threads).
    RuntimeBuild(std::io::Error),
}

impl fmt::Display for TokioExecutorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RuntimeBuild(err) => write!(f, "cannot build the Tokio runtime: {err}"),
        }
    }
}

impl std::error::Error for TokioExecutorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::RuntimeBuild(err) => Some(err),
        }
    }
}

/// The message of the error a blocking `spin()` reports inside a Tokio runtime.
pub const SPIN_INSIDE_RUNTIME: &str =
    "rclrs_tokio_executor: the blocking spin() was called from inside a Tokio runtime, \
     where it would stall or deadlock the runtime; use `executor.spin_async(options).await`";

pub(crate) fn spin_inside_runtime() -> RclrsError {
    RclrsError::RclError {
        code: RclReturnCode::Error,
        msg: Some(RclErrorMsg::new(SPIN_INSIDE_RUNTIME)),
    }
}

/// True if `error` is the one the blocking `spin()` reports when it is called from
/// inside a Tokio runtime (use `spin_async` there).
pub fn is_spin_inside_runtime_error(error: &RclrsError) -> bool {
    matches!(
        error,
        RclrsError::RclError { code: RclReturnCode::Error, msg: Some(msg) }
            if msg.to_string() == SPIN_INSIDE_RUNTIME
    )
}
