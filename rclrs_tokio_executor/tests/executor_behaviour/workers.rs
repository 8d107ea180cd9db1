//! Workers: their payload, their order, their work sent before a drop, activity
//! listeners, async tasks and parallel Workers.

use super::*;

pub(crate) fn worker_payload_is_mutated_by_several_callbacks(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("worker").as_str()).unwrap();
    let worker = node.create_worker::<Vec<String>>(Vec::new());
    let (topic_a, topic_b) = (unique("worker_a"), unique("worker_b"));
    let (countdown, done) = Countdown::new(20);
    let _a = {
        let countdown = Arc::clone(&countdown);
        worker
            .create_subscription(
                topic_a.as_str().keep_last(100).reliable(),
                move |log: &mut Vec<String>, m: Int32| {
                    log.push(format!("a{}", m.data));
                    countdown.tick();
                },
            )
            .unwrap()
    };
    let _b = worker
        .create_subscription(
            topic_b.as_str().keep_last(100).reliable(),
            move |log: &mut Vec<String>, m: Int32| {
                log.push(format!("b{}", m.data));
                countdown.tick();
            },
        )
        .unwrap();
    let pub_a = node
        .create_publisher::<Int32>(topic_a.as_str().keep_last(100).reliable())
        .unwrap();
    let pub_b = node
        .create_publisher::<Int32>(topic_b.as_str().keep_last(100).reliable())
        .unwrap();
    wait_matched(&pub_a, 1);
    wait_matched(&pub_b, 1);
    for data in 0..10 {
        pub_a.publish(Int32 { data }).unwrap();
        pub_b.publish(Int32 { data }).unwrap();
    }
    spin_until(&mut executor, done);
    let snapshot = worker.run(|log: &mut Vec<String>| log.clone());
    let log = run_to_end(&mut executor, snapshot).unwrap();
    let a: Vec<_> = log.iter().filter(|s| s.starts_with('a')).cloned().collect();
    let b: Vec<_> = log.iter().filter(|s| s.starts_with('b')).cloned().collect();
    assert_eq!(a, (0..10).map(|i| format!("a{i}")).collect::<Vec<_>>());
    assert_eq!(b, (0..10).map(|i| format!("b{i}")).collect::<Vec<_>>());
}

pub(crate) fn async_tasks_run_while_spinning(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let _node = executor.create_node(unique("tasks").as_str()).unwrap();
    let (tx, rx) = oneshot::channel::<i32>();
    let sum = executor
        .commands()
        .run(async move { rx.await.unwrap() + 1 });
    // `query` tasks run too (while their promise is held); this one hands its value to
    // the first task.
    let _query = executor.commands().query(async move {
        tx.send(41).unwrap();
    });
    let (mut sum, notice) = executor.commands().create_notice(sum);
    spin_until(&mut executor, notice);
    assert_eq!(sum.try_recv().unwrap(), Some(42));

    // Nothing runs while not spinning.
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    drop(executor.commands().run(async move {
        counter.fetch_add(1, Ordering::SeqCst);
    }));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "a task ran while not spinning"
    );
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

pub(crate) fn a_worker_runs_its_work_in_order(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("order").as_str()).unwrap();
    let worker = node.create_worker::<Vec<i32>>(Vec::new());
    let topic = unique("order_topic");
    let (countdown, done) = Countdown::new(300);
    let _sub = worker
        .create_subscription(
            topic.as_str().keep_last(1000).reliable(),
            move |log: &mut Vec<i32>, m: Int32| {
                log.push(m.data);
                countdown.tick();
            },
        )
        .unwrap();
    let publisher = matched_publisher(&node, &topic);
    for data in 0..300 {
        publisher.publish(Int32 { data }).unwrap();
    }
    spin_until(&mut executor, done);
    // Payload tasks queue behind each other in the order they were sent.
    for data in 300..400 {
        drop(worker.run(move |log: &mut Vec<i32>| log.push(data)));
    }
    let snapshot = worker.run(|log: &mut Vec<i32>| log.clone());
    let (mut snapshot, notice) = executor.commands().create_notice(snapshot);
    spin_until(&mut executor, notice);
    assert_eq!(
        snapshot.try_recv().unwrap().unwrap(),
        (0..400).collect::<Vec<_>>()
    );
}

