//! Dedicated-thread Workers (`TokioExecutorOptions::dedicated_workers`): which Workers
//! get a thread, where their callbacks run, what placement they report, that Tokio is
//! usable inside their callbacks, and that the thread ends with its Worker. The
//! behaviour suite (`tests/executor_behaviour/`, `tokio_dedicated::*`) checks the contract.

mod support;

use futures::channel::oneshot;
use rclrs::*;
use rclrs_tokio_executor::{
    CreateTokioExecutor, DedicatedWorkers, ExecutorStats, ThreadSetting, TokioExecutorOptions,
};
use ros_env::std_msgs::msg::Int32;
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};
use support::{publish_to, spin_until_resolved_without_alarm, thread_names, unique};

struct ControlLoop {
    threads: Vec<String>,
}

fn current_thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_string()
}

/// An executor whose threads are named `name` (each test its own: tests run in
/// parallel in one process and count threads by name).
fn executor_with(
    context: &Context,
    name: &str,
    dedicated: DedicatedWorkers,
) -> (Executor, ExecutorStats) {
    context
        .create_tokio_executor_with_stats(
            TokioExecutorOptions::new()
                .thread_name(name)
                .dedicated_workers(dedicated),
        )
        .unwrap()
}

fn dedicated_threads(name: &str) -> usize {
    let prefix = format!("{name}-d");
    thread_names()
        .iter()
        .filter(|n| n.starts_with(&prefix))
        .count()
}

/// Run `f` on `worker` and spin until it returned; its result.
fn run_on<T: Send + 'static>(
    executor: &mut Executor,
    worker: &Worker<ControlLoop>,
    f: impl FnOnce(&mut ControlLoop) -> T + Send + 'static,
) -> T {
    let (mut result, notice) = executor.commands().create_notice(worker.run(f));
    spin_for(executor, notice);
    result.try_recv().unwrap().unwrap()
}

/// A new `ControlLoop` Worker that has run once (so its thread exists).
fn started_worker(executor: &mut Executor, node: &Node) -> Worker<ControlLoop> {
    let worker = node.create_worker(ControlLoop {
        threads: Vec::new(),
    });
    run_on(executor, &worker, |_| ());
    worker
}

/// Wait (doing `meanwhile` between looks) until at most `count` threads named
/// `name`-d* are left.
fn wait_for_threads(name: &str, count: usize, what: &str, mut meanwhile: impl FnMut()) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while dedicated_threads(name) > count {
        assert!(Instant::now() < deadline, "the thread outlived its {what}");
        meanwhile();
    }
}

fn spin_for(executor: &mut Executor, promise: Promise<()>) {
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(promise)
            .timeout(Duration::from_secs(20)),
    );
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn only_the_selected_workers_run_on_a_dedicated_thread() {
    let context = support::isolated_context();
    let (mut executor, stats) = executor_with(
        &context,
        "ded-only",
        DedicatedWorkers::for_payload::<ControlLoop>().cpus([0]),
    );
    let node = executor.create_node(unique("dedicated").as_str()).unwrap();
    let worker = node.create_worker(ControlLoop {
        threads: Vec::new(),
    });
    let topic = unique("dedicated_topic");
    let (tx, done) = oneshot::channel();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let node_threads = Arc::new(Mutex::new(Vec::new()));
    let _worker_sub = worker
        .create_subscription(
            topic.as_str().keep_last(100).reliable(),
            move |state: &mut ControlLoop, _m: Int32| {
                state.threads.push(current_thread_name());
                if state.threads.len() == 50 {
                    if let Some(tx) = tx.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                }
            },
        )
        .unwrap();
    let seen = Arc::clone(&node_threads);
    let (node_tx, node_done) = oneshot::channel();
    let node_tx = Mutex::new(Some(node_tx));
    let _node_sub = node
        .create_subscription(
            topic.as_str().keep_last(100).reliable(),
            move |_m: Int32| {
                let mut seen = seen.lock().unwrap();
                seen.push(current_thread_name());
                if seen.len() == 50 {
                    if let Some(tx) = node_tx.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                }
            },
        )
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    publish_to(&publisher, 2, 50);
    spin_for(&mut executor, done);
    spin_for(&mut executor, node_done);

    let threads = run_on(&mut executor, &worker, |state| state.threads.clone());
    assert_eq!(threads.len(), 50);
    let name = &threads[0];
    assert!(name.starts_with("ded-only-d"), "ran on {name}");
    assert!(threads.iter().all(|t| t == name), "one thread: {threads:?}");
    // Node-level callbacks (payload `()`) stay on the Tokio threads.
    let node_threads = node_threads.lock().unwrap();
    assert_eq!(node_threads.len(), 50);
    assert!(
        node_threads.iter().all(|t| !t.starts_with("ded-only-d")),
        "{node_threads:?}"
    );

    let dedicated: Vec<_> = stats
        .workers()
        .into_iter()
        .filter_map(|w| w.dedicated)
        .collect();
    assert_eq!(dedicated.len(), 1, "one dedicated Worker");
    assert_eq!(dedicated[0].affinity, ThreadSetting::Applied);
    assert_eq!(dedicated[0].fifo_priority, ThreadSetting::NotRequested);
}

