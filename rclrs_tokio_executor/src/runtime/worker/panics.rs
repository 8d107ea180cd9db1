//! How a contained panic is reported.

/// Log a caught panic with what was running.
pub(crate) fn log_panic(what: &str, panic: &(dyn std::any::Any + Send)) {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string());
    rclrs::log_error!(
        "rclrs_tokio_executor",
        "{what} panicked: {message}; the executor contained it and keeps serving"
    );
}
