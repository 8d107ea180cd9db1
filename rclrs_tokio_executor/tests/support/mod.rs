//! Test support shared by the integration tests of this crate.
#![allow(dead_code)]

pub mod ffi;
pub mod sim_clock;
pub mod watchdog;

use rclrs::{
    Client, Context, Executor, InitOptions, Node, Publisher, RclReturnCode, RclrsError, Service,
    SpinOptions,
};
use rclrs_tokio_executor::{CreateTokioExecutor, DedicatedWorkers, TokioExecutorOptions};
use ros_env::std_msgs::msg::Int32;
use ros_env::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{atomic::AtomicBool, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A name no other test (or test process) uses: topics, services and nodes.
///
/// Every test names what it creates with this, so it also arms the process watchdog
/// (`watchdog::arm`).
pub fn unique(name: &str) -> String {
    watchdog::arm();
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{name}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A context on a ROS domain that no context created just before or after it in this
/// process uses (1..=100, in turn from an offset of the process id; domain 0, where the
/// benchmark nodes and other processes run, is never used).
///
/// Participants of one process that share a domain discover each other, and Fast DDS 3.2
/// can deadlock when one of them is destroyed while another delivers it discovery data
/// (`destroy_participant` spins in `set_listener` while the other's thread waits for the
/// listener mutex; eProsima/Fast-DDS#6513). A test binary runs its tests in parallel,
/// each with a context of its own, so this hit CI runs. A domain of its own also keeps
/// the nodes other tests create and drop from being graph changes to this one.
pub fn isolated_context() -> Context {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let turn = std::process::id() as usize + NEXT.fetch_add(1, Ordering::Relaxed);
    let domain = 1 + turn % 100;
    Context::new([], InitOptions::new().with_domain_id(Some(domain)))
        .unwrap_or_else(|err| panic!("no context on ROS domain {domain}: {err}"))
}

/// A `SetBool` service named `name` on `node` that answers `success: data`, and a client
/// of it (not yet known to be ready).
pub fn echo_service(node: &Node, name: &str) -> (Service<SetBool>, Client<SetBool>) {
    let service = node
        .create_service::<SetBool, _>(name, |request: SetBool_Request| SetBool_Response {
            success: request.data,
            message: String::new(),
        })
        .unwrap();
    (service, node.create_client::<SetBool>(name).unwrap())
}

/// A Tokio executor with every Worker on a dedicated thread of its own.
pub fn dedicated_executor(context: &Context) -> Executor {
    context
        .create_tokio_executor_with(
            TokioExecutorOptions::new().dedicated_workers(DedicatedWorkers::all()),
        )
        .unwrap()
}

/// A Tokio executor on a multi-thread runtime the user passes in (`runtime_handle`), a
/// runtime of its own with two threads, as the pool has. One runtime shared by every
/// executor of a test binary let the blocking callbacks of other tests hold all its
/// threads, so a timer of one test fired once in 200 ms (a CI run). Each runtime is
/// leaked, since it must outlive an executor the test may keep to its end.
pub fn users_runtime_executor(context: &Context) -> Executor {
    let runtime: &'static ::tokio::runtime::Runtime = Box::leak(Box::new(
        ::tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("users-runtime")
            .enable_all()
            .build()
            .unwrap(),
    ));
    executor_on(context, runtime.handle())
}

/// The default Tokio executor as a one-CPU machine builds it: the test's thread is
/// pinned to one CPU first (it is the test's own thread, which ends with the test), so
/// the executor sees one core and its threads start on that core too.
pub fn one_cpu_executor(context: &Context) -> Executor {
    assert!(
        ffi::pin_this_thread_to_one_cpu(),
        "could not pin the test's thread to one CPU"
    );
    assert_eq!(
        std::thread::available_parallelism().map(|n| n.get()).ok(),
        Some(1),
        "pinned to one CPU, the thread should see one"
    );
    context.create_tokio_executor()
}