pub(crate) fn work_sent_to_a_worker_before_it_is_dropped_still_runs(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("orphan").as_str()).unwrap();
    // Sent while not spinning, with the Worker dropped before the spin (a worker made
    // only to run one job, say): the job still runs, on the payload as it was.
    let worker = node.create_worker::<Vec<i32>>(vec![1]);
    let first = worker.run(|log: &mut Vec<i32>| {
        log.push(2);
        log.clone()
    });
    let second = worker.run(|log: &mut Vec<i32>| {
        log.push(3);
        log.clone()
    });
    drop(worker);
    let (mut second, notice) = executor.commands().create_notice(second);
    spin_until(&mut executor, notice);
    assert_eq!(second.try_recv().unwrap(), Some(vec![1, 2, 3]));
    let mut first = first;
    assert_eq!(first.try_recv().unwrap(), Some(vec![1, 2]));
    // Dropped during a spin, with jobs still queued behind a slow one: they run too.
    let worker = node.create_worker::<usize>(0);
    let slow = worker.run(|_: &mut usize| std::thread::sleep(Duration::from_millis(50)));
    let jobs: Vec<_> = (1..=20)
        .map(|n| {
            worker.run(move |count: &mut usize| {
                *count += 1;
                assert_eq!(*count, n, "jobs ran out of order");
                *count
            })
        })
        .collect();
    let (mut last, notice) = executor
        .commands()
        .create_notice(jobs.into_iter().last().unwrap());
    let dropper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        drop(worker);
    });
    spin_until(&mut executor, notice);
    dropper.join().unwrap();
    drop(slow);
    assert_eq!(last.try_recv().unwrap(), Some(20));
}

pub(crate) fn activity_listeners_see_every_callback_and_only_while_spinning(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("listen").as_str()).unwrap();
    let worker = node.create_worker::<Vec<i32>>(Vec::new());
    let topic = unique("listen_topic");
    let _sub = worker
        .create_subscription(
            topic.as_str().keep_last(100).reliable(),
            |log: &mut Vec<i32>, m: Int32| log.push(m.data),
        )
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::<usize>::new()));
    let listener = {
        let seen = Arc::clone(&seen);
        worker.listen(move |log: &mut Vec<i32>| seen.lock().unwrap().push(log.len()))
    };
    let tenth = worker.listen_until(|log: &mut Vec<i32>| (log.len() >= 10).then_some(log.len()));
    // A backlog of 20, published before the spin: a condition on the payload is checked
    // after every callback, so it holds first at exactly 10.
    let publisher = matched_publisher(&node, &topic);
    publish_to(&publisher, 1, 20);
    let (mut tenth, notice) = executor.commands().create_notice(tenth);
    spin_until(&mut executor, notice);
    assert_eq!(tenth.try_recv().unwrap(), Some(10));
    let start = Instant::now();
    while !seen.lock().unwrap().contains(&20) {
        assert!(start.elapsed() < PATIENCE, "the backlog never drained");
        spin_for(&mut executor, Duration::from_millis(10));
    }
    // (Other activity, such as taking in the new subscription, may be seen too.)
    let mut steps = seen.lock().unwrap().clone();
    steps.retain(|&n| n > 0);
    steps.dedup();
    assert_eq!(
        steps,
        (1..=20).collect::<Vec<_>>(),
        "the listener missed a step"
    );
    // Not while not spinning; not at all once dropped.
    let calls = seen.lock().unwrap().len();
    drop(worker.run(|log: &mut Vec<i32>| log.push(-1)));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        seen.lock().unwrap().len(),
        calls,
        "a listener ran while not spinning"
    );
    spin_for(&mut executor, Duration::from_millis(50));
    assert!(
        seen.lock().unwrap().len() > calls,
        "the payload task was not seen"
    );
    drop(listener);
    let calls = seen.lock().unwrap().len();
    let job = worker.run(|log: &mut Vec<i32>| log.len());
    let (_, notice) = executor.commands().create_notice(job);
    spin_until(&mut executor, notice);
    assert_eq!(seen.lock().unwrap().len(), calls, "a dropped listener ran");
}

pub(crate) fn two_workers_run_blocking_callbacks_in_parallel(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("parallel").as_str()).unwrap();
    let spans = Arc::new(Mutex::new(Vec::<(Instant, Instant)>::new()));
    let (countdown, done) = Countdown::new(2);
    let mut keep = Vec::new();
    let mut workers = Vec::new();
    let mut publishers = Vec::new();
    for i in 0..2 {
        let worker = node.create_worker::<()>(());
        let topic = unique(&format!("parallel_{i}"));
        let spans = Arc::clone(&spans);
        let countdown = Arc::clone(&countdown);
        keep.push(
            worker
                .create_subscription(
                    topic.as_str().keep_last(10).reliable(),
                    move |_: &mut (), _m: Int32| {
                        let start = Instant::now();
                        std::thread::sleep(Duration::from_millis(300));
                        spans.lock().unwrap().push((start, Instant::now()));
                        countdown.tick();
                    },
                )
                .unwrap(),
        );
        publishers.push(
            node.create_publisher::<Int32>(topic.as_str().keep_last(10).reliable())
                .unwrap(),
        );
        workers.push(worker);
    }
    for publisher in &publishers {
        wait_matched(publisher, 1);
    }
    for publisher in &publishers {
        publisher.publish(Int32 { data: 1 }).unwrap();
    }
    spin_until(&mut executor, done);
    let spans = spans.lock().unwrap();
    let (a, b) = (spans[0], spans[1]);
    assert!(
        a.0 < b.1 && b.0 < a.1,
        "the two Workers' callbacks did not overlap: {:?} vs {:?}",
        a,
        b
    );
}
