//! Placement that follows load (`TokioExecutorOptions::follow_load`): light Workers
//! gather on one pool thread, busy ones spread over the threads, and a Worker's
//! callbacks stay in order across moves. The behaviour suite
//! (`tests/executor_behaviour/`, `tokio_follow_load::*`) checks the rest of the contract.

mod support;

use rclrs::*;
use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
use ros_env::std_msgs::msg::Int32;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{
    busy_for, follow_load_executor, publish_until, spin_for, spin_until, unique, wait_matched,
};

/// What one Worker saw: the data of each message in arrival order, and the thread each
/// callback ran on.
#[derive(Default)]
struct Seen {
    data: Vec<i32>,
    threads: Vec<String>,
}

/// One Worker of the test, its subscription, and what it saw.
type Watched = (Worker<()>, WorkerSubscription<Int32, ()>, Arc<Mutex<Seen>>);

/// Two Workers, each with a subscription to `topic` that records what it saw and burns
/// `work` of CPU per message while `busy` is set.
fn two_workers(node: &Node, topic: &str, busy: &Arc<AtomicBool>, work: Duration) -> Vec<Watched> {
    (0..2)
        .map(|_| {
            let worker = node.create_worker(());
            let seen = Arc::new(Mutex::new(Seen::default()));
            let record = Arc::clone(&seen);
            let busy = Arc::clone(busy);
            let subscription = worker
                .create_subscription(topic.keep_all(), move |_: &mut (), m: Int32| {
                    if busy.load(Ordering::Relaxed) {
                        busy_for(work);
                    }
                    let mut seen = record.lock().unwrap();
                    seen.data.push(m.data);
                    let name = std::thread::current().name().unwrap_or("").to_string();
                    seen.threads.push(name);
                })
                .unwrap();
            (worker, subscription, seen)
        })
        .collect()
}

/// The threads the two Workers' last `n` callbacks ran on.
fn recent_threads(workers: &[Watched], n: usize) -> Vec<HashSet<String>> {
    workers
        .iter()
        .map(|(_, _, seen)| {
            let seen = seen.lock().unwrap();
            seen.threads.iter().rev().take(n).cloned().collect()
        })
        .collect()
}

