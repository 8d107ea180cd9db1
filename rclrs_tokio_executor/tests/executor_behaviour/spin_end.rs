//! How a spin ends: `spin_once`, timeouts, halts, promises, and what a callback that
//! ends its spin or drops its own entity lets run after it, and that a spin returns
//! only once its callbacks in flight are done.

use super::*;

pub(crate) fn spin_once_timeout_and_halt_return_as_specified(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let _node = executor.create_node(unique("spin_modes").as_str()).unwrap();
    // The very errors of the basic executor, whole, so that code comparing a spin's
    // errors with `==` sees the same values from either executor: a wait set that timed
    // out with nothing ready reports `rcl_wait`'s `RCL_RET_TIMEOUT` with rcl's (empty)
    // error message; one that ran something first reports its runner's own timeout,
    // without a message.
    let timeout = |msg: Option<&str>| {
        [RclrsError::RclError {
            code: RclReturnCode::Timeout,
            msg: msg.map(RclErrorMsg::new),
        }]
    };
    let idle_timeout = timeout(Some(""));
    let busy_timeout = timeout(None);

    // Spin-once with a zero timeout: returns at once, timed out. The node created
    // since the last spin is the work of its pass.
    let start = Instant::now();
    let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::ZERO));
    assert_eq!(errors, busy_timeout);
    assert!(start.elapsed() < Duration::from_secs(2));

    // The same with nothing to do.
    let start = Instant::now();
    let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::ZERO));
    assert_eq!(errors, idle_timeout);
    assert!(start.elapsed() < Duration::from_secs(2));

    // A timeout elapses: the same Timeout error, after (not before) the timeout.
    let start = Instant::now();
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)));
    assert_eq!(errors, idle_timeout);
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert!(start.elapsed() < Duration::from_secs(5));

    // Halt from another thread stops an unbounded spin, without an error.
    let start = Instant::now();
    let halter = Halter::start(&executor, Duration::from_millis(100));
    let errors = executor.spin(SpinOptions::default().timeout(PATIENCE));
    halter.spin_returned();
    assert!(errors.is_empty(), "{errors:?}");
    assert!(start.elapsed() < Duration::from_secs(10));

    // Spin-once runs the queued task. (The basic executor then still waits for its wait
    // set, so how soon it returns is not part of the shared contract.)
    let ran = executor.commands().run(async {});
    let start = Instant::now();
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(1)));
    assert!(start.elapsed() < Duration::from_secs(5));
    let mut ran = ran;
    assert_eq!(ran.try_recv().unwrap(), Some(()));
}

