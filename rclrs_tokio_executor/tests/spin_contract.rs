//! The spin contract, run against the rclrs basic executor and the Tokio executor:
//! timed spins keep their deadline (including the first spin on a fresh executor), and
//! `spin_once` and zero timeouts run one pass with the basic executor's callback counts
//! and error kinds. Cases that only the Tokio executor can promise (the basic executor
//! panics or cannot be asked) are at the end.

mod support;

use rclrs::*;
use rclrs_tokio_executor::{is_runtime_not_driven_error, CreateTokioExecutor};
use ros_env::std_msgs::msg::Int32;
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};
use std::time::{Duration, Instant};
use support::{publish_until, tokio_executor_on, unique, wait_matched};

type MakeExecutor = fn(&Context) -> Executor;

/// What a timed spin may overrun its timeout by, at most, in these tests. The bug this
/// guards against overran by a second; a loaded 2-core CI machine can add milliseconds.
const OVERRUN_BOUND: Duration = Duration::from_millis(60);

/// What the worst of a thousand timed spins may overrun its timeout by: a host that
/// stalls threads for up to 100 ms now and then shows such a stall in one of them.
const WORST_OVERRUN_BOUND: Duration = Duration::from_millis(300);

/// The error kinds of a spin, for comparing executors.
fn kinds(errors: &[RclrsError]) -> Vec<String> {
    errors
        .iter()
        .map(|e| match e {
            RclrsError::RclError { code, .. } => format!("{code:?}"),
            other => format!("{other:?}"),
        })
        .collect()
}

/// The spin reported exactly `expected`: the whole value, so that a caller comparing
/// errors sees no difference between executors.
fn assert_only_error(errors: &[RclrsError], expected: RclrsError) {
    assert_eq!(errors, [expected]);
}

/// The basic executor's timeout for a wait set that timed out with nothing ready:
/// `rcl_wait`'s `RCL_RET_TIMEOUT` with rcl's error message, empty.
fn idle_timeout() -> RclrsError {
    RclrsError::RclError {
        code: RclReturnCode::Timeout,
        msg: Some(RclErrorMsg::new("")),
    }
}

/// The basic executor's timeout for a wait set that ran something and found its time
/// over: its runner's own error, with no message.
fn busy_timeout() -> RclrsError {
    RclrsError::RclError {
        code: RclReturnCode::Timeout,
        msg: None,
    }
}

/// A node with a subscription holding `waiting` messages that have arrived but not run.
struct Waiting {
    executor: Executor,
    ran: Arc<AtomicUsize>,
    _node: Node,
    _subscription: Subscription<Int32>,
    _publisher: Publisher<Int32>,
}

fn with_waiting_messages(make: MakeExecutor, waiting: i32) -> Waiting {
    with_waiting_messages_in(support::isolated_context(), make, waiting)
}

