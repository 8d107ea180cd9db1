//! An executor's per-Worker stats move as the Worker's work does: the backlog and the
//! age of its oldest item grow while the executor does not spin and drain when it
//! does; callbacks, busy time and panics are counted on the Worker that ran them; and
//! the stats can be published on a ROS topic.

mod support;

use rclrs::*;
use rclrs_tokio_executor::{
    CreateTokioExecutor, ExecutorStats, Stage, TokioExecutorOptions, WorkerStats,
};
use ros_env::rclrs_tokio_msgs::msg::ExecutorStats as ExecutorStatsMessage;
use ros_env::std_msgs::msg::Int32;
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};
use std::time::{Duration, Instant};
use support::{unique, wait_matched};

const PATIENCE: Duration = Duration::from_secs(20);

fn executor_with_stats() -> (Executor, ExecutorStats) {
    support::isolated_context()
        .create_tokio_executor_with_stats(TokioExecutorOptions::new())
        .unwrap()
}

/// The Worker serving `topic`.
fn worker_of(stats: &ExecutorStats, topic: &str) -> WorkerStats {
    let topic = format!("/{topic}");
    stats
        .workers()
        .into_iter()
        .find(|w| w.entities.contains(&topic))
        .unwrap_or_else(|| panic!("no Worker serves {topic}: {:?}", stats.workers()))
}

fn spin_until(executor: &mut Executor, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting");
        executor.spin(SpinOptions::default().timeout(Duration::from_millis(10)));
    }
}

#[test]
fn a_workers_backlog_grows_while_not_spinning_and_drains_after() {
    let (mut executor, stats) = executor_with_stats();
    let node = executor
        .create_node(unique("introspected").as_str())
        .unwrap();
    let worker = node.create_worker::<usize>(0);
    let topic = unique("introspected_topic");
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&heard);
    let _subscription = worker
        .create_subscription(
            topic.as_str().keep_last(100).reliable(),
            move |seen: &mut usize, _: Int32| {
                *seen += 1;
                counter.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_micros(200));
            },
        )
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    wait_matched(&publisher, 1);
    // What creating the entities queued (the Worker's guard condition) runs first.
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
    let before = worker_of(&stats, &topic);
    assert_eq!((before.pending, before.callbacks), (0, 0), "{before:?}");
    assert_eq!(before.oldest_pending, None);

    for data in 0..50 {
        publisher.publish(Int32 { data }).unwrap();
    }
    std::thread::sleep(Duration::from_millis(150));
    let waiting = worker_of(&stats, &topic);
    // Fifty messages, one coalesced mailbox item, waiting since they arrived.
    assert_eq!(waiting.pending, 1, "{waiting:?}");
    assert!(
        waiting.oldest_pending.unwrap() >= Duration::from_millis(100),
        "{waiting:?}"
    );
    assert_eq!(waiting.callbacks, 0);

    spin_until(&mut executor, || heard.load(Ordering::SeqCst) == 50);
    // A slice that ended right after the last callback left a sweep queued (the drain
    // had not yet found rmw's queue empty): one more spin runs it.
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(30)));
    let drained = worker_of(&stats, &topic);
    assert_eq!(drained.pending, 0, "{drained:?}");
    assert_eq!(drained.oldest_pending, None);
    assert_eq!(drained.callbacks, 50);
    assert!(drained.busy >= Duration::from_millis(10), "{drained:?}");
    assert_eq!(drained.panics, 0);
}

