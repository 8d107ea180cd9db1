//! The timerfd that wakes a pool Worker at its timers' deadlines (see
//! `runtime::worker_task::timer_wake`), and its registration with Tokio's I/O driver.

use std::panic::{catch_unwind, AssertUnwindSafe};

#[cfg(target_os = "linux")]
pub(crate) use linux::TimerFd;
#[cfg(not(target_os = "linux"))]
pub(crate) use other::TimerFd;

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{c_int, c_long};
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd, RawFd};
    use std::time::Duration;

    const CLOCK_MONOTONIC: c_int = 1;
    const TFD_NONBLOCK: c_int = 0o4000;
    const TFD_CLOEXEC: c_int = 0o2000000;

    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: c_long,
    }

    #[repr(C)]
    struct Itimerspec {
        it_interval: Timespec,
        it_value: Timespec,
    }

    extern "C" {
        fn timerfd_create(clockid: c_int, flags: c_int) -> c_int;
        fn timerfd_settime(
            fd: c_int,
            flags: c_int,
            new_value: *const Itimerspec,
            old_value: *mut Itimerspec,
        ) -> c_int;
    }

    /// A non-blocking Linux timerfd on the monotonic clock (`Instant`'s): a deadline
    /// with the kernel's precision that an epoll reactor, such as Tokio's I/O driver,
    /// waits for like any readable file.
    pub(crate) struct TimerFd(File);

    impl TimerFd {
        pub(crate) fn new() -> std::io::Result<Self> {
            // SAFETY: plain constants; the call only creates a file descriptor.
            let fd = unsafe { timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: `fd` was just created and is owned by nothing else; the File closes it.
            Ok(Self(unsafe { File::from_raw_fd(fd) }))
        }

        /// Expire once, `after` from now (at least a nanosecond: zero would disarm), or
        /// never (`None`).
        pub(crate) fn arm(&self, after: Option<Duration>) -> std::io::Result<()> {
            let value = match after {
                Some(after) => {
                    let after = after.max(Duration::from_nanos(1));
                    Timespec {
                        tv_sec: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
                        tv_nsec: after.subsec_nanos() as c_long,
                    }
                }
                None => Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
            };
            let spec = Itimerspec {
                it_interval: Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: value,
            };
            // SAFETY: the fd is a live timerfd owned by `self`; `spec` is a live struct
            // with the layout of `struct itimerspec` (64-bit `time_t`), which the kernel
            // only reads; the old value is not asked for (null).
            let result =
                unsafe { timerfd_settime(self.0.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
            if result == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        }

        /// Consume the expiries since the last arming or read; false if there were none
        /// (never blocks).
        pub(crate) fn clear(&self) -> bool {
            let mut expirations = [0u8; 8];
            matches!((&self.0).read(&mut expirations), Ok(8))
        }
    }

    impl AsRawFd for TimerFd {
        fn as_raw_fd(&self) -> RawFd {
            self.0.as_raw_fd()
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    use std::time::Duration;

    /// Not on this OS: pool Workers leave their timers to the executor's scheduler
    /// thread.
    pub(crate) struct TimerFd(());

    impl TimerFd {
        pub(crate) fn new() -> std::io::Result<Self> {
            Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
        }

        pub(crate) fn arm(&self, _after: Option<Duration>) -> std::io::Result<()> {
            Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
        }

        pub(crate) fn clear(&self) -> bool {
            false
        }
    }

    #[cfg(unix)]
    impl std::os::fd::AsRawFd for TimerFd {
        fn as_raw_fd(&self) -> std::os::fd::RawFd {
            -1
        }
    }
}

/// Register a timerfd with the current Tokio runtime's I/O driver, to wait until it is
/// readable (expired). An error if there is no runtime with an I/O driver here (Tokio's
/// panic for that is caught).
pub(crate) fn register_timer_fd(fd: TimerFd) -> std::io::Result<tokio::io::unix::AsyncFd<TimerFd>> {
    use tokio::io::{unix::AsyncFd, Interest};
    let registered = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a TimerFd owns its descriptor (a `File`) for its whole life and closes
        // it only when dropped, and its `as_raw_fd` always returns that descriptor; the
        // AsyncFd owns the TimerFd, so the descriptor stays open and the same while it
        // is registered.
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
    }));
    match registered {
        Ok(Ok(fd)) => Ok(fd),
        Ok(Err(refused)) => Err(refused.into_parts().1),
        Err(_) => Err(std::io::Error::other("no Tokio I/O driver on this thread")),
    }
}