fn with_waiting_messages_in(context: Context, make: MakeExecutor, waiting: i32) -> Waiting {
    let executor = make(&context);
    let node = executor.create_node(unique("once").as_str()).unwrap();
    let topic = unique("once_topic");
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let subscription = node
        .create_subscription(topic.as_str().keep_last(100).reliable(), move |_: Int32| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    wait_matched(&publisher, 1);
    for data in 0..waiting {
        publisher.publish(Int32 { data }).unwrap();
    }
    // Let them arrive (in one process, publishing delivers them; this is margin).
    std::thread::sleep(Duration::from_millis(200));
    Waiting {
        executor,
        ran,
        _node: node,
        _subscription: subscription,
        _publisher: publisher,
    }
}

fn spin_once_with_a_zero_timeout_runs_one_callback_and_times_out(make: MakeExecutor) {
    let mut w = with_waiting_messages(make, 5);
    let errors = w
        .executor
        .spin(SpinOptions::spin_once().timeout(Duration::ZERO));
    assert_eq!(w.ran.load(Ordering::SeqCst), 1);
    assert_only_error(&errors, busy_timeout());
}

fn spin_once_without_a_timeout_runs_one_callback(make: MakeExecutor) {
    let mut w = with_waiting_messages(make, 5);
    let errors = w.executor.spin(SpinOptions::spin_once());
    assert_eq!(w.ran.load(Ordering::SeqCst), 1);
    assert_eq!(kinds(&errors), Vec::<String>::new());
}

fn a_zero_timeout_spin_runs_one_pass_and_times_out(make: MakeExecutor) {
    let mut w = with_waiting_messages(make, 5);
    let errors = w
        .executor
        .spin(SpinOptions::default().timeout(Duration::ZERO));
    assert_eq!(w.ran.load(Ordering::SeqCst), 1);
    assert_only_error(&errors, busy_timeout());
}

fn an_idle_spin_once_waits_for_its_timeout(make: MakeExecutor) {
    // A graph change is a unit of work for the basic executor's wait set (its graph
    // guard condition): nodes of other tests on the same domain would end its spin_once
    // early, so this one has a domain of its own.
    let mut w = with_waiting_messages_in(support::isolated_context(), make, 0);
    // What creating the node and its entities queued (a ready guard condition, for the
    // basic executor's wait set) ends the first spin_once: let it go first.
    let _ = w
        .executor
        .spin(SpinOptions::default().timeout(Duration::from_millis(1000)));
    // Discovery of this test's own entities can still come late: an early return with
    // nothing run is retried.
    let (errors, took) = (0..10)
        .map(|_| {
            let start = Instant::now();
            let errors = w
                .executor
                .spin(SpinOptions::spin_once().timeout(Duration::from_millis(300)));
            (errors, start.elapsed())
        })
        .find(|(errors, _)| !errors.is_empty())
        .expect("ten idle spin_once calls all returned early without a timeout");
    assert_eq!(w.ran.load(Ordering::SeqCst), 0);
    assert_eq!(errors, [idle_timeout()]);
    assert!(
        took >= Duration::from_millis(300),
        "returned after {took:?}"
    );
    assert!(
        took < Duration::from_millis(300) + OVERRUN_BOUND,
        "returned after {took:?}"
    );
}

/// A timed spin in which nothing happens reports the idle wait set's timeout once per
/// Worker: the node's and two Workers of its own, the executor's own counting as one.
fn an_idle_timed_spin_reports_one_wait_timeout_per_worker(make: MakeExecutor) {
    let mut executor = make(&support::isolated_context());
    let node = executor.create_node(unique("workers").as_str()).unwrap();
    let _workers = [node.create_worker(0_u32), node.create_worker(0_u32)];
    // What creating them queued (ready guard conditions, for the basic executor) goes
    // first.
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(300)));
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)));
    assert_eq!(errors, [idle_timeout(), idle_timeout(), idle_timeout()]);
}

fn the_first_spin_once_on_a_fresh_executor_returns_after_the_setup_work(make: MakeExecutor) {
    let mut w = with_waiting_messages(make, 0);
    let start = Instant::now();
    let errors = w
        .executor
        .spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(kinds(&errors), Vec::<String>::new());
    assert_eq!(w.ran.load(Ordering::SeqCst), 0);
    assert!(start.elapsed() < Duration::from_secs(2));
}

fn repeated_spin_once_drains_waiting_messages_one_at_a_time(make: MakeExecutor) {
    let mut w = with_waiting_messages(make, 5);
    for call in 1..=5 {
        let errors = w
            .executor
            .spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
        assert_eq!(kinds(&errors), Vec::<String>::new(), "call {call}");
        assert_eq!(w.ran.load(Ordering::SeqCst), call, "after call {call}");
    }
    let errors = w
        .executor
        .spin(SpinOptions::spin_once().timeout(Duration::ZERO));
    assert_eq!(errors, [idle_timeout()]);
    assert_eq!(w.ran.load(Ordering::SeqCst), 5);
}

fn repeated_zero_timeout_spin_once_drains_waiting_messages_one_at_a_time(make: MakeExecutor) {
    // The polling loop of a program that spins between its own work: each call runs
    // the next waiting message, including those an earlier call's pass left queued.
    let mut w = with_waiting_messages(make, 5);
    for call in 1..=5 {
        let errors = w
            .executor
            .spin(SpinOptions::spin_once().timeout(Duration::ZERO));
        assert_only_error(&errors, busy_timeout());
        assert_eq!(w.ran.load(Ordering::SeqCst), call, "after call {call}");
    }
}

