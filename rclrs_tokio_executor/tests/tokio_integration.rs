//! What only the Tokio executor promises: composing with Tokio, a blocking spin inside a
//! user's runtime (served, but refused where it would starve its own Workers), running
//! on a user's runtime, containing panics, and refusing options no thread can carry.

mod support;

use futures::channel::oneshot;
use rclrs::*;
use rclrs_tokio_executor::{
    is_spin_inside_runtime_error, CreateTokioExecutor, TokioExecutorError, TokioExecutorOptions,
};
use ros_env::std_msgs::msg::Int32;
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};
use support::{tokio_executor_on, unique};

/// Resolves the returned promise on the `n`th call of the returned closure.
fn after_n_calls(n: usize) -> (impl Fn() + Send + Sync + Clone + 'static, Promise<()>) {
    let (tx, rx) = oneshot::channel();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let count = Arc::new(AtomicUsize::new(0));
    let tick = move || {
        if count.fetch_add(1, Ordering::SeqCst) + 1 == n {
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
    };
    (tick, rx)
}

/// A subscription of a fresh node of `executor` on a topic of its own, and a thread
/// that publishes twenty messages to it once matched (and returns the publisher): the
/// promise resolves when all twenty arrived.
fn twenty_messages(
    executor: &Executor,
    name: &str,
) -> (
    Subscription<Int32>,
    std::thread::JoinHandle<Publisher<Int32>>,
    Promise<()>,
) {
    let node = executor.create_node(unique(name).as_str()).unwrap();
    let topic = unique(&format!("{name}_topic"));
    let (tick, done) = after_n_calls(20);
    let subscription = node
        .create_subscription(
            topic.as_str().keep_last(100).reliable(),
            move |_m: Int32| tick(),
        )
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    let publishing = std::thread::spawn(move || {
        support::wait_matched(&publisher, 1);
        for data in 0..20 {
            publisher.publish(Int32 { data }).unwrap();
        }
        publisher
    });
    (subscription, publishing, done)
}

/// A blocking spin of `executor` until twenty messages arrived (or 20 s): its errors.
fn blocking_spin_of_twenty_messages(mut executor: Executor) -> Vec<RclrsError> {
    let (_subscription, publishing, done) = twenty_messages(&executor, "blocking_spin");
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(done)
            .timeout(Duration::from_secs(20)),
    );
    let _publisher = publishing.join().unwrap();
    errors
}

