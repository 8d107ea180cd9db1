//! What threads an ordinary process runs on the Tokio executor: a node (with its
//! parameter services), a publisher, a subscription, a service, a client, a timer, an
//! action server and an action client, all served (a goal runs to its result and
//! expires), and no rcl wait-set thread (the fallback waiter) among them. A client
//! that waits for its service through the graph (`notify_on_service_ready`) is the one
//! thing that still starts one, lazily.

mod support;

use rclrs::*;
use rclrs_tokio_executor::CreateTokioExecutor;
use ros_env::std_msgs::msg::Int32;
use ros_env::std_srvs::srv::{SetBool_Request, SetBool_Response};
use ros_env::test_msgs::action::{Fibonacci, Fibonacci_Goal, Fibonacci_Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{
    echo_service, run_to_end, spin_until_resolved_without_alarm, thread_names, unique, wait_matched,
};

/// The process's threads whose names start with `prefix`.
fn threads_named(prefix: &str) -> Vec<String> {
    thread_names()
        .into_iter()
        .filter(|name| name.starts_with(prefix))
        .collect()
}

fn fallback_threads() -> usize {
    threads_named("rclrs-tokio-fal").len()
}

#[test]
fn an_ordinary_node_runs_no_rcl_wait_thread() {
    let context = support::isolated_context();
    let mut executor = context.create_tokio_executor();
    let node = executor.create_node(unique("inventory").as_str()).unwrap();
    let count = |n: &Arc<AtomicUsize>| {
        let n = Arc::clone(n);
        move || {
            n.fetch_add(1, Ordering::SeqCst);
        }
    };
    let (heard, ticks, answered) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let topic = unique("inventory_topic");
    let on_message = count(&heard);
    let _subscription = node
        .create_subscription(topic.as_str().keep_last(10).reliable(), move |_: Int32| {
            on_message()
        })
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(10).reliable())
        .unwrap();
    let on_tick = count(&ticks);
    let _timer = node
        .create_timer_repeating(Duration::from_millis(10), on_tick)
        .unwrap();
    let (_service, client) = echo_service(&node, &unique("inventory_service"));
    let action_name = unique("inventory_action");
    let _action_server = node
        .create_action_server::<Fibonacci, _>(
            action_name
                .as_str()
                .goal_expiration_timeout(Duration::from_millis(100)),
            |requested: RequestedGoal<Fibonacci>| {
                let executing = requested.accept().execute();
                async move {
                    executing.succeeded_with(Fibonacci_Result {
                        sequence: vec![0, 1],
                    })
                }
            },
        )
        .unwrap();
    let action_client = node
        .create_action_client::<Fibonacci>(action_name.as_str())
        .unwrap();
    wait_matched(&publisher, 1);
    while !client.service_is_ready().unwrap() || !action_client.server_is_available().unwrap() {
        std::thread::sleep(Duration::from_millis(10));
    }

    publisher.publish(Int32 { data: 1 }).unwrap();
    let on_answer = count(&answered);
    drop(
        client
            .call_then(
                SetBool_Request { data: true },
                move |_: SetBool_Response| on_answer(),
            )
            .unwrap(),
    );
    let requested = action_client.request_goal(Fibonacci_Goal { order: 2 });
    let goal_id = *requested.goal_id();
    let status = run_to_end(&mut executor, async move {
        requested
            .await
            .expect("the goal was rejected")
            .result
            .await
            .0
    });
    assert_eq!(status, GoalStatusCode::Succeeded);
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(500)));

    assert_eq!(heard.load(Ordering::SeqCst), 1);
    assert_eq!(answered.load(Ordering::SeqCst), 1);
    // The finished goal expired (100 ms after it finished) while spinning.
    let result = action_client.receive_result(goal_id);
    let status = run_to_end(&mut executor, async move { result.await.0 });
    assert_eq!(status, GoalStatusCode::Unknown);
    assert!(ticks.load(Ordering::SeqCst) >= 10);
    assert_eq!(fallback_threads(), 0, "threads: {:?}", thread_names());

    // Waiting for a service through the graph listens for graph changes: that starts
    // the fallback waiter, for the graph guard condition only.
    let ready = client.notify_on_service_ready();
    executor.spin(
        SpinOptions::default()
            .until_promise_resolved(ready)
            .timeout(Duration::from_secs(5)),
    );
    // The promise can resolve (the service is already there) before the Worker has
    // taken the graph guard condition in, so wait for the thread to appear.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while fallback_threads() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(fallback_threads(), 1, "threads: {:?}", thread_names());
}

