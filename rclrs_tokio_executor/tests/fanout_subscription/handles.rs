//! Handles: callbacks added and dropped (from anywhere, including inside the take) and
//! invalid topics, each leaving the rest of the fan-out working.

use super::*;

/// Where a callback keeps its own handle, to drop it from inside itself.
type OwnHandle = Arc<Mutex<Option<FanoutCallback<Int32>>>>;

/// The handle of a callback on `worker` that drops it from inside itself at its `nth`
/// message (the slot is empty from then on), and how often the callback was called.
fn self_dropping_callback(
    fanout: &FanoutSubscription<Int32>,
    worker: &Worker<()>,
    nth: usize,
) -> (OwnHandle, Arc<AtomicUsize>) {
    let own = OwnHandle::default();
    let count = Arc::new(AtomicUsize::new(0));
    let callback = {
        let (own, count) = (Arc::clone(&own), Arc::clone(&count));
        fanout.add_callback(worker, move |_: &mut (), _: &Int32| {
            if count.fetch_add(1, Ordering::SeqCst) + 1 == nth {
                drop(own.lock().unwrap().take());
            }
        })
    };
    *own.lock().unwrap() = Some(callback);
    (own, count)
}

pub(crate) fn dropping_callbacks_removes_each_alone_and_the_last_drops_the_subscription(
    make: MakeExecutor,
) {
    let (mut executor, node, topic, fanout) = fixture(make, "fanout_drop", 1000);
    let workers: Vec<Worker<()>> = (0..2).map(|_| node.create_worker(())).collect();

    // One callback drops its own handle from inside itself at its 10th message.
    let (own, own_count) = self_dropping_callback(&fanout, &workers[0], 10);
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

pub(crate) fn callbacks_added_and_dropped_from_another_thread_under_a_stream(make: MakeExecutor) {
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

/// On the taking Worker, a callback that drops its own handle, the last one of its
/// fan-out, from inside the take, drops the rcl subscription it is being called from.
pub(crate) fn the_last_callback_dropped_inside_the_take_drops_a_worker_fanout(make: MakeExecutor) {
    let (mut executor, node, topic) = executor_with_node(make, "fanout_on_worker_drop");
    let workers: Vec<Worker<()>> = (0..2).map(|_| node.create_worker(())).collect();
    let fanout = workers[0]
        .create_fanout_subscription::<Int32>(topic.as_str().keep_last(1000).reliable())
        .unwrap();
    let (_own, own_count) = self_dropping_callback(&fanout, &workers[0], 10);
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
    let (own, last_count) = self_dropping_callback(&fanout, &workers[0], 5);
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
pub(crate) fn an_invalid_topic_is_an_error_on_a_node_and_on_a_worker(make: MakeExecutor) {
    let (mut executor, node, _) = executor_with_node(make, "fanout_invalid");
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