fn a_spin_once_on_an_executor_without_nodes_waits_for_its_timeout(make: MakeExecutor) {
    // No node means no entity and no graph: nothing is work, not even the first time.
    let mut executor = make(&support::isolated_context());
    for call in 0..2 {
        let start = Instant::now();
        let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_millis(100)));
        let took = start.elapsed();
        assert_eq!(errors, [idle_timeout()], "call {call}");
        assert!(
            took >= Duration::from_millis(100) && took < Duration::from_millis(100) + OVERRUN_BOUND,
            "call {call}: a 100 ms spin_once took {took:?}"
        );
    }
}

fn a_spin_once_polls_every_queued_async_task_and_waits_for_other_work(make: MakeExecutor) {
    // The basic executor runs its ready tasks beside its wait: they are not the unit of
    // work a spin_once waits for, so with nothing else ready it waits out its timeout
    // and reports it.
    const TASKS: usize = 20;
    let mut w = with_waiting_messages_in(support::isolated_context(), make, 0);
    let _ = w
        .executor
        .spin(SpinOptions::default().timeout(Duration::from_millis(100)));
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..TASKS {
        let ran = Arc::clone(&ran);
        drop(w.executor.commands().run(async move {
            ran.fetch_add(1, Ordering::SeqCst);
        }));
    }
    let started = Instant::now();
    let errors = w
        .executor
        .spin(SpinOptions::spin_once().timeout(Duration::from_millis(300)));
    let took = started.elapsed();
    assert_eq!(ran.load(Ordering::SeqCst), TASKS);
    assert_eq!(errors, [idle_timeout()]);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(300) + OVERRUN_BOUND,
        "a 300 ms spin_once with only tasks to run took {took:?}"
    );
}

fn every_zero_timeout_spin_runs_a_timer_that_is_always_due(make: MakeExecutor) {
    // A zero-period timer is due again as soon as it ran: each non-blocking pass finds
    // it ready, as `rcl_wait` with a zero timeout does.
    let mut w = with_waiting_messages_in(support::isolated_context(), make, 0);
    let fired = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&fired);
    let _timer = w
        ._node
        .create_timer_repeating(Duration::ZERO, move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let _ = w
        .executor
        .spin(SpinOptions::spin_once().timeout(Duration::from_millis(100)));
    // The Tokio executor's Workers run on threads of their own: on a starved machine
    // (2 cores, the basic executor's twin of this test spinning beside it) one can miss
    // the pass, so a few misses are tolerated; without the timer check at the start
    // of a pass most passes missed.
    let mut missed = Vec::new();
    for call in 0..20 {
        let before = fired.load(Ordering::SeqCst);
        let options = if call % 2 == 0 {
            SpinOptions::default()
        } else {
            SpinOptions::spin_once()
        };
        let errors = w.executor.spin(options.timeout(Duration::ZERO));
        assert_eq!(kinds(&errors), ["Timeout"], "call {call}");
        if fired.load(Ordering::SeqCst) == before {
            missed.push(call);
        }
    }
    assert!(
        missed.len() <= 2,
        "the timer did not fire in passes {missed:?}"
    );
}

fn the_first_timed_spin_on_a_fresh_executor_keeps_its_deadline(make: MakeExecutor) {
    // A fresh executor each time: node creation queues work the first spin must not
    // wait for beyond its deadline.
    for attempt in 0..5 {
        let context = support::isolated_context();
        let mut executor = make(&context);
        let node = executor.create_node(unique("fresh").as_str()).unwrap();
        let _sub = node
            .create_subscription(unique("fresh_topic").as_str(), |_: Int32| {})
            .unwrap();
        let start = Instant::now();
        let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(10)));
        let took = start.elapsed();
        assert_eq!(kinds(&errors), ["Timeout"], "attempt {attempt}");
        assert!(
            took < Duration::from_millis(10) + OVERRUN_BOUND,
            "attempt {attempt}: a 10 ms spin took {took:?}"
        );
    }
}

