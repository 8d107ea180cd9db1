//! Delivery: every callback sees every message of one take, only while spinning, with
//! panics contained, slow Workers bounded, and halts from inside honoured.

use super::*;

pub(crate) fn every_callback_sees_every_message_once_taken_in_order(make: MakeExecutor) {
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

pub(crate) fn callbacks_run_only_while_spinning_and_a_burst_keeps_the_depth(make: MakeExecutor) {
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

pub(crate) fn a_panicking_callback_is_contained_and_the_others_go_on(make: MakeExecutor) {
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

/// Not in the basic executor's suite: there every Worker runs on the one spinning
/// thread, so a slow callback holds up everything by design.
pub(crate) fn a_slow_worker_drops_its_oldest_and_does_not_hold_back_the_others(make: MakeExecutor) {
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
pub(crate) fn a_fanout_taken_on_a_worker_calls_its_callbacks_there_and_queues_the_others(
    make: MakeExecutor,
) {
    const MESSAGES: i32 = 300;
    let (mut executor, node, topic) = executor_with_node(make, "fanout_on_worker");
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

/// Not in the basic executor's suite, which finishes the wait it is in: a fan-out
/// callback that calls `halt_spinning` is the last to start in that spin, as any other
/// callback of the Tokio executor. With five messages waiting, each spin delivers one,
/// in order, and nothing is lost.
pub(crate) fn a_fanout_callback_that_halts_is_the_last_to_start(make: MakeExecutor) {
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

/// A burst of fan-out callbacks that each call a service of their own Worker: every call
/// is answered. The service keeps rmw's default 10 requests, so the Worker must take
/// requests between the burst's deliveries, as it does between a subscription's
/// callbacks (`calls_from_a_burst_of_callbacks_are_all_answered` in the behaviour suite).
/// Tokio executor only: the basic executor runs every queued payload task, the fan-out's
/// drains among them, before it waits on rcl again, and answers about half of them.
pub(crate) fn calls_from_a_burst_of_fanout_callbacks_are_all_answered(make: MakeExecutor) {
    use ros_env::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
    const BURST: i32 = 20;
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_calls", 1000);
    let worker = node.create_worker(());
    let name = unique("fanout_calls_service");
    let _service = worker
        .create_service::<SetBool, _>(name.as_str(), |_: &mut (), request: SetBool_Request| {
            SetBool_Response {
                success: request.data,
                message: String::new(),
            }
        })
        .unwrap();
    // The answers come back to the node's Worker, which may run on another thread or
    // share one with `worker`: a queue deep enough for the burst keeps that side out of
    // the test.
    let client = node
        .create_client::<SetBool>(name.as_str().keep_last(100).reliable())
        .unwrap();
    spin_until(&mut executor, || client.service_is_ready().unwrap());
    let calls: Arc<Mutex<Vec<Promise<SetBool_Response>>>> = Arc::default();
    let _handle = {
        let calls = Arc::clone(&calls);
        fanout.add_callback(&worker, move |_: &mut (), m: &Int32| {
            let call = client.call(SetBool_Request {
                data: m.data % 2 == 0,
            });
            calls.lock().unwrap().push(call.unwrap());
        })
    };
    // The burst waits in rmw until the spin below.
    publish_to(&fixture_publisher(&node, &topic), 1, BURST);
    let answered = |calls: &mut Vec<Promise<SetBool_Response>>| {
        let mut answered = 0;
        for call in calls.iter_mut() {
            answered += usize::from(matches!(call.try_recv(), Ok(Some(_))));
        }
        answered
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut done = 0;
    while done < BURST as usize && Instant::now() < deadline {
        let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(20)));
        done += answered(&mut calls.lock().unwrap());
    }
    assert_eq!(done, BURST as usize, "calls answered within 5 s");
}

/// A steady stream handed from the fan-out's hub to Workers on the other pool thread:
/// each hand-over from a parking thread puts a parked thread under SCHED_BATCH until it
/// wakes (`runtime/threads/hand_over.rs`). Every message still reaches both callbacks, and once
/// the stream ends every pool thread is back under SCHED_OTHER. Tokio executor only.
pub(crate) fn handing_over_leaves_every_pool_thread_under_its_policy(make: MakeExecutor) {
    const MESSAGES: i32 = 400;
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_hand_over", 1000);
    let workers: Vec<Worker<u64>> = (0..2).map(|_| node.create_worker(0_u64)).collect();
    let (seen, _handles) = logging_callbacks(&fanout, &workers, 2, |count, _| *count += 1);
    let publisher = fixture_publisher(&node, &topic);
    support::wait_matched(&publisher, 1);
    let streaming = std::thread::spawn(move || {
        for data in 0..MESSAGES {
            publisher.publish(Int32 { data }).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        publisher
    });
    spin_until(&mut executor, || {
        seen.iter()
            .all(|s| s.lock().unwrap().len() == MESSAGES as usize)
    });
    let _publisher = streaming.join().unwrap();
    assert_every_log_saw_the_same_messages(&seen, &(0..MESSAGES).collect::<Vec<_>>());
    let pool: Vec<(String, u32)> = support::thread_policies()
        .into_iter()
        .filter(|(name, _)| {
            name.strip_prefix("rclrs-tokio-")
                .is_some_and(|index| index.parse::<usize>().is_ok())
        })
        .collect();
    assert!(!pool.is_empty(), "no pool thread found");
    assert!(
        pool.iter().all(|(_, policy)| *policy == 0),
        "pool threads left under another policy than SCHED_OTHER: {pool:?}"
    );
}
