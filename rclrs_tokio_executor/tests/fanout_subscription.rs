//! Fan-out subscriptions, against the rclrs basic executor and the Tokio executor (in
//! both Worker modes): one rcl subscription, taken once, feeding callbacks on several
//! Workers.

mod support;

use rclrs::*;
use rclrs_tokio_executor::{
    CreateFanoutSubscription, CreateTokioExecutor, DedicatedWorkers, FanoutCallback,
    FanoutSubscription, TokioExecutorOptions,
};
use ros_env::std_msgs::msg::Int32;
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};
use support::{publish_to, run_to_end, spin_until, unique, PATIENCE};

type MakeExecutor = fn(&Context) -> Executor;

/// A fresh executor with a node, and a fan-out subscription of `Int32` on a topic of its
/// own (reliable, keep last `depth`): the executor, the node, the topic and the fan-out.
fn fixture(
    make: MakeExecutor,
    name: &str,
    depth: u32,
) -> (Executor, Node, String, FanoutSubscription<Int32>) {
    let context = Context::default_from_env().unwrap();
    let executor = make(&context);
    let node = executor.create_node(unique(name).as_str()).unwrap();
    let topic = unique(&format!("{name}_topic"));
    let fanout = node
        .create_fanout_subscription::<Int32>(topic.as_str().keep_last(depth).reliable())
        .unwrap();
    (executor, node, topic, fanout)
}

/// A reliable publisher on `topic`.
fn fixture_publisher(node: &Node, topic: &str) -> Publisher<Int32> {
    node.create_publisher::<Int32>(topic.keep_last(1000).reliable())
        .unwrap()
}

/// What one callback saw: the data, and the address of each shared message.
type Seen = Arc<Mutex<Vec<(i32, usize)>>>;

/// Log `m` with the address of its allocation (the same for every callback of a
/// message: nothing is copied per callback).
fn log_message(log: &Seen, m: &Arc<Int32>) {
    log.lock().unwrap().push((m.data, Arc::as_ptr(m) as usize));
}

/// `count` callbacks of `fanout`, on `workers` in turn, each doing `on_payload` with its
/// Worker's payload and logging every message: their logs and handles.
fn logging_callbacks<P: 'static + Send + Sync>(
    fanout: &FanoutSubscription<Int32>,
    workers: &[Worker<P>],
    count: usize,
    on_payload: fn(&mut P, &Int32),
) -> (Vec<Seen>, Vec<FanoutCallback<Int32>>) {
    (0..count)
        .map(|i| {
            let log: Seen = Arc::default();
            let logged = Arc::clone(&log);
            let handle = fanout.add_callback(
                &workers[i % workers.len()],
                move |payload: &mut P, m: Arc<Int32>| {
                    on_payload(payload, &m);
                    log_message(&logged, &m);
                },
            );
            (log, handle)
        })
        .unzip()
}

/// Every log holds `expected`, in order, and the same allocation for each message as the
/// first log: nothing was copied per callback.
fn assert_every_log_saw_the_same_messages(seen: &[Seen], expected: &[i32]) {
    let first: Vec<usize> = seen[0].lock().unwrap().iter().map(|s| s.1).collect();
    for (i, log) in seen.iter().enumerate() {
        let log = log.lock().unwrap();
        let data: Vec<i32> = log.iter().map(|s| s.0).collect();
        assert_eq!(data, expected, "callback {i} saw messages out of order");
        let addresses: Vec<usize> = log.iter().map(|s| s.1).collect();
        assert_eq!(addresses, first, "callback {i} got a different copy");
    }
}