#[test]
fn tokio_is_usable_inside_a_dedicated_workers_callbacks() {
    let context = support::isolated_context();
    let (mut executor, _stats) = executor_with(&context, "ded-tokio", DedicatedWorkers::all());
    let node = executor
        .create_node(unique("dedicated_tokio").as_str())
        .unwrap();
    let worker = node.create_worker::<()>(());
    let (tx, done) = oneshot::channel();
    let _ran = worker.run(move |_: &mut ()| {
        // Spawned onto the executor's Tokio threads; the timer is Tokio's.
        tokio::spawn(async move {
            let started = Instant::now();
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = tx.send(());
            assert!(started.elapsed() >= Duration::from_millis(20));
        });
    });
    spin_for(&mut executor, done);
}

#[test]
fn a_dedicated_thread_ends_with_its_worker_and_with_the_executor() {
    let context = support::isolated_context();
    let before = dedicated_threads("ded-end");
    let (mut executor, _stats) = executor_with(
        &context,
        "ded-end",
        DedicatedWorkers::for_payload::<ControlLoop>(),
    );
    let node = executor
        .create_node(unique("dedicated_end").as_str())
        .unwrap();
    let worker = started_worker(&mut executor, &node);
    assert_eq!(dedicated_threads("ded-end"), before + 1);

    drop(worker);
    wait_for_threads("ded-end", before, "Worker", || {
        let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(10)));
    });

    let second = started_worker(&mut executor, &node);
    assert_eq!(dedicated_threads("ded-end"), before + 1);
    drop(executor);
    wait_for_threads("ded-end", before, "executor", || {
        std::thread::sleep(Duration::from_millis(5))
    });
    drop(second);
}

#[test]
fn a_dedicated_workers_timer_is_ticked_by_its_own_thread_and_no_scheduler_thread() {
    let context = support::isolated_context();
    let (mut executor, _stats) = executor_with(
        &context,
        "ded-tick",
        DedicatedWorkers::for_payload::<ControlLoop>(),
    );
    let node = executor
        .create_node(unique("dedicated_tick").as_str())
        .unwrap();
    let worker = node.create_worker(ControlLoop {
        threads: Vec::new(),
    });
    const FIRES: usize = 50;
    let (done, fired) = oneshot::channel::<()>();
    let mut done = Some(done);
    let threads = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&threads);
    let _timer = worker
        .create_timer_repeating(Duration::from_millis(2), move |_: &mut ControlLoop| {
            let mut seen = seen.lock().unwrap();
            seen.push(current_thread_name());
            if seen.len() == FIRES {
                if let Some(done) = done.take() {
                    let _ = done.send(());
                }
            }
        })
        .unwrap();
    let errors = spin_until_resolved_without_alarm(&mut executor, fired, Duration::from_secs(20));
    assert!(errors.is_empty(), "{errors:?}");

    let threads = threads.lock().unwrap().clone();
    assert!(threads.len() >= FIRES, "{} fires in 20 s", threads.len());
    assert!(
        threads.iter().all(|t| t.starts_with("ded-tick-d")),
        "{threads:?}"
    );
    // Thread names are cut at 15 bytes: `ded-tick-timers`, `ded-tick-d1-tim`.
    let schedulers: Vec<_> = thread_names()
        .into_iter()
        .filter(|n| n.starts_with("ded-tick") && n.contains("-tim"))
        .collect();
    assert!(schedulers.is_empty(), "{schedulers:?}");
}

#[test]
fn dedicated_workers_with_timers_come_and_go_during_spins_and_every_thread_ends() {
    let context = support::isolated_context();
    let before = dedicated_threads("ded-churn");
    let (mut executor, _stats) = executor_with(
        &context,
        "ded-churn",
        DedicatedWorkers::for_payload::<ControlLoop>(),
    );
    let node = executor
        .create_node(unique("dedicated_churn").as_str())
        .unwrap();
    let fires = Arc::new(AtomicUsize::new(0));
    const ROUNDS: usize = 20;
    for round in 0..ROUNDS {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                node.create_worker(ControlLoop {
                    threads: Vec::new(),
                })
            })
            .collect();
        let mut timers = Vec::new();
        for (i, worker) in workers.iter().enumerate() {
            for period_us in [300, 1_000, 2_500] {
                let fires = Arc::clone(&fires);
                let period = Duration::from_micros(period_us + 100 * i as u64);
                let timer = worker
                    .create_timer_repeating(period, move |_: &mut ControlLoop| {
                        fires.fetch_add(1, Ordering::Relaxed);
                    })
                    .unwrap();
                timers.push(timer);
            }
        }
        // Timers and Workers are dropped on another thread while a spin runs, in
        // either order.
        let dropper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            if round % 2 == 0 {
                drop(timers);
                drop(workers);
            } else {
                drop(workers);
                drop(timers);
            }
        });
        let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(20)));
        // The timed spin ends with its timeout, and with nothing else.
        assert!(
            errors.iter().all(|e| matches!(
                e,
                RclrsError::RclError {
                    code: RclReturnCode::Timeout,
                    ..
                }
            )),
            "{errors:?}"
        );
        dropper.join().unwrap();
    }
    // Every round's timers fired before they were dropped (300 µs ones at least ~30
    // times a round): nothing was lost at start-up, nothing hung at teardown.
    let fired = fires.load(Ordering::Relaxed);
    assert!(fired >= ROUNDS * 10, "{fired} fires in {ROUNDS} rounds");
    wait_for_threads("ded-churn", before, "Workers", || {
        let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(5)));
    });
}