/// Entities added between spins are the unit of work of the next `spin_once` (the
/// basic executor's wait sets wake on the guard conditions that announced them), and
/// that spin consumes them: the `spin_once` after it finds nothing and waits out its
/// timeout. Each round adds a Worker with a subscription nobody publishes to, so the
/// announcement races with the first spin's end every time.
pub(crate) fn a_spin_once_after_the_one_that_saw_new_entities_waits_for_work(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("once_after_new").as_str())
        .unwrap();
    let topic = unique("once_after_new_topic");
    let heard = Arc::new(AtomicUsize::new(0));
    let mut kept = Vec::new();
    let wait = Duration::from_millis(40);
    for round in 0..12 {
        let worker = node.create_worker(());
        let heard = Arc::clone(&heard);
        let subscription = worker
            .create_subscription::<Int32, _>(topic.as_str(), move |_: &mut (), _: Int32| {
                heard.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        kept.push((worker, subscription));
        // The basic executor's idle wait sets wait out the timeout here; the Tokio
        // executor returns at once.
        let _ = executor.spin(SpinOptions::spin_once().timeout(wait));
        let start = Instant::now();
        let _ = executor.spin(SpinOptions::spin_once().timeout(wait));
        let took = start.elapsed();
        assert!(
            took >= wait,
            "round {round}: a spin_once with nothing to do returned after {took:?}, \
             before its {wait:?} timeout"
        );
    }
    assert_eq!(heard.load(Ordering::SeqCst), 0);
}

/// How a callback ends the spin it runs in.
#[derive(Clone, Copy)]
enum EndFromInside {
    /// It calls `halt_spinning`.
    Halt,
    /// It resolves the promise the spin waits for (`until_promise_resolved`).
    ResolvePromise,
}

/// Subscription callbacks that record their messages and end the spin they run in
/// (`end`), and the options of a spin they can end.
struct SpinEnder {
    end: EndFromInside,
    commands: Arc<ExecutorCommands>,
    resolve: Arc<Mutex<Option<oneshot::Sender<()>>>>,
}

impl SpinEnder {
    fn new(executor: &Executor, end: EndFromInside) -> Self {
        SpinEnder {
            end,
            commands: Arc::clone(executor.commands()),
            resolve: Arc::default(),
        }
    }

    /// A callback that pushes each message's data to `received`, then ends its spin.
    fn callback(&self, received: &Arc<Mutex<Vec<i32>>>) -> impl Fn(Int32) + Send + Sync {
        let (end, received) = (self.end, Arc::clone(received));
        let (commands, resolve) = (Arc::clone(&self.commands), Arc::clone(&self.resolve));
        move |m: Int32| {
            received.lock().unwrap().push(m.data);
            match end {
                EndFromInside::Halt => commands.halt_spinning(),
                EndFromInside::ResolvePromise => {
                    if let Some(sender) = resolve.lock().unwrap().take() {
                        let _ = sender.send(());
                    }
                }
            }
        }
    }

    /// Options of a spin with `timeout` that a callback can end (with a fresh promise).
    fn options(&self, timeout: Duration) -> SpinOptions {
        let (sender, promise) = oneshot::channel();
        *self.resolve.lock().unwrap() = Some(sender);
        let options = SpinOptions::default().timeout(timeout);
        match self.end {
            EndFromInside::Halt => options,
            EndFromInside::ResolvePromise => options.until_promise_resolved(promise),
        }
    }
}

/// Five messages wait for a subscription whose callback ends the spin (`end`); spin
/// until all five ran, recording how many each spin ran. Every spin ends without an
/// error, runs at least one callback, and nothing is lost or reordered; a spin after
/// the last finds nothing and times out.
fn callbacks_per_spin_ended_from_inside(make: MakeExecutor, end: EndFromInside) -> Vec<usize> {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("end_inside").as_str()).unwrap();
    let topic = unique("end_inside_topic");
    let received = Arc::new(Mutex::new(Vec::new()));
    let ender = SpinEnder::new(&executor, end);
    let _sub = node
        .create_subscription(
            topic.as_str().keep_last(1000).reliable(),
            ender.callback(&received),
        )
        .unwrap();
    let publisher = matched_publisher(&node, &topic);
    for data in 0..5 {
        publisher.publish(Int32 { data }).unwrap();
    }
    // Let every message reach the subscription's queue before the first spin.
    std::thread::sleep(Duration::from_millis(200));
    let mut per_spin = Vec::new();
    while received.lock().unwrap().len() < 5 {
        let before = received.lock().unwrap().len();
        let errors = executor.spin(ender.options(PATIENCE));
        assert!(errors.is_empty(), "spin {}: {errors:?}", per_spin.len() + 1);
        let ran = received.lock().unwrap().len() - before;
        assert!(
            ran > 0,
            "spin {} ended without a callback",
            per_spin.len() + 1
        );
        per_spin.push(ran);
    }
    spin_for(&mut executor, Duration::from_millis(200));
    assert_eq!(*received.lock().unwrap(), (0..5).collect::<Vec<_>>());
    per_spin
}

/// Zero-timeout spins over messages waiting for two subscriptions whose callbacks end
/// the spin (`end`): a spin that ran a callback returns as soon as that callback has
/// finished, as the basic executor's does, and nothing is lost or reordered. (The Tokio
/// executor used to wait for the other subscription's waiting messages, which the ended
/// spin may no longer start, until its 20 ms stall limit.)
fn zero_timeout_spins_ended_from_inside(make: MakeExecutor, end: EndFromInside) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("end_inside_zero").as_str())
        .unwrap();
    let ender = SpinEnder::new(&executor, end);
    let topics = [unique("end_inside_zero_a"), unique("end_inside_zero_b")];
    let options = |i: usize| topics[i].as_str().keep_last(1000).reliable();
    let received: [Arc<Mutex<Vec<i32>>>; 2] = Default::default();
    let _subscriptions: Vec<_> = (0..2)
        .map(|i| {
            node.create_subscription(options(i), ender.callback(&received[i]))
                .unwrap()
        })
        .collect();
    let publishers: Vec<_> = topics.iter().map(|t| matched_publisher(&node, t)).collect();
    let total = || {
        received
            .iter()
            .map(|r| r.lock().unwrap().len())
            .sum::<usize>()
    };
    let mut took = Vec::new();
    let started = Instant::now();
    for round in 0..3 {
        for publisher in &publishers {
            for data in round * 5..round * 5 + 5 {
                publisher.publish(Int32 { data }).unwrap();
            }
        }
        // Let every message reach the subscriptions' queues before the spins.
        std::thread::sleep(Duration::from_millis(100));
        while total() < (round as usize + 1) * 10 {
            assert!(started.elapsed() < PATIENCE, "the messages never arrived");
            let before = total();
            let start = Instant::now();
            executor.spin(ender.options(Duration::ZERO));
            if total() > before {
                took.push(start.elapsed());
            }
        }
    }
    for r in &received {
        assert_eq!(*r.lock().unwrap(), (0..15).collect::<Vec<_>>());
    }
    // Their median: a slow machine may hold up some spins, not most of them (and the
    // last spin of each round, with nothing left behind, was quick before too).
    took.sort();
    let median = took[took.len() / 2];
    assert!(
        median < Duration::from_millis(10),
        "zero-timeout spins ended from inside took {took:?}"
    );
}