fn every_callback_sees_every_message_once_taken_in_order(make: MakeExecutor) {
    const MESSAGES: i32 = 300;
    let (mut executor, node, topic, fanout) = fixture(make, "fanout", 1000);
    let workers: Vec<Worker<u64>> = (0..2).map(|_| node.create_worker(0_u64)).collect();
    let (seen, handles) = logging_callbacks(&fanout, &workers, 8, |count, _| *count += 1);
    // One more on the node, borrowing the message.
    let node_log: Arc<Mutex<Vec<i32>>> = Arc::default();
    let node_handle = {
        let node_log = Arc::clone(&node_log);
        fanout.add_node_callback(move |m: &Int32| node_log.lock().unwrap().push(m.data))
    };

    let publisher = fixture_publisher(&node, &topic);
    // One rcl subscription, however many callbacks.
    publish_to(&publisher, 1, MESSAGES);
    spin_until(&mut executor, || {
        node_log.lock().unwrap().len() == MESSAGES as usize
            && seen
                .iter()
                .all(|s| s.lock().unwrap().len() == MESSAGES as usize)
    });
    assert_eq!(publisher.get_subscription_count().unwrap(), 1);
    assert_eq!(fanout.taken(), MESSAGES as u64);

    let expected: Vec<i32> = (0..MESSAGES).collect();
    assert_every_log_saw_the_same_messages(&seen, &expected);
    assert_eq!(*node_log.lock().unwrap(), expected);
    for handle in handles.iter().chain([&node_handle]) {
        assert_eq!(handle.delivered(), MESSAGES as u64);
        assert_eq!((handle.dropped(), handle.panics()), (0, 0));
    }
}

fn callbacks_run_only_while_spinning_and_a_burst_keeps_the_depth(make: MakeExecutor) {
    const DEPTH: u32 = 10;
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_gate", DEPTH);
    let worker = node.create_worker(());
    let log: Arc<Mutex<Vec<i32>>> = Arc::default();
    let handle = {
        let log = Arc::clone(&log);
        fanout.add_callback(&worker, move |_: &mut (), m: &Int32| {
            log.lock().unwrap().push(m.data)
        })
    };
    let publisher = fixture_publisher(&node, &topic);
    publish_to(&publisher, 1, 50);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        log.lock().unwrap().is_empty(),
        "a callback ran without a spin"
    );
    // The middleware keeps the last DEPTH of the 50; all of them arrive, newest last.
    spin_until(&mut executor, || {
        log.lock().unwrap().last().copied() == Some(49)
    });
    let log = log.lock().unwrap().clone();
    assert!(log.len() <= DEPTH as usize, "more than the depth: {log:?}");
    assert!(log.windows(2).all(|w| w[0] < w[1]), "out of order: {log:?}");
    assert_eq!(handle.delivered(), log.len() as u64);
}

fn a_panicking_callback_is_contained_and_the_others_go_on(make: MakeExecutor) {
    const MESSAGES: i32 = 100;
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_panic", 1000);
    let worker = node.create_worker(());
    let panicking = fanout.add_callback(&worker, |_: &mut (), m: &Int32| {
        if m.data % 2 == 0 {
            panic!("fan-out test panic on {}", m.data)
        }
    });
    let after = Arc::new(AtomicUsize::new(0));
    let steady = {
        let after = Arc::clone(&after);
        fanout.add_callback(&worker, move |_: &mut (), _: &Int32| {
            after.fetch_add(1, Ordering::SeqCst);
        })
    };
    let publisher = fixture_publisher(&node, &topic);
    publish_to(&publisher, 1, MESSAGES);
    spin_until(&mut executor, || {
        after.load(Ordering::SeqCst) == MESSAGES as usize
    });
    assert_eq!(panicking.panics(), MESSAGES as u64 / 2);
    assert_eq!(panicking.delivered(), MESSAGES as u64 / 2);
    assert_eq!((steady.panics(), steady.delivered()), (0, MESSAGES as u64));
}