/// Dropping the executor ends every thread of its own before it returns: the pool's
/// threads drop the Worker tasks still on them, which may hold the last nodes, so their
/// rcl entities and the context's DDS participant are finalized by then. A process that
/// exits right after the drop then runs no teardown under the middleware's static
/// destructors (a test binary crashed at exit about one run in fifteen under load when
/// the pool's threads were not waited for).
#[test]
fn dropping_the_executor_ends_its_threads() {
    let ours = || threads_named("drop-ends-");
    for round in 0..5 {
        let context = support::isolated_context();
        let mut executor = context
            .create_tokio_executor_with(
                rclrs_tokio_executor::TokioExecutorOptions::new().thread_name("drop-ends"),
            )
            .unwrap();
        let node = executor.create_node(unique("drop_ends").as_str()).unwrap();
        let topic = unique("drop_ends_topic");
        let _subscription = node
            .create_subscription(topic.as_str(), |_: Int32| {})
            .unwrap();
        let _timer = node
            .create_timer_repeating(Duration::from_millis(1), || {})
            .unwrap();
        executor.spin(SpinOptions::default().timeout(Duration::from_millis(20)));
        assert!(
            !ours().is_empty(),
            "the executor runs threads named drop-ends-*"
        );
        // The executor holds the last handles to the node's entities once these go.
        drop((_subscription, _timer, node, context));
        drop(executor);
        assert_eq!(ours(), Vec::<String>::new(), "round {round}");
    }
}

/// Workers created from another thread while the executor drops, each on a thread of
/// its own, and one created after the drop: the drop stays short, and no thread of the
/// executor outlives it, though the user keeps every Worker. A Worker created once the
/// executor had told its Workers to shut down missed that, and its thread ran on:
/// dropping the executor then waited its full patience for it (2 s, in 2 of 30 rounds of
/// a probe), and the thread ran for as long as the Worker was kept.
#[test]
fn workers_created_while_the_executor_drops_end_with_it() {
    let ours = || threads_named("late-wk").len();
    let context = support::isolated_context();
    let mut kept = Vec::new();
    for round in 0..10u64 {
        let mut executor = context
            .create_tokio_executor_with(
                rclrs_tokio_executor::TokioExecutorOptions::new()
                    .thread_name("late-wk")
                    .dedicated_workers(rclrs_tokio_executor::DedicatedWorkers::all()),
            )
            .unwrap();
        let node = executor
            .create_node(unique("late_workers").as_str())
            .unwrap();
        executor.spin(SpinOptions::default().timeout(Duration::from_millis(10)));
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let maker = std::thread::spawn(move || {
            let mut workers = Vec::new();
            while !stopped.load(Ordering::Acquire) {
                workers.push(node.create_worker(()));
                std::thread::sleep(Duration::from_micros(100));
            }
            workers.push(node.create_worker(()));
            (node, workers)
        });
        std::thread::sleep(Duration::from_millis(5 + round));
        let started = Instant::now();
        drop(executor);
        let took = started.elapsed();
        std::thread::sleep(Duration::from_millis(2));
        stop.store(true, Ordering::Release);
        kept.push(maker.join().unwrap());
        assert!(
            took < Duration::from_secs(1),
            "round {round}: dropping the executor took {took:?}"
        );
        let deadline = Instant::now() + Duration::from_secs(1);
        while ours() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(ours(), 0, "round {round}: threads of the dropped executor");
    }
}

/// Timers for `workers`, created at the same moment (from a thread each).
fn timers_created_at_once(workers: &[Worker<()>]) -> Vec<WorkerTimer<()>> {
    let start = Arc::new(std::sync::Barrier::new(workers.len()));
    std::thread::scope(|scope| {
        let makers: Vec<_> = workers
            .iter()
            .map(|worker| {
                let start = Arc::clone(&start);
                scope.spawn(move || {
                    start.wait();
                    worker
                        .create_timer_repeating(Duration::from_millis(5), |_: &mut ()| {})
                        .unwrap()
                })
            })
            .collect();
        makers.into_iter().map(|m| m.join().unwrap()).collect()
    })
}

/// Threads named `name` (the executor's thread name, then `-timers`, cut to 15 bytes).
fn scheduler_threads(name: &str) -> usize {
    thread_names().into_iter().filter(|n| n == name).count()
}