// A blocking spin from inside a user's runtime blocks the calling thread, as the basic
// executor's does, and serves callbacks: on a current-thread runtime (whose other tasks
// wait meanwhile) and on a multi-thread one (through `block_in_place`).
#[tokio::test(flavor = "current_thread")]
async fn a_blocking_spin_inside_a_current_thread_runtime_serves_callbacks_as_basic_does() {
    let context = support::isolated_context();
    let basic = blocking_spin_of_twenty_messages(context.create_basic_executor());
    assert!(basic.is_empty(), "basic: {basic:?}");
    let errors = blocking_spin_of_twenty_messages(context.create_tokio_executor());
    assert!(errors.is_empty(), "tokio: {errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_blocking_spin_inside_a_multi_thread_runtime_serves_callbacks_and_the_runtime() {
    let context = support::isolated_context();
    let messages = blocking_spin_of_twenty_messages(context.create_tokio_executor());
    assert!(messages.is_empty(), "{messages:?}");
    // A spin on the runtime's only worker thread, waiting for another task of that
    // runtime: that task runs meanwhile (the runtime moves it to another thread).
    let (ticked, done) = oneshot::channel::<()>();
    let ticking = tokio::spawn(async move {
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let _ = ticked.send(());
    });
    let mut executor = context.create_tokio_executor();
    let spinning = tokio::spawn(async move {
        let start = Instant::now();
        let errors = executor.spin(
            SpinOptions::default()
                .until_promise_resolved(done)
                .timeout(Duration::from_secs(10)),
        );
        (errors, start.elapsed())
    });
    let (errors, took) = spinning.await.unwrap();
    assert!(
        errors.is_empty(),
        "the runtime's task was starved: {errors:?}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    ticking.await.unwrap();
}

// Where the spin would block the one thread that runs its Worker tasks, it could never
// end: it returns a typed error at once instead.
#[test]
fn a_blocking_spin_on_the_single_thread_its_workers_need_returns_a_typed_error() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut executor = tokio_executor_on(runtime.handle());
    let start = Instant::now();
    let errors = runtime.block_on(async { executor.spin(SpinOptions::default()) });
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "it must not block"
    );
    assert_eq!(errors.len(), 1);
    assert!(is_spin_inside_runtime_error(&errors[0]), "{:?}", errors[0]);
    assert!(
        format!("{:?}", errors[0]).contains("spin_async"),
        "{:?}",
        errors[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spin_async_composes_with_a_tokio_main() {
    let context = support::isolated_context();
    let executor = context.create_tokio_executor();
    let (_subscription, publishing, done) = twenty_messages(&executor, "spin_async");
    let (executor, errors) = tokio::time::timeout(
        Duration::from_secs(20),
        executor.spin_async(SpinOptions::default().until_promise_resolved(done)),
    )
    .await
    .expect("spin_async finished");
    assert!(errors.is_empty(), "{errors:?}");
    let _publisher = publishing.join().unwrap();
    // The executor comes back and can spin again.
    let (_executor, errors) = executor
        .spin_async(SpinOptions::default().timeout(Duration::from_millis(10)))
        .await;
    assert_eq!(errors.len(), 1, "a timed spin reports Timeout");
}

#[test]
fn callbacks_can_use_tokio_from_inside() {
    let context = support::isolated_context();
    let mut executor = context.create_tokio_executor();
    let node = executor
        .create_node(unique("tokio_inside").as_str())
        .unwrap();
    // A Tokio timer awaited inside an rclrs async task.
    let slept = executor.commands().run(async {
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(50)).await;
        start.elapsed()
    });
    let (mut slept, notice) = executor.commands().create_notice(slept);
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(notice)
            .timeout(Duration::from_secs(20)),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(slept.try_recv().unwrap().unwrap() >= Duration::from_millis(50));
    drop(node);
}

#[test]
fn it_runs_on_a_runtime_the_user_passes_in() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("users-runtime")
        .enable_all()
        .build()
        .unwrap();
    let mut executor = tokio_executor_on(runtime.handle());
    let node = executor
        .create_node(unique("user_runtime").as_str())
        .unwrap();
    let worker = node.create_worker::<Vec<String>>(Vec::new());
    let topic = unique("user_runtime_topic");
    let (tick, done) = after_n_calls(5);
    let _sub = worker
        .create_subscription(
            topic.as_str().keep_last(100).reliable(),
            move |threads: &mut Vec<String>, _m: Int32| {
                threads.push(std::thread::current().name().unwrap_or("").to_string());
                tick();
            },
        )
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    support::wait_matched(&publisher, 1);
    for data in 0..5 {
        publisher.publish(Int32 { data }).unwrap();
    }
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(done)
            .timeout(Duration::from_secs(20)),
    );
    assert!(errors.is_empty(), "{errors:?}");
    let threads = worker.run(|threads: &mut Vec<String>| threads.clone());
    let (mut threads, notice) = executor.commands().create_notice(threads);
    executor.spin(SpinOptions::default().until_promise_resolved(notice));
    let threads = threads.try_recv().unwrap().unwrap();
    assert_eq!(threads.len(), 5);
    assert!(threads.iter().all(|t| t == "users-runtime"), "{threads:?}");
}

#[test]
fn a_panicking_callback_is_contained_and_its_worker_keeps_serving() {
    let context = support::isolated_context();
    let mut executor = context.create_tokio_executor();
    let node = executor.create_node(unique("panic").as_str()).unwrap();
    let worker = node.create_worker::<usize>(0);
    let (bad_topic, good_topic) = (unique("panic_bad"), unique("panic_good"));
    let _bad = worker
        .create_subscription(
            bad_topic.as_str().keep_last(100).reliable(),
            |_: &mut usize, m: Int32| panic!("deliberate panic on message {}", m.data),
        )
        .unwrap();
    let (tick, done) = after_n_calls(10);
    let _good = worker
        .create_subscription(
            good_topic.as_str().keep_last(100).reliable(),
            move |served: &mut usize, _m: Int32| {
                *served += 1;
                tick();
            },
        )
        .unwrap();
    let bad = node
        .create_publisher::<Int32>(bad_topic.as_str().keep_last(100).reliable())
        .unwrap();
    let good = node
        .create_publisher::<Int32>(good_topic.as_str().keep_last(100).reliable())
        .unwrap();
    support::wait_matched(&bad, 1);
    support::wait_matched(&good, 1);
    for data in 0..10 {
        bad.publish(Int32 { data }).unwrap();
        good.publish(Int32 { data }).unwrap();
    }
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(done)
            .timeout(Duration::from_secs(20)),
    );
    assert!(errors.is_empty(), "{errors:?}");
    let served = worker.run(|served: &mut usize| *served);
    let (mut served, notice) = executor.commands().create_notice(served);
    executor.spin(SpinOptions::default().until_promise_resolved(notice));
    assert_eq!(served.try_recv().unwrap(), Some(10));
}