fn dropping_callbacks_removes_each_alone_and_the_last_drops_the_subscription(make: MakeExecutor) {
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_drop", 1000);
    let workers: Vec<Worker<()>> = (0..2).map(|_| node.create_worker(())).collect();

    // One callback drops its own handle from inside itself at its 10th message.
    let own: Arc<Mutex<Option<FanoutCallback<Int32>>>> = Arc::default();
    let own_count = Arc::new(AtomicUsize::new(0));
    *own.lock().unwrap() = Some({
        let (own, own_count) = (Arc::clone(&own), Arc::clone(&own_count));
        fanout.add_callback(&workers[0], move |_: &mut (), _: &Int32| {
            if own_count.fetch_add(1, Ordering::SeqCst) + 1 == 10 {
                drop(own.lock().unwrap().take());
            }
        })
    });
    // Two more, on each Worker, counting.
    let counts: Vec<Arc<AtomicUsize>> = (0..2).map(|_| Arc::default()).collect();
    let mut kept: Vec<Option<FanoutCallback<Int32>>> = counts
        .iter()
        .enumerate()
        .map(|(i, count)| {
            let count = Arc::clone(count);
            Some(
                fanout.add_callback(&workers[i], move |_: &mut (), _: &Int32| {
                    count.fetch_add(1, Ordering::SeqCst);
                }),
            )
        })
        .collect();
    drop(fanout);

    let publisher = fixture_publisher(&node, &topic);
    publish_to(&publisher, 1, 50);
    spin_until(&mut executor, || {
        counts.iter().all(|c| c.load(Ordering::SeqCst) == 50)
    });
    assert_eq!(
        own_count.load(Ordering::SeqCst),
        10,
        "called after its drop"
    );
    assert!(own.lock().unwrap().is_none());

    // Dropping the first Worker's callback leaves the second one served.
    kept[0] = None;
    for data in 50..80 {
        publisher.publish(Int32 { data }).unwrap();
    }
    spin_until(&mut executor, || counts[1].load(Ordering::SeqCst) == 80);
    assert_eq!(counts[0].load(Ordering::SeqCst), 50);
    assert_eq!(publisher.get_subscription_count().unwrap(), 1);

    // The last handle gone, the subscription is finalized: the publisher loses it.
    kept[1] = None;
    spin_until(&mut executor, || {
        publisher.get_subscription_count().unwrap() == 0
    });
}

