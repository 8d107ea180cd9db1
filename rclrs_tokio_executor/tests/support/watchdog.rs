//! A process watchdog for the integration tests: a test binary that is still running after
//! its time limit is taken to be hung. It prints every thread's stack (libtest names each
//! test's thread after the test) and aborts, so a hang fails in minutes with the place it
//! hangs, instead of using up the CI's whole time budget.
//!
//! The limit is `RCLRS_TOKIO_TEST_WATCHDOG_S` seconds (default 600; `0` turns it off). No
//! test binary of this crate takes more than about a minute.

use std::process::{Command, Stdio};
use std::sync::Once;
use std::time::Duration;

const DEFAULT_LIMIT_S: u64 = 600;

/// Start the watchdog once for this process; later calls do nothing.
pub fn arm() {
    static ARMED: Once = Once::new();
    ARMED.call_once(|| {
        let limit = std::env::var("RCLRS_TOKIO_TEST_WATCHDOG_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(DEFAULT_LIMIT_S);
        if limit == 0 {
            return;
        }
        std::thread::Builder::new()
            .name("test-watchdog".into())
            .spawn(move || {
                std::thread::sleep(Duration::from_secs(limit));
                eprintln!(
                    "test watchdog: this test process has run for {limit} s, so it is taken \
                     to be hung; every thread's stack follows, then an abort"
                );
                print_stacks();
                std::process::abort();
            })
            .expect("the test watchdog thread could not start");
    });
}

/// Every thread's stack, from gdb when it is installed; else each thread's name and the
/// kernel's account of where it waits.
fn print_stacks() {
    let pid = std::process::id().to_string();
    // gdb stops every thread of this process, this one too, so it writes straight to
    // stderr: a pipe read by this thread would fill up and never drain.
    let gdb = Command::new("gdb")
        .args(["-p", &pid, "-batch", "-nx", "-ex", "set pagination off"])
        .args(["-ex", "info threads", "-ex", "thread apply all bt"])
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .status();
    match gdb {
        Ok(status) if status.success() => return,
        Ok(status) => eprintln!("test watchdog: gdb could not show the stacks ({status})"),
        Err(err) => eprintln!("test watchdog: no gdb ({err})"),
    }
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for task in tasks.flatten() {
        let read = |file: &str| {
            std::fs::read_to_string(task.path().join(file))
                .unwrap_or_default()
                .trim()
                .to_owned()
        };
        eprintln!(
            "thread {:?} {}: waits in {} (syscall {})",
            task.file_name(),
            read("comm"),
            read("wchan"),
            read("syscall")
        );
    }
}