/// Publish 0, 1, 2, ... on `topic` about 2,000 times a second, once both Workers'
/// subscriptions matched, until the flag returned is set.
fn stream(node: &Node, topic: &str) -> (Arc<AtomicBool>, std::thread::JoinHandle<usize>) {
    let publisher = node.create_publisher::<Int32>(topic.keep_all()).unwrap();
    wait_matched(&publisher, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = publish_until(publisher, &stop, Some(Duration::from_micros(500)));
    (stop, publishing)
}

#[test]
fn light_workers_gather_on_one_thread_and_busy_ones_spread_again() {
    let context = support::isolated_context();
    let name = unique("fl");
    let mut executor = follow_load_executor(&context, &name);
    let node = executor
        .create_node(unique("follow_load").as_str())
        .unwrap();
    let topic = unique("follow_load_topic");
    let busy = Arc::new(AtomicBool::new(false));
    let workers = two_workers(&node, &topic, &busy, Duration::from_micros(300));
    let (stop, publishing) = stream(&node, &topic);

    // Placed fewest-Workers-first, the two start on different threads; light, they end
    // up on one.
    spin_until(&mut executor, || {
        let threads = recent_threads(&workers, 20);
        threads.iter().all(|t| t.len() == 1) && threads[0] == threads[1]
    });

    // Busy (300 µs per message each, at up to 2 kHz: more than half a core each), one
    // thread cannot keep up with both; one of them moves away.
    busy.store(true, Ordering::Relaxed);
    spin_until(&mut executor, || {
        let threads = recent_threads(&workers, 20);
        threads.iter().all(|t| t.len() == 1) && threads[0] != threads[1]
    });

    stop.store(true, Ordering::Relaxed);
    publishing.join().unwrap();
    spin_for(&mut executor, Duration::from_millis(100));

    // Across the moves each Worker saw the stream in order, none twice, none skipped.
    for (_, _, seen) in &workers {
        let seen = seen.lock().unwrap();
        assert!(
            seen.data.windows(2).all(|w| w[1] == w[0] + 1),
            "out of order or missing: {:?}",
            seen.data.windows(2).find(|w| w[1] != w[0] + 1)
        );
        let on_pool = seen.threads.iter().all(|t| t.starts_with(&name));
        assert!(on_pool, "a callback ran off the pool");
    }
}

#[test]
fn without_the_option_workers_stay_where_they_were_placed() {
    let context = support::isolated_context();
    let name = unique("nf");
    let mut executor = context
        .create_tokio_executor_with(
            TokioExecutorOptions::new()
                .worker_threads(2)
                .thread_name(&name),
        )
        .unwrap();
    let node = executor.create_node(unique("stays").as_str()).unwrap();
    let topic = unique("stays_topic");
    let busy = Arc::new(AtomicBool::new(false));
    let workers = two_workers(&node, &topic, &busy, Duration::ZERO);
    let (stop, publishing) = stream(&node, &topic);
    spin_for(&mut executor, Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    publishing.join().unwrap();
    let threads = recent_threads(&workers, usize::MAX);
    assert!(
        threads.iter().all(|t| t.len() == 1),
        "a Worker moved: {threads:?}"
    );
    assert_ne!(
        threads[0], threads[1],
        "both Workers were placed on one thread"
    );
}

#[test]
fn executors_dropped_while_their_workers_move_end_cleanly() {
    let context = support::isolated_context();
    let mut rounds_with_moves = 0;
    for round in 0..8 {
        let name = unique(&format!("fd{round}"));
        let mut executor = follow_load_executor(&context, &name);
        let node = executor.create_node(unique("moving").as_str()).unwrap();
        let topic = unique("moving_topic");
        // Busy and light in turns, 30 ms each: the Workers spread and gather again and
        // again, so the drop below meets them at any point of a move.
        let busy = Arc::new(AtomicBool::new(false));
        let workers = two_workers(&node, &topic, &busy, Duration::from_micros(300));
        let (stop, publishing) = stream(&node, &topic);
        let toggling = {
            let (busy, stop) = (Arc::clone(&busy), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    busy.fetch_xor(true, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(30));
                }
            })
        };
        spin_for(&mut executor, Duration::from_millis(150 + 40 * round));
        let seen: Vec<_> = workers.iter().map(|(_, _, s)| Arc::clone(s)).collect();
        // The executor goes first, with the stream still flowing, then the rest.
        let dropped = Instant::now();
        drop(executor);
        drop(workers);
        drop(node);
        assert!(
            dropped.elapsed() < Duration::from_secs(5),
            "the drop took {:?}",
            dropped.elapsed()
        );
        stop.store(true, Ordering::Relaxed);
        publishing.join().unwrap();
        toggling.join().unwrap();
        let moved = seen.iter().any(|s| {
            let threads: HashSet<_> = s.lock().unwrap().threads.iter().cloned().collect();
            threads.len() > 1
        });
        rounds_with_moves += usize::from(moved);
        for seen in &seen {
            let seen = seen.lock().unwrap();
            assert!(
                !seen.data.is_empty(),
                "round {round}: a Worker heard nothing"
            );
            assert!(
                seen.data.windows(2).all(|w| w[1] == w[0] + 1),
                "round {round}: out of order or missing"
            );
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while support::thread_names()
            .iter()
            .any(|t| t.starts_with(&name[..15.min(name.len())]))
        {
            assert!(
                Instant::now() < deadline,
                "round {round}: pool threads outlived the executor"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    // Otherwise the drops above never met a Worker that had moved.
    assert!(
        rounds_with_moves >= 4,
        "Workers moved in {rounds_with_moves} of 8 rounds"
    );
}

#[test]
fn a_worker_that_blocked_once_keeps_a_thread_of_its_own() {
    let context = support::isolated_context();
    let mut executor = follow_load_executor(&context, &unique("fb"));
    let node = executor.create_node(unique("blocking").as_str()).unwrap();
    // Worker `steady` hears a 1 kHz stream; Worker `blocking` sleeps 100 ms for each of
    // its rare messages. Both are light, so they gather, until the first sleep.
    let (steady_topic, blocking_topic) = (unique("steady"), unique("blocking"));
    let heard: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let steady = node.create_worker(());
    let record = Arc::clone(&heard);
    let _steady_subscription = steady
        .create_subscription(
            steady_topic.as_str().keep_all(),
            move |_: &mut (), _: Int32| {
                record.lock().unwrap().push(Instant::now());
            },
        )
        .unwrap();
    let blocking = node.create_worker(());
    let slept: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let record = Arc::clone(&slept);
    let _blocking_subscription = blocking
        .create_subscription(
            blocking_topic.as_str().keep_all(),
            move |_: &mut (), _: Int32| {
                let start = Instant::now();
                std::thread::sleep(Duration::from_millis(100));
                record.lock().unwrap().push((start, Instant::now()));
            },
        )
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(steady_topic.as_str().keep_all())
        .unwrap();
    let rare = node
        .create_publisher::<Int32>(blocking_topic.as_str().keep_all())
        .unwrap();
    wait_matched(&publisher, 1);
    wait_matched(&rare, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = publish_until(publisher, &stop, Some(Duration::from_millis(1)));
    let sleeps = 8;
    let interrupting = std::thread::spawn(move || {
        for data in 0..sleeps {
            // Long enough apart for the two to gather again between sleeps.
            std::thread::sleep(Duration::from_millis(500));
            rare.publish(Int32 { data }).unwrap();
        }
    });
    spin_for(
        &mut executor,
        Duration::from_millis(500 * sleeps as u64 + 400),
    );
    stop.store(true, Ordering::Relaxed);
    publishing.join().unwrap();
    interrupting.join().unwrap();
    let (heard, slept) = (heard.lock().unwrap(), slept.lock().unwrap());
    assert!(heard.len() > 1000, "heard only {}", heard.len());
    assert!(
        slept.len() >= sleeps as usize / 2,
        "the blocking Worker slept only {} times of {sleeps}",
        slept.len()
    );
    // A sleep held the steady Worker up when no steady callback ran during it: sharing a
    // thread, the steady Worker cannot run while the blocking one sleeps. (A gap alone
    // would also count a stall of the host: a loaded VM holds any thread up for up to
    // 100 ms now and then, and this test's stream can show one.)
    let held: Vec<usize> = slept
        .iter()
        .enumerate()
        .filter(|(_, (start, end))| !heard.iter().any(|t| t > start && t < end))
        .map(|(sleep, _)| sleep)
        .collect();
    // At most the first sleep holds the steady Worker (if they had gathered by then).
    assert!(
        held.len() <= 1,
        "the steady Worker was held up by sleeps {held:?} of {sleeps}"
    );
}