pub(crate) fn a_zero_timeout_spin_halted_from_inside_returns_at_once(make: MakeExecutor) {
    zero_timeout_spins_ended_from_inside(make, EndFromInside::Halt);
}

pub(crate) fn a_zero_timeout_spin_whose_promise_resolves_inside_returns_at_once(
    make: MakeExecutor,
) {
    zero_timeout_spins_ended_from_inside(make, EndFromInside::ResolvePromise);
}

pub(crate) fn a_halt_from_inside_a_callback_ends_the_spin_and_loses_nothing(make: MakeExecutor) {
    callbacks_per_spin_ended_from_inside(make, EndFromInside::Halt);
}

pub(crate) fn a_promise_resolved_inside_a_callback_ends_the_spin_and_loses_nothing(
    make: MakeExecutor,
) {
    callbacks_per_spin_ended_from_inside(make, EndFromInside::ResolvePromise);
}

/// The Tokio executor's stricter promise: the callback that halts is the last to start
/// in that spin, so each spin runs one. (The basic executor finishes the wait it is in:
/// measured with rclrs 0.8, 1 and then 3 callbacks in one spin.)
pub(crate) fn a_halt_from_inside_a_callback_starts_no_further_callback(make: MakeExecutor) {
    let per_spin = callbacks_per_spin_ended_from_inside(make, EndFromInside::Halt);
    assert_eq!(per_spin, vec![1; 5]);
}

/// The same for a callback that resolves the spin's promise. (The basic executor ran up
/// to 18 of 20 waiting callbacks in one such spin, in a probe.)
pub(crate) fn a_promise_resolved_inside_a_callback_starts_no_further_callback(make: MakeExecutor) {
    let per_spin = callbacks_per_spin_ended_from_inside(make, EndFromInside::ResolvePromise);
    assert_eq!(per_spin, vec![1; 5]);
}

pub(crate) fn spin_until_a_promise_resolves(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let _node = executor.create_node(unique("promise").as_str()).unwrap();
    let (tx, rx) = oneshot::channel();
    let start = Instant::now();
    let resolver = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        tx.send(()).unwrap();
    });
    spin_until(&mut executor, rx);
    resolver.join().unwrap();
    assert!(start.elapsed() >= Duration::from_millis(100));

    // A promise whose sender is dropped also ends the spin.
    let (tx, rx) = oneshot::channel::<()>();
    drop(tx);
    spin_until(&mut executor, rx);
}

/// Publish 10 messages to a subscription (on the node or on a Worker) whose first
/// callback drops its last handle (and, on a Worker, the Worker's), then spin: the
/// callbacks that run after the drop.
fn callbacks_after_a_drop_from_inside(make: MakeExecutor, on_worker: bool) -> usize {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("self_drop").as_str()).unwrap();
    let topic = unique("self_drop_topic");
    let options = || topic.as_str().keep_last(100).reliable();
    let count = Arc::new(AtomicUsize::new(0));
    // What the first callback drops: the subscription, and the Worker it is on.
    let doomed = Doomed::default();
    let callback = {
        let (count, doomed) = (Arc::clone(&count), Arc::clone(&doomed));
        move || {
            count.fetch_add(1, Ordering::SeqCst);
            doomed.lock().unwrap().take();
        }
    };
    let held: Box<dyn std::any::Any + Send> = if on_worker {
        let worker = node.create_worker::<()>(());
        let subscription = worker
            .create_subscription(options(), move |_: &mut (), _: Int32| callback())
            .unwrap();
        Box::new((subscription, worker))
    } else {
        Box::new(
            node.create_subscription(options(), move |_: Int32| callback())
                .unwrap(),
        )
    };
    *doomed.lock().unwrap() = Some(held);
    let publisher = node.create_publisher::<Int32>(options()).unwrap();
    publish_to(&publisher, 1, 10);
    let started = Instant::now();
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(300)));
    assert!(started.elapsed() < PATIENCE, "spin outlived its timeout");
    assert!(doomed.lock().unwrap().is_none(), "no callback ran");
    count.load(Ordering::SeqCst) - 1
}

pub(crate) fn a_subscription_dropped_inside_its_own_callback_runs_no_more(make: MakeExecutor) {
    assert_eq!(callbacks_after_a_drop_from_inside(make, false), 0);
}

pub(crate) fn a_worker_dropped_inside_its_own_callback_runs_no_more(make: MakeExecutor) {
    assert_eq!(callbacks_after_a_drop_from_inside(make, true), 0);
}