/// A task spawned onto a pool thread's runtime from a thread off the pool, through the
/// handle a callback took (`Handle::current()`), runs and its Tokio timer fires: while
/// the Worker on that thread waits for work, and while a stream keeps waking it. (A
/// Worker that parked its thread on a futex of its own while alone there, tried in
/// an experiment in `docs/performance-notes.md`, "Tried and not kept", would hold such a task
/// back until its next item or a patience ran out: this is what that patience guarded.)
/// A task a callback spawns (`tokio::spawn`) goes on running after the spin returns:
/// the blocking spin drove the executor's runtime while it spun, and a thread of the
/// runtime's own takes over when a spin ends with such a task alive.
#[test]
fn a_task_a_callback_spawns_goes_on_between_spins() {
    let context = support::isolated_context();
    let mut executor = context.create_tokio_executor();
    let node = executor.create_node(unique("spawned_on").as_str()).unwrap();
    let ticks = Arc::new(AtomicUsize::new(0));
    let spawned = Arc::new(AtomicBool::new(false));
    let _timer = {
        let (ticks, spawned) = (Arc::clone(&ticks), Arc::clone(&spawned));
        node.create_timer_repeating(Duration::from_millis(5), move || {
            if !spawned.swap(true, Ordering::SeqCst) {
                let ticks = Arc::clone(&ticks);
                tokio::spawn(async move {
                    let mut every = tokio::time::interval(Duration::from_millis(2));
                    loop {
                        every.tick().await;
                        ticks.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        })
        .unwrap()
    };
    support::spin_until(&mut executor, || spawned.load(Ordering::SeqCst));
    let before = ticks.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(200));
    let after = ticks.load(Ordering::SeqCst);
    // A hundred periods of 2 ms; a loaded machine may stretch some.
    assert!(
        after - before >= 20,
        "the spawned task did not run between spins: {before} ticks, then {after}"
    );
}

#[test]
fn a_task_spawned_through_a_callbacks_runtime_handle_runs_while_its_worker_waits() {
    let context = support::isolated_context();
    let mut executor = context.create_tokio_executor();
    let node = executor
        .create_node(unique("handle_taken").as_str())
        .unwrap();
    let topic = unique("handle_taken_topic");
    let handle = Arc::new(Mutex::new(None));
    let taken = Arc::clone(&handle);
    let _subscription = node
        .create_subscription(topic.as_str().keep_last(10), move |_: Int32| {
            taken
                .lock()
                .unwrap()
                .get_or_insert_with(tokio::runtime::Handle::current);
        })
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(10))
        .unwrap();
    support::publish_to(&publisher, 1, 1);
    support::spin_until(&mut executor, || handle.lock().unwrap().is_some());
    let handle = handle.lock().unwrap().clone().unwrap();
    let spinning = std::thread::spawn(move || {
        support::spin_for(&mut executor, Duration::from_secs(4));
        executor
    });
    let stop = Arc::new(AtomicBool::new(false));
    let mut publishing = None;
    for (round, streaming) in [(0, false), (1, true)] {
        if streaming {
            let publisher = publisher.clone();
            publishing = Some(support::publish_until(
                publisher,
                &stop,
                Some(Duration::from_millis(1)),
            ));
        }
        for task in 0..10 {
            // Let the Worker go back to waiting.
            std::thread::sleep(Duration::from_millis(30));
            let (ran, running) = std::sync::mpsc::channel();
            let started = Instant::now();
            handle.spawn(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let _ = ran.send(());
            });
            running
                .recv_timeout(Duration::from_secs(1))
                .unwrap_or_else(|_| {
                    panic!("round {round}, task {task}: not run within 1 s of its spawn")
                });
            assert!(started.elapsed() >= Duration::from_millis(5));
        }
    }
    stop.store(true, Ordering::Relaxed);
    publishing.unwrap().join().unwrap();
    drop(spinning.join().unwrap());
}

/// Dropping an executor while it spins (its `spin_async` future dropped mid-spin, with a
/// fast stream arriving): once the drop has returned, no callback starts.
#[test]
fn no_callback_starts_after_a_spinning_executor_is_dropped() {
    use std::sync::atomic::AtomicBool;
    for repetition in 0..20 {
        let context = support::isolated_context();
        let executor = context.create_tokio_executor();
        let node = executor.create_node(unique("dropped").as_str()).unwrap();
        let topic = unique("dropped_topic");
        let started = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&started);
        let _sub = node
            .create_subscription(topic.as_str().keep_last(1000), move |_: Int32| {
                counter.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        let publisher = node
            .create_publisher::<Int32>(topic.as_str().keep_last(1000))
            .unwrap();
        support::wait_matched(&publisher, 1);
        let stop = Arc::new(AtomicBool::new(false));
        let publishing = support::publish_until(publisher, &stop, None);
        let (elapsed_tx, elapsed) = oneshot::channel::<()>();
        // The drop comes 30 ms after the first callback started (not after the spin
        // began: on a loaded machine 30 ms of spinning may see none), so it lands
        // while callbacks keep starting.
        let first = Arc::clone(&started);
        let timer = std::thread::spawn(move || {
            let deadline = Instant::now() + support::PATIENCE;
            while first.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(30));
            let _ = elapsed_tx.send(());
        });
        let spinning = executor.spin_async(SpinOptions::default());
        // The timer wins; `select` hands the unfinished spin future back, and dropping
        // it drops the executor while it spins.
        let dropped =
            futures::executor::block_on(futures::future::select(Box::pin(spinning), elapsed));
        assert!(matches!(dropped, futures::future::Either::Right(_)));
        drop(dropped);
        let at_drop = started.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(50));
        let after = started.load(Ordering::SeqCst);
        stop.store(true, Ordering::Relaxed);
        publishing.join().unwrap();
        timer.join().unwrap();
        assert!(
            at_drop > 0,
            "repetition {repetition}: nothing ran while spinning"
        );
        assert_eq!(
            after, at_drop,
            "repetition {repetition}: callbacks started after the executor was dropped"
        );
    }
}