fn callbacks_added_and_dropped_from_another_thread_under_a_stream(make: MakeExecutor) {
    const ROUNDS: usize = 300;
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_churn", 100);
    let workers: Vec<Worker<()>> = (0..2).map(|_| node.create_worker(())).collect();
    let steady_count = Arc::new(AtomicUsize::new(0));
    let _steady = {
        let steady_count = Arc::clone(&steady_count);
        fanout.add_callback(&workers[0], move |_: &mut (), _: &Int32| {
            steady_count.fetch_add(1, Ordering::SeqCst);
        })
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let publishing = support::publish_until(
        fixture_publisher(&node, &topic),
        &stop,
        Some(Duration::from_micros(50)),
    );
    // Callbacks come and go on another thread while the stream runs. Once a handle's
    // drop returned, its callback starts no more: the most a callback body can run after
    // that is once, for a call its Worker had already begun when the drop came.
    let late_calls: Arc<Mutex<Vec<usize>>> = Arc::default();
    let churn_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churning = {
        let (fanout, workers) = (fanout.clone(), workers.clone());
        let (late_calls, churn_done) = (Arc::clone(&late_calls), Arc::clone(&churn_done));
        std::thread::spawn(move || {
            for round in 0..ROUNDS {
                let gone = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let late = Arc::new(AtomicUsize::new(0));
                let check = {
                    let (gone, late) = (Arc::clone(&gone), Arc::clone(&late));
                    move || {
                        if gone.load(Ordering::SeqCst) {
                            late.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                };
                let handle = if round % 3 == 2 {
                    fanout.add_node_callback(move |_: Arc<Int32>| check())
                } else {
                    fanout.add_callback(&workers[round % 2], move |_: &mut (), _: &Int32| check())
                };
                std::thread::sleep(Duration::from_micros(200));
                drop(handle);
                gone.store(true, Ordering::SeqCst);
                // Long enough for a callback that was not removed to be called again.
                std::thread::sleep(Duration::from_micros(300));
                late_calls.lock().unwrap().push(late.load(Ordering::SeqCst));
            }
            churn_done.store(true, Ordering::SeqCst);
        })
    };
    spin_until(&mut executor, || churn_done.load(Ordering::SeqCst));
    churning.join().unwrap();
    // Still served: the steady callback keeps counting, and a new one hears the stream.
    let fresh_count = Arc::new(AtomicUsize::new(0));
    let _fresh = {
        let fresh_count = Arc::clone(&fresh_count);
        fanout.add_callback(&workers[1], move |_: &mut (), _: &Int32| {
            fresh_count.fetch_add(1, Ordering::SeqCst);
        })
    };
    let before = steady_count.load(Ordering::SeqCst);
    spin_until(&mut executor, || {
        fresh_count.load(Ordering::SeqCst) >= 10 && steady_count.load(Ordering::SeqCst) > before
    });
    stop.store(true, Ordering::SeqCst);
    publishing.join().unwrap();
    let late_calls = late_calls.lock().unwrap();
    assert_eq!(late_calls.len(), ROUNDS);
    assert!(
        late_calls.iter().all(|&late| late <= 1),
        "callbacks started after their drop returned: {late_calls:?}"
    );
}

/// Not in the basic executor's suite: there every Worker runs on the one spinning
/// thread, so a slow callback holds up everything by design.
fn a_slow_worker_drops_its_oldest_and_does_not_hold_back_the_others(make: MakeExecutor) {
    const DEPTH: u32 = 20;
    const MESSAGES: i32 = 200;
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_slow", DEPTH);
    let slow_worker = node.create_worker(());
    let fast_worker = node.create_worker(());
    let slow_seen: Arc<Mutex<Vec<i32>>> = Arc::default();
    let slow = {
        let slow_seen = Arc::clone(&slow_seen);
        fanout.add_callback(&slow_worker, move |_: &mut (), m: &Int32| {
            slow_seen.lock().unwrap().push(m.data);
            std::thread::sleep(Duration::from_millis(20));
        })
    };
    let fast_seen: Arc<Mutex<Vec<i32>>> = Arc::default();
    let (all_fast, fast_done) = futures::channel::oneshot::channel::<()>();
    let fast = {
        let fast_seen = Arc::clone(&fast_seen);
        let mut all_fast = Some(all_fast);
        fanout.add_callback(&fast_worker, move |_: &mut (), m: &Int32| {
            fast_seen.lock().unwrap().push(m.data);
            if m.data == MESSAGES - 1 {
                all_fast.take().map(|done| done.send(()));
            }
        })
    };
    let publisher = fixture_publisher(&node, &topic);
    support::wait_matched(&publisher, 1);

    let start = Instant::now();
    // Paced so that the hub keeps up and the only queue that overflows is the slow
    // Worker's own.
    let publishing = std::thread::spawn(move || {
        for data in 0..MESSAGES {
            publisher.publish(Int32 { data }).unwrap();
            std::thread::sleep(Duration::from_micros(500));
        }
        publisher
    });
    // One spin, so that the spin gate stays open while the stream runs (between spins
    // the subscription's own depth of 20 would overflow at this rate).
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(fast_done)
            .timeout(PATIENCE),
    );
    assert!(errors.is_empty(), "spin reported {errors:?}");
    let fast_done = start.elapsed();
    let _publisher = publishing.join().unwrap();
    // The slow Worker had time for a few of the 200 (20 ms each) while the fast one
    // got all of them.
    let slow_when_fast_done = slow_seen.lock().unwrap().len();
    assert!(
        slow_when_fast_done < MESSAGES as usize / 2,
        "the slow callback kept up ({slow_when_fast_done}) in {fast_done:?}"
    );
    assert_eq!(
        *fast_seen.lock().unwrap(),
        (0..MESSAGES).collect::<Vec<_>>()
    );
    assert_eq!(fast.dropped(), 0);
    // The slow one ends with the newest message, having lost (and counted) the oldest.
    spin_until(&mut executor, || {
        slow_seen.lock().unwrap().last().copied() == Some(MESSAGES - 1)
    });
    let slow_seen = slow_seen.lock().unwrap().clone();
    assert!(slow_seen.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(
        slow.delivered() + slow.dropped(),
        MESSAGES as u64,
        "delivered {} + dropped {} != sent",
        slow.delivered(),
        slow.dropped()
    );
    assert!(slow.dropped() > 0);
}

/// A fan-out created on a Worker takes there and calls that Worker's callbacks (and the
/// node-level ones) in the take; the other Worker's are queued as for a node's fan-out.
fn a_fanout_taken_on_a_worker_calls_its_callbacks_there_and_queues_the_others(make: MakeExecutor) {
    const MESSAGES: i32 = 300;
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("fanout_on_worker").as_str())
        .unwrap();
    let topic = unique("fanout_on_worker_topic");
    let workers: Vec<Worker<Vec<i32>>> = (0..2).map(|_| node.create_worker(Vec::new())).collect();
    let fanout = workers[0]
        .create_fanout_subscription::<Int32>(topic.as_str().keep_last(1000).reliable())
        .unwrap();
    let (mut seen, mut handles) =
        logging_callbacks(&fanout, &workers, 6, |mine, m| mine.push(m.data));
    let node_log: Seen = Arc::default();
    handles.push({
        let node_log = Arc::clone(&node_log);
        fanout.add_node_callback(move |m: Arc<Int32>| log_message(&node_log, &m))
    });
    seen.push(node_log);
    drop(fanout);

    let publisher = fixture_publisher(&node, &topic);
    publish_to(&publisher, 1, MESSAGES);
    spin_until(&mut executor, || {
        seen.iter()
            .all(|s| s.lock().unwrap().len() == MESSAGES as usize)
    });
    assert_eq!(publisher.get_subscription_count().unwrap(), 1);
    assert_every_log_saw_the_same_messages(&seen, &(0..MESSAGES).collect::<Vec<_>>());
    for handle in &handles {
        assert_eq!(handle.delivered(), MESSAGES as u64);
        assert_eq!((handle.dropped(), handle.panics()), (0, 0));
    }
    // Each Worker's payload saw its three callbacks per message, in the order they were
    // added: the callbacks ran on their own Worker, with its payload.
    for worker in &workers {
        let per_worker = worker.run(|mine: &mut Vec<i32>| std::mem::take(mine));
        let mine = run_to_end(&mut executor, per_worker).unwrap();
        let expected: Vec<i32> = (0..MESSAGES).flat_map(|d| [d, d, d]).collect();
        assert_eq!(mine, expected);
    }
}

/// On the taking Worker, a callback that drops its own handle, the last one of its
/// fan-out, from inside the take, drops the rcl subscription it is being called from.
fn the_last_callback_dropped_inside_the_take_drops_a_worker_fanout(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("fanout_on_worker_drop").as_str())
        .unwrap();
    let topic = unique("fanout_on_worker_drop_topic");
    let workers: Vec<Worker<()>> = (0..2).map(|_| node.create_worker(())).collect();
    let fanout = workers[0]
        .create_fanout_subscription::<Int32>(topic.as_str().keep_last(1000).reliable())
        .unwrap();
    let own: Arc<Mutex<Option<FanoutCallback<Int32>>>> = Arc::default();
    let own_count = Arc::new(AtomicUsize::new(0));
    *own.lock().unwrap() = Some({
        let (own, own_count) = (Arc::clone(&own), Arc::clone(&own_count));
        fanout.add_callback(&workers[0], move |_: &mut (), _: &Int32| {
            if own_count.fetch_add(1, Ordering::SeqCst) + 1 == 10 {
                drop(own.lock().unwrap().take());
            }
        })
    });
    let other_count = Arc::new(AtomicUsize::new(0));
    let other = {
        let other_count = Arc::clone(&other_count);
        fanout.add_callback(&workers[1], move |_: &mut (), _: &Int32| {
            other_count.fetch_add(1, Ordering::SeqCst);
        })
    };
    drop(fanout);

    let publisher = fixture_publisher(&node, &topic);
    publish_to(&publisher, 1, 50);
    spin_until(&mut executor, || other_count.load(Ordering::SeqCst) == 50);
    assert_eq!(
        own_count.load(Ordering::SeqCst),
        10,
        "called after its drop"
    );
    // The other Worker's callback keeps the subscription; dropping it drops that too.
    assert_eq!(publisher.get_subscription_count().unwrap(), 1);
    drop(other);
    spin_until(&mut executor, || {
        publisher.get_subscription_count().unwrap() == 0
    });

    // Now the callback on the taking Worker holds the last handle when it drops it.
    let fanout = workers[0]
        .create_fanout_subscription::<Int32>(topic.as_str().keep_last(1000).reliable())
        .unwrap();
    let last_count = Arc::new(AtomicUsize::new(0));
    *own.lock().unwrap() = Some({
        let (own, last_count) = (Arc::clone(&own), Arc::clone(&last_count));
        fanout.add_callback(&workers[0], move |_: &mut (), _: &Int32| {
            if last_count.fetch_add(1, Ordering::SeqCst) + 1 == 5 {
                drop(own.lock().unwrap().take());
            }
        })
    });
    drop(fanout);
    spin_until(&mut executor, || {
        publisher.get_subscription_count().unwrap() == 1
    });
    for data in 0..20 {
        publisher.publish(Int32 { data }).unwrap();
    }
    spin_until(&mut executor, || {
        own.lock().unwrap().is_none() && publisher.get_subscription_count().unwrap() == 0
    });
    assert_eq!(
        last_count.load(Ordering::SeqCst),
        5,
        "called after its drop"
    );
}

/// A topic rcl rejects is a typed error from either way of creating a fan-out, and
/// leaves nothing behind: a valid fan-out made next on the same Worker works.
fn an_invalid_topic_is_an_error_on_a_node_and_on_a_worker(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("fanout_invalid").as_str())
        .unwrap();
    let worker = node.create_worker(0_u32);
    for result in [
        node.create_fanout_subscription::<Int32>("not a valid topic!"),
        worker.create_fanout_subscription::<Int32>("not a valid topic!"),
    ] {
        match result {
            Err(RclrsError::RclError { .. }) => {}
            Err(other) => panic!("an unexpected error: {other:?}"),
            Ok(_) => panic!("an invalid topic was accepted"),
        }
    }
    let topic = unique("fanout_invalid_topic");
    let fanout = worker
        .create_fanout_subscription::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    let seen = fanout.add_callback(&worker, |count: &mut u32, _: &Int32| *count += 1);
    let publisher = fixture_publisher(&node, &topic);
    publish_to(&publisher, 1, 20);
    spin_until(&mut executor, || seen.delivered() == 20);
}