/// Workers on a runtime the user passed in that get their first timers at the same
/// moment share the executor's one timer-scheduler thread (two threads registering
/// timers at once each started one before).
#[test]
fn timers_created_at_once_on_many_workers_start_one_scheduler_thread() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for round in 0..10 {
        let context = support::isolated_context();
        let executor = context
            .create_tokio_executor_with(
                rclrs_tokio_executor::TokioExecutorOptions::new()
                    .thread_name("many-timers")
                    .runtime_handle(runtime.handle().clone()),
            )
            .unwrap();
        let node = executor
            .create_node(unique("many_timers").as_str())
            .unwrap();
        let workers: Vec<_> = (0..8).map(|_| node.create_worker(())).collect();
        let timers = timers_created_at_once(&workers);
        // Registration happens on the Workers' own tasks: give them time to run it.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while scheduler_threads("many-timers-tim") == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(scheduler_threads("many-timers-tim"), 1, "round {round}");
        drop((timers, workers, node, context));
        drop(executor);
        assert_eq!(
            scheduler_threads("many-timers-tim"),
            0,
            "round {round}: the thread outlived its executor"
        );
    }
}

/// On the executor's own threads each Worker drives its own timers: eight Workers'
/// timers all fire, and no timer-scheduler thread starts (a spin with no timeout files
/// no alarm, which is the executor's thread's other job).
#[test]
fn timers_of_workers_on_the_pool_start_no_scheduler_thread() {
    let context = support::isolated_context();
    let mut executor = context
        .create_tokio_executor_with(
            rclrs_tokio_executor::TokioExecutorOptions::new().thread_name("pool-timers"),
        )
        .unwrap();
    let node = executor
        .create_node(unique("pool_timers").as_str())
        .unwrap();
    let workers: Vec<_> = (0..8).map(|_| node.create_worker(())).collect();
    let timers = timers_created_at_once(&workers);
    let fired = Arc::new(AtomicUsize::new(0));
    let (done, all_fired) = futures::channel::oneshot::channel::<()>();
    let done = Arc::new(std::sync::Mutex::new(Some(done)));
    let fired_by: Vec<_> = workers
        .iter()
        .map(|worker| {
            let (fired, done) = (Arc::clone(&fired), Arc::clone(&done));
            worker.create_timer_repeating(Duration::from_millis(2), move |_: &mut ()| {
                // Every Worker's timer, 20 times over (about 40 ms).
                if fired.fetch_add(1, Ordering::SeqCst) + 1 == 8 * 20 {
                    if let Some(done) = done.lock().unwrap().take() {
                        let _ = done.send(());
                    }
                }
            })
        })
        .collect::<Result<_, _>>()
        .unwrap();
    let errors =
        spin_until_resolved_without_alarm(&mut executor, all_fired, Duration::from_secs(20));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(fired.load(Ordering::SeqCst) >= 8 * 20);
    assert_eq!(
        scheduler_threads("pool-timers-tim"),
        0,
        "a timer-scheduler thread runs"
    );
    drop((fired_by, timers, workers, node));
}

/// The executor's Tokio runtime gets no thread of its own where blocking spins drive
/// it: an async task with a Tokio timer, a timer and a subscription are all served by
/// `spin()` with the pool's threads alone. `spin_async`, which runs on a runtime of the
/// caller's, cannot drive it, and starts that thread.
#[test]
fn the_tokio_runtime_gets_a_thread_only_where_no_spin_drives_it() {
    let context = support::isolated_context();
    let mut executor = context
        .create_tokio_executor_with(
            rclrs_tokio_executor::TokioExecutorOptions::new().thread_name("rt-inventory"),
        )
        .unwrap();
    let node = executor
        .create_node(unique("rt_inventory").as_str())
        .unwrap();
    let topic = unique("rt_inventory_topic");
    let heard = Arc::new(AtomicUsize::new(0));
    let _subscription = {
        let heard = Arc::clone(&heard);
        node.create_subscription(topic.as_str().keep_last(10).reliable(), move |_: Int32| {
            heard.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(10).reliable())
        .unwrap();
    wait_matched(&publisher, 1);
    publisher.publish(Int32 { data: 1 }).unwrap();
    let slept = run_to_end(&mut executor, async {
        let started = Instant::now();
        tokio::time::sleep(Duration::from_millis(20)).await;
        started.elapsed()
    });
    assert!(slept >= Duration::from_millis(20));
    let deadline = Instant::now() + Duration::from_secs(5);
    while heard.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        executor.spin(SpinOptions::default().timeout(Duration::from_millis(20)));
    }
    assert_eq!(heard.load(Ordering::SeqCst), 1);
    let runtime_threads = || threads_named("rt-inventory-rt").len();
    assert_eq!(runtime_threads(), 0, "threads: {:?}", thread_names());
    let users = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (executor, _) = users
        .block_on(executor.spin_async(SpinOptions::default().timeout(Duration::from_millis(20))));
    assert_eq!(runtime_threads(), 1, "threads: {:?}", thread_names());
    drop(node);
    drop(executor);
    assert_eq!(runtime_threads(), 0, "threads: {:?}", thread_names());
}