/// A thread name the OS cannot take is an error at creation, not a panic, with the
/// pool's threads and with dedicated Workers on a user's runtime alike; a long name is
/// fine (Linux keeps its first 15 bytes).
#[test]
fn a_thread_name_with_a_nul_byte_is_a_typed_error() {
    let context = support::isolated_context();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for options in [
        TokioExecutorOptions::new(),
        TokioExecutorOptions::new().runtime_handle(runtime.handle().clone()),
    ] {
        let refused = context.create_tokio_executor_with(options.thread_name("bad\0name"));
        assert!(
            matches!(&refused, Err(TokioExecutorError::InvalidThreadName(name)) if name == "bad\0name"),
            "{:?}",
            refused.err()
        );
    }
    let long = "a-thread-name-far-longer-than-linux-keeps";
    let mut executor = context
        .create_tokio_executor_with(TokioExecutorOptions::new().thread_name(long))
        .unwrap();
    let (tick, done) = after_n_calls(1);
    let node = executor.create_node(unique("long_name").as_str()).unwrap();
    let _timer = node
        .create_timer_oneshot(Duration::from_millis(1), tick)
        .unwrap();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(done)
            .timeout(Duration::from_secs(20)),
    );
    assert!(errors.is_empty(), "{errors:?}");
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// On a runtime the user passed in, which outlives the executor, the executor's async
/// tasks end with it, as a pool thread's runtime drops its tasks: a future that would
/// wait for ever is dropped, and a node dropped afterwards leaves the graph. Before,
/// both stayed for as long as the runtime lived: rclrs's node task, waiting for the next
/// spin, held the node's graph guard condition and so the node's rcl handle.
#[test]
fn on_a_users_runtime_the_executors_tasks_end_with_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let context = support::isolated_context();
    let observing = context.create_basic_executor();
    let observer = observing
        .create_node(unique("users_runtime_observer").as_str())
        .unwrap();
    let mut executor = support::executor_on(&context, runtime.handle());
    let name = unique("users_runtime_leaver");
    let node = executor.create_node(name.as_str()).unwrap();
    let listener = node.notify_on_graph_change(|| false);
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(Arc::clone(&dropped));
    drop(executor.commands().run(async move {
        let _flag = flag;
        std::future::pending::<()>().await
    }));
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)));
    let listed = || {
        observer
            .get_node_names()
            .unwrap()
            .iter()
            .any(|node| node.name == name)
    };
    let within = |limit: Duration, condition: &dyn Fn() -> bool| {
        let deadline = Instant::now() + limit;
        while !condition() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        condition()
    };
    assert!(
        within(Duration::from_secs(10), &listed),
        "the node joins the graph"
    );
    drop(executor);
    assert!(
        within(Duration::from_secs(2), &|| dropped.load(Ordering::SeqCst)),
        "a pending task of the dropped executor is dropped"
    );
    drop((listener, node));
    assert!(
        within(Duration::from_secs(10), &|| !listed()),
        "a node dropped after its executor leaves the graph"
    );
}