/// 1,000 timed spins of 0 to 50 ms, a new executor every 50 spins, with or without a
/// stream arriving; returns the overruns.
fn the_first_spin_async_on_a_fresh_executor_keeps_its_deadline(make: MakeExecutor) {
    let context = support::isolated_context();
    let executor = make(&context);
    let node = executor
        .create_node(unique("fresh_async").as_str())
        .unwrap();
    let _sub = node
        .create_subscription(unique("fresh_async_topic").as_str(), |_: Int32| {})
        .unwrap();
    let start = Instant::now();
    let (_executor, errors) = futures::executor::block_on(
        executor.spin_async(SpinOptions::default().timeout(Duration::from_millis(200))),
    );
    let took = start.elapsed();
    assert_eq!(kinds(&errors), ["Timeout"]);
    assert!(
        took < Duration::from_millis(200) + OVERRUN_BOUND,
        "a 200 ms spin_async took {took:?}"
    );
}

fn timed_spins_with_churn(make: MakeExecutor, traffic: bool) -> Vec<Duration> {
    let mut overruns = Vec::with_capacity(1000);
    for round in 0..20 {
        let context = support::isolated_context();
        let mut executor = make(&context);
        let node = executor.create_node(unique("timed").as_str()).unwrap();
        let topic = unique("timed_topic");
        let _sub = node
            .create_subscription(topic.as_str().keep_last(10), |_: Int32| {})
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let publishing = traffic.then(|| {
            let publisher = node
                .create_publisher::<Int32>(topic.as_str().keep_last(10))
                .unwrap();
            publish_until(publisher, &stop, Some(Duration::from_micros(500)))
        });
        for spin in 0..50u64 {
            let timeout = Duration::from_millis((spin * 13 + round) % 51);
            let start = Instant::now();
            let errors = executor.spin(SpinOptions::default().timeout(timeout));
            overruns.push(start.elapsed().saturating_sub(timeout));
            assert_eq!(kinds(&errors), ["Timeout"]);
        }
        stop.store(true, Ordering::Relaxed);
        if let Some(publishing) = publishing {
            publishing.join().unwrap();
        }
    }
    overruns
}

fn report_overruns(what: &str, mut overruns: Vec<Duration>) {
    overruns.sort();
    let median = overruns[overruns.len() / 2];
    let max = *overruns.last().unwrap();
    println!(
        "{what}: {} timed spins, overrun median {median:?}, p99 {:?}, max {max:?}",
        overruns.len(),
        overruns[overruns.len() * 99 / 100]
    );
    // The bug this guards against overran every spin by a second. The worst of a thousand
    // spins on a loaded 2-core VM reaches 100 ms with every executor, the basic one's
    // too (both cores busy with other processes), so the worst case has a wider bound
    // and the bulk, which a systematic lateness moves, a tight one.
    let p90 = overruns[overruns.len() * 9 / 10];
    assert!(
        p90 < Duration::from_millis(20),
        "{what}: a tenth of the timed spins overran by {p90:?} or more"
    );
    assert!(
        max < WORST_OVERRUN_BOUND,
        "{what}: a timed spin overran by {max:?}"
    );
}

fn timed_spins_keep_their_deadline_while_idle(make: MakeExecutor) {
    report_overruns("idle", timed_spins_with_churn(make, false));
}

fn timed_spins_keep_their_deadline_under_traffic(make: MakeExecutor) {
    report_overruns("2 kHz stream", timed_spins_with_churn(make, true));
}

fn a_timeout_too_large_for_rcl_is_refused(make: MakeExecutor) {
    let context = support::isolated_context();
    let mut executor = make(&context);
    let _node = executor.create_node(unique("huge").as_str()).unwrap();
    let start = Instant::now();
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(u64::MAX / 4)));
    assert_only_error(
        &errors,
        RclrsError::RclError {
            code: RclReturnCode::InvalidArgument,
            msg: None,
        },
    );
    assert!(start.elapsed() < Duration::from_secs(2));
}