/// Wait (at most 20 s) until `publisher` matched `subscriptions` subscriptions.
pub fn wait_matched<T: rclrs::MessageIDL>(publisher: &Publisher<T>, subscriptions: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while publisher
        .get_subscription_count()
        .map_err(|e: RclrsError| e.to_string())
        .unwrap()
        < subscriptions
    {
        assert!(Instant::now() < deadline, "subscriptions never matched");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Publish `Int32` 0..`count` once `subscriptions` subscriptions matched.
pub fn publish_to(publisher: &Publisher<Int32>, subscriptions: usize, count: i32) {
    wait_matched(publisher, subscriptions);
    for data in 0..count {
        publisher.publish(Int32 { data }).unwrap();
    }
}

/// Burn `work` of CPU on this thread.
pub fn busy_for(work: Duration) {
    let until = Instant::now() + work;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Each of this process's threads: its name and its `stat` fields from field 3 on (those
/// after the parenthesised name), from `/proc`. A thread that ended meanwhile is left out.
fn threads_with_stat() -> Vec<(String, Vec<u64>)> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let path = task.ok()?.path();
            let name = std::fs::read_to_string(path.join("comm")).ok()?;
            let stat = std::fs::read_to_string(path.join("stat")).ok()?;
            let after_name = &stat[stat.rfind(')')? + 1..];
            // Field 3, the state, is a letter: it reads as 0.
            let fields = after_name
                .split_whitespace()
                .map(|field| field.parse().unwrap_or(0))
                .collect();
            Some((name.trim().to_string(), fields))
        })
        .collect()
}

/// Field `number` (1-based, as `man proc` counts) of a thread's `stat`.
fn stat_field(fields: &[u64], number: usize) -> u64 {
    fields.get(number - 3).copied().unwrap_or(0)
}

/// The names of this process's threads, leaving out those already exiting. A joined
/// thread can stay listed in `/proc` for a moment: `join` returns when the kernel
/// clears the thread's id, partway through its exit, and the entry goes only at the
/// exit's end. The kernel flags a thread as exiting (`PF_EXITING`, in field 9 of its
/// `stat`) when its exit begins, so a thread `join` has seen end always carries it.
pub fn thread_names() -> Vec<String> {
    const PF_EXITING: u64 = 0x4;
    threads_with_stat()
        .into_iter()
        .filter(|(_, fields)| stat_field(fields, 9) & PF_EXITING == 0)
        .map(|(name, _)| name)
        .collect()
}

/// The name and scheduling policy (0 for SCHED_OTHER, 3 for SCHED_BATCH) of each of
/// this process's threads, from `/proc` (field 41 of a task's `stat`).
pub fn thread_policies() -> Vec<(String, u32)> {
    threads_with_stat()
        .into_iter()
        .map(|(name, fields)| (name, stat_field(&fields, 41) as u32))
        .collect()
}

/// A Tokio executor on a fresh context that runs on the user's runtime `handle`.
pub fn tokio_executor_on(handle: &::tokio::runtime::Handle) -> Executor {
    executor_on(&isolated_context(), handle)
}

/// A Tokio executor of `context` that runs on the user's runtime `handle`.
pub fn executor_on(context: &Context, handle: &::tokio::runtime::Handle) -> Executor {
    context
        .create_tokio_executor_with(TokioExecutorOptions::new().runtime_handle(handle.clone()))
        .unwrap()
}

/// A Tokio executor with two pool threads and `follow_load` on, named `name`.
pub fn follow_load_executor(context: &Context, name: &str) -> Executor {
    context
        .create_tokio_executor_with(
            TokioExecutorOptions::new()
                .worker_threads(2)
                .thread_name(name)
                .follow_load(true),
        )
        .unwrap()
}

/// Publish 0, 1, 2, ... on `publisher` until `stop` is set, `pause` apart (as fast as
/// possible with no pause). The thread returns how many it published.
pub fn publish_until(
    publisher: Publisher<Int32>,
    stop: &Arc<AtomicBool>,
    pause: Option<Duration>,
) -> JoinHandle<usize> {
    let stop = Arc::clone(stop);
    std::thread::spawn(move || {
        let mut data = 0;
        while !stop.load(Ordering::Relaxed) {
            let _ = publisher.publish(Int32 { data });
            data += 1;
            if let Some(pause) = pause {
                std::thread::sleep(pause);
            }
        }
        data as usize
    })
}

