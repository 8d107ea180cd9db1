//! Workers that share a pool thread (more Workers than threads, or gathered by
//! `follow_load`) take turns: a Worker with a backlog of slow callbacks yields the
//! thread after each turn's time (`runtime/worker/turn.rs`), instead of running its whole
//! backlog while the others wait.

mod support;

use rclrs::*;
use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
use ros_env::std_msgs::msg::Int32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{busy_for, spin_until, unique, wait_matched};

#[test]
fn a_worker_with_a_slow_backlog_lets_the_others_on_its_thread_take_turns() {
    const BACKLOG: i32 = 50;
    let context = support::isolated_context();
    let mut executor = context
        .create_tokio_executor_with(TokioExecutorOptions::new().worker_threads(1))
        .unwrap();
    let node = executor.create_node(unique("turns").as_str()).unwrap();
    let (slow_topic, quick_topic) = (unique("slow_backlog"), unique("quick"));

    // The slow Worker: 3 ms of CPU per message, 50 messages queued before the spin.
    let slow = node.create_worker(());
    let slow_ran = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&slow_ran);
    let _slow_subscription = slow
        .create_subscription(
            slow_topic.as_str().keep_all(),
            move |_: &mut (), _: Int32| {
                busy_for(Duration::from_millis(3));
                count.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
    // The quick Worker, on the same (only) thread: one message, queued after the rest.
    let quick = node.create_worker(());
    let slow_ran_before_quick: Arc<Mutex<Option<usize>>> = Arc::default();
    let (seen, count) = (Arc::clone(&slow_ran_before_quick), Arc::clone(&slow_ran));
    let _quick_subscription = quick
        .create_subscription(
            quick_topic.as_str().keep_all(),
            move |_: &mut (), _: Int32| {
                *seen.lock().unwrap() = Some(count.load(Ordering::SeqCst));
            },
        )
        .unwrap();
    let slow_publisher = node
        .create_publisher::<Int32>(slow_topic.as_str().keep_all())
        .unwrap();
    let quick_publisher = node
        .create_publisher::<Int32>(quick_topic.as_str().keep_all())
        .unwrap();
    wait_matched(&slow_publisher, 1);
    wait_matched(&quick_publisher, 1);
    for data in 0..BACKLOG {
        slow_publisher.publish(Int32 { data }).unwrap();
    }
    quick_publisher.publish(Int32 { data: 0 }).unwrap();

    spin_until(&mut executor, || {
        slow_ran.load(Ordering::SeqCst) == BACKLOG as usize
    });
    let before = slow_ran_before_quick
        .lock()
        .unwrap()
        .expect("the quick Worker ran");
    // With turns bounded by count only, the slow Worker ran its whole backlog (150 ms)
    // first; bounded in time, the quick one gets the thread after a turn or two.
    assert!(
        before <= 5,
        "the quick Worker waited for {before} of the slow Worker's {BACKLOG} callbacks"
    );
}

#[test]
fn workers_sharing_a_thread_under_slow_streams_keep_order_and_end_spins_on_time() {
    let context = support::isolated_context();
    for round in 0..4 {
        let mut executor = context
            .create_tokio_executor_with(TokioExecutorOptions::new().worker_threads(1))
            .unwrap();
        let node = executor
            .create_node(unique("slow_streams").as_str())
            .unwrap();
        let topic = unique("slow_stream");
        // Four Workers on the one thread, each 0.5 ms of CPU per message, all hearing
        // one stream faster than the thread can serve them: every turn ends on time.
        let seen: Vec<Arc<Mutex<Vec<i32>>>> = (0..4).map(|_| Arc::default()).collect();
        let workers: Vec<_> = seen
            .iter()
            .map(|seen| {
                let worker = node.create_worker(());
                let seen = Arc::clone(seen);
                let subscription = worker
                    .create_subscription(topic.as_str().keep_all(), move |_: &mut (), m: Int32| {
                        busy_for(Duration::from_micros(500));
                        seen.lock().unwrap().push(m.data);
                    })
                    .unwrap();
                (worker, subscription)
            })
            .collect();
        let publisher = node
            .create_publisher::<Int32>(topic.as_str().keep_all())
            .unwrap();
        wait_matched(&publisher, 4);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let publishing = support::publish_until(publisher, &stop, Some(Duration::from_micros(200)));
        for _ in 0..3 {
            let started = std::time::Instant::now();
            support::spin_for(&mut executor, Duration::from_millis(100));
            // A spin ends after its timeout and the callback in flight (0.5 ms).
            assert!(
                started.elapsed() < Duration::from_millis(300),
                "round {round}: a 100 ms spin took {:?}",
                started.elapsed()
            );
        }
        drop(executor);
        stop.store(true, Ordering::Relaxed);
        publishing.join().unwrap();
        drop(workers);
        for seen in &seen {
            let seen = seen.lock().unwrap();
            assert!(!seen.is_empty(), "round {round}: a Worker never had a turn");
            assert!(
                seen.windows(2).all(|w| w[1] == w[0] + 1),
                "round {round}: out of order or missing"
            );
        }
    }
}