macro_rules! suite {
    ($module:ident, $make:expr) => {
        mod $module {
            use super::*;
            const MAKE: MakeExecutor = $make;

            #[test]
            fn spin_once_with_a_zero_timeout_runs_one_callback_and_times_out() {
                super::spin_once_with_a_zero_timeout_runs_one_callback_and_times_out(MAKE)
            }
            #[test]
            fn spin_once_without_a_timeout_runs_one_callback() {
                super::spin_once_without_a_timeout_runs_one_callback(MAKE)
            }
            #[test]
            fn a_zero_timeout_spin_runs_one_pass_and_times_out() {
                super::a_zero_timeout_spin_runs_one_pass_and_times_out(MAKE)
            }
            #[test]
            fn an_idle_spin_once_waits_for_its_timeout() {
                super::an_idle_spin_once_waits_for_its_timeout(MAKE)
            }
            #[test]
            fn an_idle_timed_spin_reports_one_wait_timeout_per_worker() {
                super::an_idle_timed_spin_reports_one_wait_timeout_per_worker(MAKE)
            }
            #[test]
            fn the_first_spin_once_on_a_fresh_executor_returns_after_the_setup_work() {
                super::the_first_spin_once_on_a_fresh_executor_returns_after_the_setup_work(MAKE)
            }
            #[test]
            fn repeated_spin_once_drains_waiting_messages_one_at_a_time() {
                super::repeated_spin_once_drains_waiting_messages_one_at_a_time(MAKE)
            }
            #[test]
            fn repeated_zero_timeout_spin_once_drains_waiting_messages_one_at_a_time() {
                super::repeated_zero_timeout_spin_once_drains_waiting_messages_one_at_a_time(MAKE)
            }
            #[test]
            fn a_spin_once_on_an_executor_without_nodes_waits_for_its_timeout() {
                super::a_spin_once_on_an_executor_without_nodes_waits_for_its_timeout(MAKE)
            }
            #[test]
            fn a_spin_once_polls_every_queued_async_task_and_waits_for_other_work() {
                super::a_spin_once_polls_every_queued_async_task_and_waits_for_other_work(MAKE)
            }
            #[test]
            fn every_zero_timeout_spin_runs_a_timer_that_is_always_due() {
                super::every_zero_timeout_spin_runs_a_timer_that_is_always_due(MAKE)
            }
            #[test]
            fn the_first_timed_spin_on_a_fresh_executor_keeps_its_deadline() {
                super::the_first_timed_spin_on_a_fresh_executor_keeps_its_deadline(MAKE)
            }
            #[test]
            fn the_first_spin_async_on_a_fresh_executor_keeps_its_deadline() {
                super::the_first_spin_async_on_a_fresh_executor_keeps_its_deadline(MAKE)
            }
            #[test]
            fn timed_spins_keep_their_deadline_while_idle() {
                super::timed_spins_keep_their_deadline_while_idle(MAKE)
            }
            #[test]
            fn timed_spins_keep_their_deadline_under_traffic() {
                super::timed_spins_keep_their_deadline_under_traffic(MAKE)
            }
            #[test]
            fn a_timeout_too_large_for_rcl_is_refused() {
                super::a_timeout_too_large_for_rcl_is_refused(MAKE)
            }
        }
    };
}

suite!(basic, |context| context.create_basic_executor());
suite!(tokio, |context| context.create_tokio_executor());
suite!(tokio_dedicated, support::dedicated_executor);
suite!(tokio_on_a_users_runtime, support::users_runtime_executor);

// Only the Tokio executor: the basic executor panics on `Instant + Duration::MAX`, and
// has no runtime handle to get wrong.

#[test]
fn tokio_an_unbounded_timeout_is_refused_not_a_silent_no_op() {
    let context = support::isolated_context();
    let mut executor = context.create_tokio_executor();
    let _node = executor.create_node(unique("max").as_str()).unwrap();
    for options in [
        SpinOptions::default().timeout(Duration::MAX),
        SpinOptions::spin_once().timeout(Duration::MAX),
    ] {
        let start = Instant::now();
        let errors = executor.spin(options);
        assert_eq!(kinds(&errors), ["InvalidArgument"]);
        assert!(start.elapsed() < Duration::from_secs(2));
    }
}

#[test]
fn tokio_a_runtime_handle_nobody_drives_is_reported() {
    let idle = ::tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut executor = tokio_executor_on(idle.handle());
    let _node = executor.create_node(unique("undriven").as_str()).unwrap();

    // A timed spin still ends at its deadline.
    let start = Instant::now();
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
    let took = start.elapsed();
    assert_eq!(kinds(&errors), ["Timeout"]);
    assert!(
        took < Duration::from_millis(200) + OVERRUN_BOUND,
        "took {took:?}"
    );

    // An unbounded one reports the runtime instead of waiting for ever.
    let start = Instant::now();
    let errors = executor.spin(SpinOptions::default());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(is_runtime_not_driven_error(&errors[0]), "{errors:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
}