/// A generous bound for anything that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Spin until `done` resolves, for at most `limit`, with a bound that files no alarm:
/// a timed spin's deadline is rung by the executor's timer-scheduler thread, which a
/// test of which threads run must not start. Returns what the spin reported.
pub fn spin_until_resolved_without_alarm(
    executor: &mut Executor,
    done: rclrs::Promise<()>,
    limit: Duration,
) -> Vec<RclrsError> {
    let commands = Arc::clone(executor.commands());
    let (finished, give_up) = std::sync::mpsc::channel::<()>();
    let guard = std::thread::spawn(move || {
        if give_up.recv_timeout(limit).is_err() {
            commands.halt_spinning();
        }
    });
    let errors = executor.spin(SpinOptions::default().until_promise_resolved(done));
    let _ = finished.send(());
    guard.join().unwrap();
    errors
}

/// Halts the executor's spin from another thread, `after` the call and then every
/// millisecond, until [`Halter::spin_returned`]. rclrs clears the halt flag as a spin
/// starts, so a single halt that lands before the spin began (the spinning thread
/// preempted for longer than `after`) would be lost, for every executor alike, and the
/// spin would run to its timeout.
pub struct Halter {
    returned: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Halter {
    pub fn start(executor: &Executor, after: Duration) -> Self {
        let commands = Arc::clone(executor.commands());
        let returned = Arc::new(AtomicBool::new(false));
        let thread = {
            let returned = Arc::clone(&returned);
            std::thread::spawn(move || {
                std::thread::sleep(after);
                while !returned.load(Ordering::SeqCst) {
                    commands.halt_spinning();
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        Self {
            returned,
            thread: Some(thread),
        }
    }

    /// The spin returned: stop halting (a halt still in flight is cleared by the next
    /// spin's start).
    pub fn spin_returned(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.returned.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for Halter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Spin for `duration`; nothing but the timeout may be reported.
#[track_caller]
pub fn spin_for(executor: &mut Executor, duration: Duration) {
    let errors = executor.spin(SpinOptions::default().timeout(duration));
    assert!(
        errors.iter().all(|e| matches!(
            e,
            RclrsError::RclError {
                code: RclReturnCode::Timeout,
                ..
            }
        )),
        "spin reported {errors:?}"
    );
}

/// Spin in 20 ms slices until `done()` holds; fail after `PATIENCE` (the failure names
/// the caller's line).
#[track_caller]
pub fn spin_until(executor: &mut Executor, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting while spinning");
        spin_for(executor, Duration::from_millis(20));
    }
}

/// Spin until `work` (run as an async task of the executor) has an output; fail after
/// `PATIENCE` (the failure names the caller's line).
#[track_caller]
pub fn run_to_end<Out: Send + 'static>(
    executor: &mut Executor,
    work: impl Future<Output = Out> + Send + 'static,
) -> Out {
    run_within(executor, PATIENCE, work).expect("the work did not finish in time")
}

/// Spin until `work` (run as an async task of the executor) has an output, or for
/// `limit` at most (then `None`); nothing but the timeout may be reported.
#[track_caller]
pub fn run_within<Out: Send + 'static>(
    executor: &mut Executor,
    limit: Duration,
    work: impl Future<Output = Out> + Send + 'static,
) -> Option<Out> {
    let (tx, rx) = futures::channel::oneshot::channel();
    drop(executor.commands().run(async move {
        let _ = tx.send(work.await);
    }));
    let (mut output, notice) = executor.commands().create_notice(rx);
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(notice)
            .timeout(limit),
    );
    assert!(
        errors.iter().all(|e| matches!(
            e,
            RclrsError::RclError {
                code: RclReturnCode::Timeout,
                ..
            }
        )),
        "spin reported {errors:?}"
    );
    output.try_recv().expect("the work was dropped")
}