pub(crate) fn a_spin_returns_only_after_its_callbacks_in_flight_finish(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("in_flight").as_str()).unwrap();
    let topic = unique("in_flight_topic");
    // Callbacks in flight, and callbacks that have started at all.
    let running = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    let mut keep = Vec::new();
    for n in 0..2 {
        let worker = node.create_worker(n);
        let (running, started) = (Arc::clone(&running), Arc::clone(&started));
        let subscription = worker
            .create_subscription(
                topic.as_str().keep_last(100).reliable(),
                move |_: &mut i32, _: Int32| {
                    running.fetch_add(1, Ordering::SeqCst);
                    started.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(150));
                    running.fetch_sub(1, Ordering::SeqCst);
                },
            )
            .unwrap();
        keep.push((worker, subscription));
    }
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    support::publish_to(&publisher, 2, 2);
    // Each short spin may start callbacks, and must not return while one still runs.
    let deadline = Instant::now() + PATIENCE;
    while started.load(Ordering::SeqCst) < 4 {
        assert!(Instant::now() < deadline, "the callbacks never all ran");
        let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(20)));
        assert_eq!(
            running.load(Ordering::SeqCst),
            0,
            "spin returned while a callback was still running"
        );
    }
}

/// What a callback drops: the last handle of its own entity.
type Doomed = Arc<Mutex<Option<Box<dyn std::any::Any + Send>>>>;

/// A 1 ms timer whose first callback drops its last handle, due many times over by the
/// time the spin starts: it fires once, and a spin after that runs nothing of it.
pub(crate) fn a_timer_dropped_inside_its_own_callback_fires_no_more(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("timer_self_drop").as_str())
        .unwrap();
    let (fired, fired_once) = Countdown::new(1);
    let doomed = Doomed::default();
    let timer = {
        let (fired, doomed) = (Arc::clone(&fired), Arc::clone(&doomed));
        node.create_timer_repeating(Duration::from_millis(1), move || {
            fired.tick();
            doomed.lock().unwrap().take();
        })
        .unwrap()
    };
    *doomed.lock().unwrap() = Some(Box::new(timer));
    std::thread::sleep(Duration::from_millis(20));
    spin_until(&mut executor, fired_once);
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)));
    assert_eq!(fired.count.load(Ordering::SeqCst), 1);
    assert!(doomed.lock().unwrap().is_none());
    assert_eq!(errors.len(), 1, "{errors:?}");
}

/// A service whose first callback drops its last handle, with five requests waiting,
/// and a client whose first response callback drops the client, with five calls out:
/// each runs once, and a spin after that runs nothing of either. (The basic executor
/// served all five requests under valgrind's slower timing: Tokio executor only.)
pub(crate) fn a_service_and_a_client_dropped_inside_their_own_callbacks_run_no_more(
    make: MakeExecutor,
) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("service_self_drop").as_str())
        .unwrap();
    let name = unique("self_drop_set_bool");
    let served = Arc::new(AtomicUsize::new(0));
    let service_doomed = Doomed::default();
    let service = {
        let (served, doomed) = (Arc::clone(&served), Arc::clone(&service_doomed));
        node.create_service::<SetBool, _>(name.as_str(), move |request: SetBool_Request| {
            served.fetch_add(1, Ordering::SeqCst);
            doomed.lock().unwrap().take();
            SetBool_Response {
                success: request.data,
                message: String::new(),
            }
        })
        .unwrap()
    };
    *service_doomed.lock().unwrap() = Some(Box::new(service));
    let client = node.create_client::<SetBool>(name.as_str()).unwrap();
    let ready = client.notify_on_service_ready();
    spin_until(&mut executor, ready);
    let (answered, first_answer) = Countdown::new(1);
    let client_doomed = Doomed::default();
    let _calls: Vec<_> = (0..5)
        .map(|_| {
            let (answered, doomed) = (Arc::clone(&answered), Arc::clone(&client_doomed));
            client
                .call_then(
                    SetBool_Request { data: true },
                    move |_: SetBool_Response| {
                        answered.tick();
                        doomed.lock().unwrap().take();
                    },
                )
                .unwrap()
        })
        .collect();
    *client_doomed.lock().unwrap() = Some(Box::new(client));
    // Let the five requests arrive before the spin.
    std::thread::sleep(Duration::from_millis(50));
    spin_until(&mut executor, first_answer);
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
    assert_eq!(served.load(Ordering::SeqCst), 1);
    assert_eq!(answered.count.load(Ordering::SeqCst), 1);
    assert!(service_doomed.lock().unwrap().is_none());
    assert!(client_doomed.lock().unwrap().is_none());
    assert_eq!(errors.len(), 1, "{errors:?}");
}