/// Not in the basic executor's suite, which finishes the wait it is in: a fan-out
/// callback that calls `halt_spinning` is the last to start in that spin, as any other
/// callback of the Tokio executor. With five messages waiting, each spin delivers one,
/// in order, and nothing is lost.
fn a_fanout_callback_that_halts_is_the_last_to_start(make: MakeExecutor) {
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_halt", 1000);
    let worker = node.create_worker(());
    let log: Arc<Mutex<Vec<i32>>> = Arc::default();
    let _handle = {
        let log = Arc::clone(&log);
        let commands = Arc::clone(executor.commands());
        fanout.add_callback(&worker, move |_: &mut (), m: &Int32| {
            log.lock().unwrap().push(m.data);
            commands.halt_spinning();
        })
    };
    let publisher = fixture_publisher(&node, &topic);
    publish_to(&publisher, 1, 5);
    std::thread::sleep(Duration::from_millis(200));
    for spin in 1..=5 {
        let errors = executor.spin(SpinOptions::default().timeout(PATIENCE));
        assert!(errors.is_empty(), "spin {spin}: {errors:?}");
        assert_eq!(*log.lock().unwrap(), (0..spin).collect::<Vec<_>>());
    }
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
    assert_eq!(*log.lock().unwrap(), (0..5).collect::<Vec<_>>());
}

