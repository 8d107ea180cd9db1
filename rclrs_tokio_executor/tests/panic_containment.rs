//! A panicking callback leaves its entity usable: the next message, request, response
//! or tick runs the user's callback again, at node and at Worker level, and the
//! executor counts every panic (`ExecutorStats`). The basic executor does not contain
//! panics at all (one unwinds out of its `spin`), so these cases are the Tokio
//! executor's alone.

mod support;

use futures::channel::oneshot;
use rclrs::*;
use rclrs_tokio_executor::{CreateTokioExecutor, ExecutorStats, TokioExecutorOptions};
use ros_env::std_msgs::msg::Int32;
use ros_env::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc, Mutex,
};
use std::time::Duration;
use support::{echo_service, unique, wait_matched};

const PATIENCE: Duration = Duration::from_secs(20);

fn executor_with_stats() -> (Executor, ExecutorStats) {
    let context = support::isolated_context();
    context
        .create_tokio_executor_with_stats(TokioExecutorOptions::new())
        .unwrap()
}

/// Resolves the returned promise once `calls` reaches `target`.
fn when_reaches(
    calls: &Arc<AtomicUsize>,
    target: usize,
) -> (impl Fn() + Send + Sync + 'static, Promise<()>) {
    let (tx, rx) = oneshot::channel();
    let tx = Mutex::new(Some(tx));
    let calls = Arc::clone(calls);
    let tick = move || {
        if calls.fetch_add(1, Ordering::SeqCst) + 1 == target {
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
    };
    (tick, rx)
}

fn spin_until(executor: &mut Executor, done: Promise<()>) {
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(done)
            .timeout(PATIENCE),
    );
    assert!(errors.is_empty(), "the spin ended with {errors:?}");
}

/// 1,000 messages; the callback panics on every 100th. Every message still reaches it.
fn stream_through(
    make_subscription: impl FnOnce(&Node, &str, Box<dyn Fn(i32) + Send + Sync>) -> Box<dyn Send>,
) {
    let (mut executor, stats) = executor_with_stats();
    let node = executor
        .create_node(unique("panic_stream").as_str())
        .unwrap();
    let topic = unique("panic_stream_topic");
    let calls = Arc::new(AtomicUsize::new(0));
    let (tick, done) = when_reaches(&calls, 1000);
    let _subscription = make_subscription(
        &node,
        &topic,
        Box::new(move |data| {
            tick();
            if data % 100 == 0 {
                panic!("deliberate panic on message {data}");
            }
        }),
    );
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(1000).reliable())
        .unwrap();
    wait_matched(&publisher, 1);
    for data in 0..1000 {
        publisher.publish(Int32 { data }).unwrap();
    }
    spin_until(&mut executor, done);
    assert_eq!(calls.load(Ordering::SeqCst), 1000);
    assert_eq!(stats.callback_panics(), 10);
    let by_entity = stats.panics_by_entity();
    assert_eq!(by_entity, vec![(format!("/{topic}"), 10)], "{by_entity:?}");
}

#[test]
fn a_node_subscription_serves_every_message_after_panics() {
    stream_through(|node, topic, callback| {
        Box::new(
            node.create_subscription(topic.keep_last(1000).reliable(), move |m: Int32| {
                callback(m.data)
            })
            .unwrap(),
        )
    });
}

#[test]
fn a_worker_subscription_serves_every_message_after_panics() {
    stream_through(|node, topic, callback| {
        let worker = node.create_worker::<()>(());
        let subscription = worker
            .create_subscription(
                topic.keep_last(1000).reliable(),
                move |_: &mut (), m: Int32| callback(m.data),
            )
            .unwrap();
        Box::new((worker, subscription))
    });
}

/// A timer whose callback panics on every odd fire keeps firing.
fn a_timer_keeps_firing(
    make_timer: impl FnOnce(&Node, Box<dyn Fn() + Send + Sync>) -> Box<dyn Send>,
) {
    let (mut executor, stats) = executor_with_stats();
    let node = executor
        .create_node(unique("panic_timer").as_str())
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let (tick, done) = when_reaches(&calls, 10);
    let fires = Arc::clone(&calls);
    let _timer = make_timer(
        &node,
        Box::new(move || {
            let fire = fires.load(Ordering::SeqCst);
            tick();
            if fire % 2 == 0 {
                panic!("deliberate panic on fire {fire}");
            }
        }),
    );
    spin_until(&mut executor, done);
    assert!(calls.load(Ordering::SeqCst) >= 10);
    assert!(
        stats.callback_panics() >= 5,
        "{:?}",
        stats.panics_by_entity()
    );
}

#[test]
fn a_node_timer_keeps_firing_after_panics() {
    a_timer_keeps_firing(|node, callback| {
        Box::new(
            node.create_timer_repeating(Duration::from_millis(5), callback)
                .unwrap(),
        )
    });
}

#[test]
fn a_worker_timer_keeps_firing_after_panics() {
    a_timer_keeps_firing(|node, callback| {
        let worker = node.create_worker::<()>(());
        let timer = worker
            .create_timer_repeating(Duration::from_millis(5), move |_: &mut ()| callback())
            .unwrap();
        Box::new((worker, timer))
    });
}