#[test]
fn panics_are_counted_on_the_worker_that_ran_them() {
    let (mut executor, stats) = executor_with_stats();
    let node = executor.create_node(unique("panicky").as_str()).unwrap();
    let calm = node.create_worker::<()>(());
    let panicky = node.create_worker::<()>(());
    let calm_topic = unique("calm_topic");
    let panicky_topic = unique("panicky_topic");
    let heard = Arc::new(AtomicUsize::new(0));
    let (calm_heard, panicky_heard) = (Arc::clone(&heard), Arc::clone(&heard));
    let _calm = calm
        .create_subscription(
            calm_topic.as_str().reliable(),
            move |_: &mut (), _: Int32| {
                calm_heard.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
    let _panicky = panicky
        .create_subscription(
            panicky_topic.as_str().reliable(),
            move |_: &mut (), m: Int32| {
                panicky_heard.fetch_add(1, Ordering::SeqCst);
                panic!("deliberate panic on message {}", m.data);
            },
        )
        .unwrap();
    let calm_publisher = node
        .create_publisher::<Int32>(calm_topic.as_str().reliable())
        .unwrap();
    let panicky_publisher = node
        .create_publisher::<Int32>(panicky_topic.as_str().reliable())
        .unwrap();
    wait_matched(&calm_publisher, 1);
    wait_matched(&panicky_publisher, 1);
    for data in 0..3 {
        calm_publisher.publish(Int32 { data }).unwrap();
        panicky_publisher.publish(Int32 { data }).unwrap();
    }
    spin_until(&mut executor, || heard.load(Ordering::SeqCst) == 6);
    assert_eq!(worker_of(&stats, &panicky_topic).panics, 3);
    assert_eq!(worker_of(&stats, &calm_topic).panics, 0);
    assert_eq!(stats.callback_panics(), 3);
}

#[test]
fn stats_are_published_on_a_topic() {
    let (mut executor, stats) = executor_with_stats();
    let node = executor.create_node(unique("observed").as_str()).unwrap();
    let topic = unique("observed_topic");
    let _subscription = node
        .create_subscription(topic.as_str(), |_: Int32| {})
        .unwrap();
    let stats_topic = unique("executor_stats");
    let _publication = stats
        .publish_on(&node, &stats_topic, Duration::from_millis(20))
        .unwrap();
    let received: Arc<std::sync::Mutex<Option<ExecutorStatsMessage>>> = Arc::default();
    let slot = Arc::clone(&received);
    let _echo = node
        .create_subscription(stats_topic.as_str(), move |m: ExecutorStatsMessage| {
            *slot.lock().unwrap() = Some(m);
        })
        .unwrap();
    spin_until(&mut executor, || received.lock().unwrap().is_some());
    let message = received.lock().unwrap().take().unwrap();
    let listed = format!("/{topic}");
    assert!(
        message.workers.iter().any(|w| w.entities.contains(&listed)),
        "{:?}",
        message.workers
    );
    assert!(message.stamp.sec > 0);
}

#[test]
fn stage_tracing_records_each_stage_only_while_on() {
    let (mut executor, stats) = executor_with_stats();
    let node = executor.create_node(unique("traced").as_str()).unwrap();
    let worker = node.create_worker::<()>(());
    let topic = unique("traced_topic");
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&heard);
    let _subscription = worker
        .create_subscription(
            topic.as_str().keep_last(1000).reliable(),
            move |_: &mut (), _: Int32| {
                counter.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(1000).reliable())
        .unwrap();
    wait_matched(&publisher, 1);
    let publish_and_hear = |executor: &mut Executor, from: usize| {
        for data in 0..100 {
            publisher.publish(Int32 { data }).unwrap();
            executor.spin(SpinOptions::default().timeout(Duration::from_micros(200)));
        }
        spin_until(executor, || heard.load(Ordering::SeqCst) == from + 100);
    };

    publish_and_hear(&mut executor, 0);
    assert!(!stats.stage_tracing());
    assert!(worker_of(&stats, &topic).stages.is_none());

    stats.set_stage_tracing(true);
    publish_and_hear(&mut executor, 100);
    let stages = worker_of(&stats, &topic).stages.expect("stages recorded");
    assert_eq!(
        stages.summary(Stage::Take).count,
        100,
        "one take per message"
    );
    assert_eq!(stages.summary(Stage::Callback).count, 100);
    assert!(stages.summary(Stage::NotifyToWake).count >= 1);
    assert_eq!(
        stages.summary(Stage::NotifyToWake).count,
        stages.summary(Stage::NotifyToCallbackEnd).count
    );
    let end_to_end = stages.summary(Stage::NotifyToCallbackEnd);
    assert!(end_to_end.p50 > Duration::ZERO && end_to_end.p50 < Duration::from_secs(1));
    // Each item's end-to-end time contains its notify-to-wake time, so every quantile
    // of the one is at least that of the other.
    let to_wake = stages.summary(Stage::NotifyToWake);
    for (whole, part) in [
        (end_to_end.p50, to_wake.p50),
        (end_to_end.p99, to_wake.p99),
        (end_to_end.max, to_wake.max),
    ] {
        assert!(
            whole >= part,
            "end to end {whole:?} below notify to wake {part:?}"
        );
    }

    // A backlog, drained many messages to an item: still one take and one callback
    // sample per message, and the item-level stages once per item.
    for data in 0..300 {
        publisher.publish(Int32 { data }).unwrap();
    }
    spin_until(&mut executor, || heard.load(Ordering::SeqCst) == 500);
    let batched = worker_of(&stats, &topic).stages.unwrap();
    assert_eq!(
        batched.summary(Stage::Take).count,
        400,
        "one take per message of a backlog"
    );
    assert_eq!(batched.summary(Stage::Callback).count, 400);
    assert_eq!(
        batched.summary(Stage::NotifyToWake).count,
        batched.summary(Stage::NotifyToCallbackEnd).count
    );

    stats.set_stage_tracing(false);
    publish_and_hear(&mut executor, 500);
    let after = worker_of(&stats, &topic).stages.unwrap();
    assert_eq!(
        after.summary(Stage::Take).count,
        400,
        "nothing recorded while off"
    );
}

/// A Worker that finds a backlog sleeps briefly instead of parking (counted as a
/// linger), so an outrun stream is taken in batches without a wake-up per message; one
/// that keeps up parks after every message and never naps. Either way every message
/// arrives, in order.
#[test]
fn a_worker_naps_after_a_backlog_and_not_while_it_keeps_up() {
    let (mut executor, stats) = executor_with_stats();
    let node = executor.create_node(unique("napping").as_str()).unwrap();
    let worker = node.create_worker::<i32>(-1);
    let topic = unique("napping_topic");
    let heard = Arc::new(AtomicUsize::new(0));
    let out_of_order = Arc::new(AtomicUsize::new(0));
    let (counter, disorder) = (Arc::clone(&heard), Arc::clone(&out_of_order));
    let qos = || topic.as_str().keep_last(5000).reliable();
    let _subscription = worker
        .create_subscription(qos(), move |last: &mut i32, m: Int32| {
            if m.data != *last + 1 {
                disorder.fetch_add(1, Ordering::SeqCst);
            }
            *last = m.data;
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let publisher = node.create_publisher::<Int32>(qos()).unwrap();
    wait_matched(&publisher, 1);
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
    let lingers = || worker_of(&stats, &topic).lingers;

    // Keeping up: one message every 5 ms, each taken alone.
    let steady = 30;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for data in 0..steady {
                publisher.publish(Int32 { data }).unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        spin_until(&mut executor, || {
            heard.load(Ordering::SeqCst) == steady as usize
        });
    });
    let kept_up = lingers();
    // A wake-up delayed past the next message (a loaded machine) may find two.
    assert!(
        kept_up <= 3,
        "napped {kept_up} times at one message per 5 ms"
    );

    // Outrun: a burst published as fast as it goes while the executor spins.
    let burst = 3000;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for data in steady..steady + burst {
                publisher.publish(Int32 { data }).unwrap();
            }
        });
        spin_until(&mut executor, || {
            heard.load(Ordering::SeqCst) == (steady + burst) as usize
        });
    });
    assert!(
        lingers() > kept_up,
        "never napped under a burst: {:?}",
        worker_of(&stats, &topic)
    );
    assert_eq!(out_of_order.load(Ordering::SeqCst), 0);
}