macro_rules! suite {
    ($module:ident, $make:expr, [$($extra:ident),*]) => {
        mod $module {
            use super::*;
            const MAKE: MakeExecutor = $make;

            #[test]
            fn every_callback_sees_every_message_once_taken_in_order() {
                super::every_callback_sees_every_message_once_taken_in_order(MAKE)
            }
            #[test]
            fn callbacks_run_only_while_spinning_and_a_burst_keeps_the_depth() {
                super::callbacks_run_only_while_spinning_and_a_burst_keeps_the_depth(MAKE)
            }
            #[test]
            fn a_panicking_callback_is_contained_and_the_others_go_on() {
                super::a_panicking_callback_is_contained_and_the_others_go_on(MAKE)
            }
            #[test]
            fn callbacks_added_and_dropped_from_another_thread_under_a_stream() {
                super::callbacks_added_and_dropped_from_another_thread_under_a_stream(MAKE)
            }
            #[test]
            fn a_fanout_taken_on_a_worker_calls_its_callbacks_there_and_queues_the_others() {
                super::a_fanout_taken_on_a_worker_calls_its_callbacks_there_and_queues_the_others(MAKE)
            }
            #[test]
            fn the_last_callback_dropped_inside_the_take_drops_a_worker_fanout() {
                super::the_last_callback_dropped_inside_the_take_drops_a_worker_fanout(MAKE)
            }
            #[test]
            fn an_invalid_topic_is_an_error_on_a_node_and_on_a_worker() {
                super::an_invalid_topic_is_an_error_on_a_node_and_on_a_worker(MAKE)
            }
            #[test]
            fn dropping_callbacks_removes_each_alone_and_the_last_drops_the_subscription() {
                super::dropping_callbacks_removes_each_alone_and_the_last_drops_the_subscription(MAKE)
            }
            $(
                #[test]
                fn $extra() {
                    super::$extra(MAKE)
                }
            )*
        }
    };
}

suite!(basic, |context| context.create_basic_executor(), []);
suite!(
    tokio,
    |context| context.create_tokio_executor(),
    [
        a_slow_worker_drops_its_oldest_and_does_not_hold_back_the_others,
        a_fanout_callback_that_halts_is_the_last_to_start
    ]
);
// Worker tasks moving between two pool threads as their load says. Not the slow-Worker
// case: with `follow_load` the idle Workers gather while the test waits for matching,
// and the slow one's first 20 ms callback holds the fast one on their shared thread long
// enough to overflow its queue of 20 (the option's documented price; from then on the
// slow Worker keeps a thread of its own, see `follow_load.rs`).
suite!(
    tokio_follow_load,
    |context| support::follow_load_executor(context, "rclrs-tokio"),
    [a_fanout_callback_that_halts_is_the_last_to_start]
);
suite!(
    tokio_dedicated,
    |context| {
        context
            .create_tokio_executor_with(
                TokioExecutorOptions::new().dedicated_workers(DedicatedWorkers::all()),
            )
            .unwrap()
    },
    [
        a_slow_worker_drops_its_oldest_and_does_not_hold_back_the_others,
        a_fanout_callback_that_halts_is_the_last_to_start
    ]
);