/// The first request panics the service; the next ones are answered.
#[test]
fn a_service_answers_after_a_panic() {
    let (mut executor, stats) = executor_with_stats();
    let node = executor
        .create_node(unique("panic_service").as_str())
        .unwrap();
    let worker = node.create_worker::<usize>(0);
    let name = unique("panic_set_bool");
    let _service = worker
        .create_service::<SetBool, _>(
            name.as_str(),
            |served: &mut usize, request: SetBool_Request| {
                *served += 1;
                if *served == 1 {
                    panic!("deliberate panic on the first request");
                }
                SetBool_Response {
                    success: request.data,
                    message: format!("request {served}"),
                }
            },
        )
        .unwrap();
    let client = node.create_client::<SetBool>(name.as_str()).unwrap();
    let ready = client.notify_on_service_ready();
    spin_until(&mut executor, ready);
    let _unanswered: Promise<SetBool_Response> =
        client.call(SetBool_Request { data: false }).unwrap();
    for expected in 2..=4 {
        let response: Promise<SetBool_Response> =
            client.call(SetBool_Request { data: true }).unwrap();
        let (mut response, notice) = executor.commands().create_notice(response);
        spin_until(&mut executor, notice);
        let response = response.try_recv().unwrap().expect("answered");
        assert_eq!(response.message, format!("request {expected}"));
    }
    assert_eq!(stats.callback_panics(), 1);
}

/// A response callback that panics does not stop the client.
#[test]
fn a_client_keeps_working_after_its_response_callback_panicked() {
    let (mut executor, stats) = executor_with_stats();
    let node = executor
        .create_node(unique("panic_client").as_str())
        .unwrap();
    let (_service, client) = echo_service(&node, &unique("panic_client_srv"));
    let ready = client.notify_on_service_ready();
    spin_until(&mut executor, ready);
    let panicked = client
        .call_then(SetBool_Request { data: false }, |_: SetBool_Response| {
            panic!("deliberate panic in a response callback")
        })
        .unwrap();
    let _ = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(panicked)
            .timeout(PATIENCE),
    );
    let answered = Arc::new(AtomicUsize::new(0));
    let (tick, done) = when_reaches(&answered, 3);
    let tick = Arc::new(tick);
    for _ in 0..3 {
        let tick = Arc::clone(&tick);
        drop(
            client
                .call_then(
                    SetBool_Request { data: true },
                    move |r: SetBool_Response| {
                        assert!(r.success);
                        tick();
                    },
                )
                .unwrap(),
        );
    }
    spin_until(&mut executor, done);
    assert_eq!(answered.load(Ordering::SeqCst), 3);
    assert_eq!(stats.callback_panics(), 1);
}

/// An action server whose goal callback panics on one goal, and whose goal task panics
/// on another, still accepts and completes the next goal.
#[test]
fn an_action_server_completes_goals_after_its_callbacks_panicked() {
    use ros_env::test_msgs::action::{Fibonacci, Fibonacci_Goal, Fibonacci_Result};

    let (mut executor, stats) = executor_with_stats();
    let node = executor
        .create_node(unique("panic_action").as_str())
        .unwrap();
    let name = unique("panic_fibonacci");
    let _server = node
        .create_action_server::<Fibonacci, _>(
            name.as_str(),
            |requested: RequestedGoal<Fibonacci>| {
                let order = requested.goal().order;
                if order == 0 {
                    panic!("deliberate panic while a goal is requested");
                }
                let executing = requested.accept().execute();
                async move {
                    if order == 1 {
                        panic!("deliberate panic in a goal's task");
                    }
                    executing.succeeded_with(Fibonacci_Result {
                        sequence: (0..order).collect(),
                    })
                }
            },
        )
        .unwrap();
    let client = node
        .create_action_client::<Fibonacci>(name.as_str())
        .unwrap();
    let ready = client.notify_on_server_ready();
    spin_until(&mut executor, ready);

    // Neither is ever answered with a result: one panicked before it was accepted, the
    // other's task panicked.
    let _unanswered = client.request_goal(Fibonacci_Goal { order: 0 });
    let _abandoned = client.request_goal(Fibonacci_Goal { order: 1 });
    let requested = client.request_goal(Fibonacci_Goal { order: 5 });
    let (tx, rx) = oneshot::channel();
    drop(executor.commands().run(async move {
        let goal = requested.await.expect("the goal was accepted");
        let _ = tx.send(goal.result.await);
    }));
    let (mut finished, notice) = executor.commands().create_notice(rx);
    spin_until(&mut executor, notice);
    let (status, result) = finished.try_recv().unwrap().expect("a result");
    assert_eq!(status, GoalStatusCode::Succeeded);
    assert_eq!(result.sequence, vec![0, 1, 2, 3, 4]);
    assert_eq!(stats.callback_panics(), 2, "{:?}", stats.panics_by_entity());
}

/// An async task that panics, at its first poll or after an await, ends alone: the
/// spin goes on, later tasks and callbacks run, and both panics are counted.
#[test]
fn a_panicking_async_task_ends_alone_and_the_spin_goes_on() {
    let (mut executor, stats) = executor_with_stats();
    let node = executor.create_node(unique("panic_task").as_str()).unwrap();
    drop(node.commands().run(async {
        panic!("deliberate panic in an async task's first poll");
    }));
    let (woken_tx, woken) = oneshot::channel::<()>();
    drop(node.commands().run(async move {
        let _ = woken.await;
        panic!("deliberate panic in an async task after an await");
    }));
    let calls = Arc::new(AtomicUsize::new(0));
    let (tick, done) = when_reaches(&calls, 2);
    let tick = Arc::new(tick);
    let after = Arc::clone(&tick);
    drop(node.commands().run(async move {
        let _ = woken_tx.send(());
        after();
    }));
    let _timer = node
        .create_timer_oneshot(Duration::from_millis(20), move || tick())
        .unwrap();
    spin_until(&mut executor, done);
    let deadline = std::time::Instant::now() + PATIENCE;
    while stats.callback_panics() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            stats.panics_by_entity()
        );
        let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(10)));
    }
    assert_eq!(stats.callback_panics(), 2, "{:?}", stats.panics_by_entity());
}
