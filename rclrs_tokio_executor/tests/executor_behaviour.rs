//! One behaviour suite, run against the rclrs basic executor and the Tokio executor:
//! whatever the basic executor guarantees, the Tokio executor must guarantee too.
//!
//! Each case is a function taking an executor factory; the `suite!` macro instantiates
//! every case once per executor, as `basic::<case>`, `tokio::<case>` and
//! `tokio_dedicated::<case>` (every Worker on a dedicated thread).

mod support;

use futures::channel::oneshot;
use rclrs::*;
use rclrs_tokio_executor::{CreateTokioExecutor, DedicatedWorkers, TokioExecutorOptions};
use ros_env::std_msgs::msg::Int32;
use ros_env::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};
use support::{publish_to, run_to_end, spin_for, unique, wait_matched};

type MakeExecutor = fn(&Context) -> Executor;

/// A generous bound for anything that should take milliseconds.
const PATIENCE: Duration = Duration::from_secs(20);

/// Spin until `done` resolves; fail if that takes longer than PATIENCE.
fn spin_until(executor: &mut Executor, done: Promise<()>) {
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(done)
            .timeout(PATIENCE),
    );
    assert!(errors.is_empty(), "spin reported {errors:?}");
}

/// A promise that resolves once `count` reaches `target`, checked by the caller.
struct Countdown {
    sender: Mutex<Option<oneshot::Sender<()>>>,
    count: AtomicUsize,
    target: usize,
}

impl Countdown {
    fn new(target: usize) -> (Arc<Self>, Promise<()>) {
        let (tx, rx) = oneshot::channel();
        let countdown = Arc::new(Self {
            sender: Mutex::new(Some(tx)),
            count: AtomicUsize::new(0),
            target,
        });
        (countdown, rx)
    }

    fn tick(&self) {
        if self.count.fetch_add(1, Ordering::SeqCst) + 1 == self.target {
            if let Some(tx) = self.sender.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
    }
}

/// A reliable publisher (depth 1000) to `topic`, once the test's subscription matched it.
fn matched_publisher(node: &Node, topic: &str) -> Publisher<Int32> {
    let publisher = node
        .create_publisher::<Int32>(topic.keep_last(1000).reliable())
        .unwrap();
    wait_matched(&publisher, 1);
    publisher
}

fn pub_sub_delivers_every_message_in_order(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("pubsub").as_str()).unwrap();
    let topic = unique("pubsub_topic");
    let received = Arc::new(Mutex::new(Vec::new()));
    let (countdown, done) = Countdown::new(200);
    let _sub = {
        let received = Arc::clone(&received);
        node.create_subscription(
            topic.as_str().keep_last(1000).reliable(),
            move |m: Int32| {
                received.lock().unwrap().push(m.data);
                countdown.tick();
            },
        )
        .unwrap()
    };
    let publisher = matched_publisher(&node, &topic);
    let publishing = std::thread::spawn(move || {
        for data in 0..200 {
            publisher.publish(Int32 { data }).unwrap();
        }
        publisher
    });
    spin_until(&mut executor, done);
    let _publisher = publishing.join().unwrap();
    assert_eq!(*received.lock().unwrap(), (0..200).collect::<Vec<_>>());
}

fn services_and_clients_answer_requests(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("service").as_str()).unwrap();
    let name = unique("set_bool");
    let _service = node
        .create_service::<SetBool, _>(name.as_str(), |request: SetBool_Request| SetBool_Response {
            success: !request.data,
            message: format!("got {}", request.data),
        })
        .unwrap();
    let client = node.create_client::<SetBool>(name.as_str()).unwrap();
    let ready = client.notify_on_service_ready();
    spin_until(&mut executor, ready);
    for data in [true, false, true] {
        let response: Promise<SetBool_Response> = client.call(SetBool_Request { data }).unwrap();
        let response = run_to_end(&mut executor, response).unwrap();
        assert_eq!(response.success, !data);
        assert_eq!(response.message, format!("got {data}"));
    }
}

/// A node's parameter services (what `ros2 param get` and `set` call) answer while the
/// executor spins: a declared parameter is read remotely, and a remote set reaches the
/// node's own handle.
fn parameter_services_answer_remote_gets_and_sets(make: MakeExecutor) {
    use ros_env::rcl_interfaces::msg::{Parameter, ParameterValue};
    use ros_env::rcl_interfaces::srv::{
        GetParameters, GetParameters_Request, GetParameters_Response, SetParameters,
        SetParameters_Request, SetParameters_Response,
    };
    const PARAMETER_DOUBLE: u8 = 3;
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("params").as_str()).unwrap();
    let gain = node
        .declare_parameter("gain")
        .default(1.5)
        .mandatory()
        .unwrap();
    let remote = executor
        .create_node(unique("param_caller").as_str())
        .unwrap();
    let name = node.fully_qualified_name();
    let get = remote
        .create_client::<GetParameters>(format!("{name}/get_parameters").as_str())
        .unwrap();
    let set = remote
        .create_client::<SetParameters>(format!("{name}/set_parameters").as_str())
        .unwrap();
    for ready in [get.notify_on_service_ready(), set.notify_on_service_ready()] {
        spin_until(&mut executor, ready);
    }

    let names = vec!["gain".to_string()];
    let got = get.call(GetParameters_Request { names }).unwrap();
    let got: GetParameters_Response = run_to_end(&mut executor, got).unwrap();
    assert_eq!(got.values.len(), 1);
    assert_eq!(got.values[0].type_, PARAMETER_DOUBLE);
    assert_eq!(got.values[0].double_value, 1.5);

    let value = ParameterValue {
        type_: PARAMETER_DOUBLE,
        double_value: 2.5,
        ..Default::default()
    };
    let parameters = vec![Parameter {
        name: "gain".into(),
        value,
    }];
    let results = set.call(SetParameters_Request { parameters }).unwrap();
    let results: SetParameters_Response = run_to_end(&mut executor, results).unwrap();
    assert!(results.results.iter().all(|r| r.successful), "{results:?}");
    assert_eq!(gain.get(), 2.5);
}

fn worker_payload_is_mutated_by_several_callbacks(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
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

fn spin_once_timeout_and_halt_return_as_specified(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let _node = executor.create_node(unique("spin_modes").as_str()).unwrap();
    let is_timeout = |errors: &[RclrsError]| {
        errors.len() == 1
            && matches!(
                errors[0],
                RclrsError::RclError {
                    code: RclReturnCode::Timeout,
                    ..
                }
            )
    };

    // Spin-once with nothing to do and a zero timeout: returns at once, timed out.
    let start = Instant::now();
    let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::ZERO));
    assert!(is_timeout(&errors), "{errors:?}");
    assert!(start.elapsed() < Duration::from_secs(2));

    // A timeout elapses: the same Timeout error, after (not before) the timeout.
    let start = Instant::now();
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)));
    assert!(is_timeout(&errors), "{errors:?}");
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert!(start.elapsed() < Duration::from_secs(5));

    // Halt from another thread stops an unbounded spin, without an error.
    let commands = Arc::clone(executor.commands());
    let start = Instant::now();
    let halter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        commands.halt_spinning();
    });
    let errors = executor.spin(SpinOptions::default().timeout(PATIENCE));
    halter.join().unwrap();
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

/// How a callback ends the spin it runs in.
#[derive(Clone, Copy)]
enum EndFromInside {
    /// It calls `halt_spinning`.
    Halt,
    /// It resolves the promise the spin waits for (`until_promise_resolved`).
    ResolvePromise,
}

/// Five messages wait for a subscription whose callback ends the spin (`end`); spin
/// until all five ran, recording how many each spin ran. Every spin ends without an
/// error, runs at least one callback, and nothing is lost or reordered; a spin after
/// the last finds nothing and times out.
fn callbacks_per_spin_ended_from_inside(make: MakeExecutor, end: EndFromInside) -> Vec<usize> {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("end_inside").as_str()).unwrap();
    let topic = unique("end_inside_topic");
    let received = Arc::new(Mutex::new(Vec::new()));
    let resolve: Arc<Mutex<Option<oneshot::Sender<()>>>> = Arc::default();
    let _sub = {
        let received = Arc::clone(&received);
        let commands = Arc::clone(executor.commands());
        let resolve = Arc::clone(&resolve);
        node.create_subscription(
            topic.as_str().keep_last(1000).reliable(),
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
            },
        )
        .unwrap()
    };
    let publisher = matched_publisher(&node, &topic);
    for data in 0..5 {
        publisher.publish(Int32 { data }).unwrap();
    }
    // Let every message reach the subscription's queue before the first spin.
    std::thread::sleep(Duration::from_millis(200));
    let mut per_spin = Vec::new();
    while received.lock().unwrap().len() < 5 {
        let before = received.lock().unwrap().len();
        let (sender, promise) = oneshot::channel();
        *resolve.lock().unwrap() = Some(sender);
        let options = SpinOptions::default().timeout(PATIENCE);
        let options = match end {
            EndFromInside::Halt => options,
            EndFromInside::ResolvePromise => options.until_promise_resolved(promise),
        };
        let errors = executor.spin(options);
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

fn a_halt_from_inside_a_callback_ends_the_spin_and_loses_nothing(make: MakeExecutor) {
    callbacks_per_spin_ended_from_inside(make, EndFromInside::Halt);
}

fn a_promise_resolved_inside_a_callback_ends_the_spin_and_loses_nothing(make: MakeExecutor) {
    callbacks_per_spin_ended_from_inside(make, EndFromInside::ResolvePromise);
}

/// The Tokio executor's stricter promise: the callback that halts is the last to start
/// in that spin, so each spin runs one. (The basic executor finishes the wait it is in:
/// measured with rclrs 0.8, 1 and then 3 callbacks in one spin.)
fn a_halt_from_inside_a_callback_starts_no_further_callback(make: MakeExecutor) {
    let per_spin = callbacks_per_spin_ended_from_inside(make, EndFromInside::Halt);
    assert_eq!(per_spin, vec![1; 5]);
}

/// The same for a callback that resolves the spin's promise. (The basic executor ran up
/// to 18 of 20 waiting callbacks in one such spin, in a probe.)
fn a_promise_resolved_inside_a_callback_starts_no_further_callback(make: MakeExecutor) {
    let per_spin = callbacks_per_spin_ended_from_inside(make, EndFromInside::ResolvePromise);
    assert_eq!(per_spin, vec![1; 5]);
}

fn spin_until_a_promise_resolves(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
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

fn async_tasks_run_while_spinning(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
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

fn dropping_an_entity_during_spin_stops_its_callbacks(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("drop").as_str()).unwrap();
    let topic = unique("drop_topic");
    let dropped_count = Arc::new(AtomicUsize::new(0));
    let kept_count = Arc::new(AtomicUsize::new(0));
    let doomed = {
        let c = Arc::clone(&dropped_count);
        node.create_subscription(
            topic.as_str().keep_last(100).reliable(),
            move |_m: Int32| {
                c.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap()
    };
    let (countdown, done) = Countdown::new(100);
    let _kept = {
        let c = Arc::clone(&kept_count);
        node.create_subscription(
            topic.as_str().keep_last(100).reliable(),
            move |_m: Int32| {
                c.fetch_add(1, Ordering::SeqCst);
                countdown.tick();
            },
        )
        .unwrap()
    };
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    wait_matched(&publisher, 2);
    let doomed_seen = Arc::clone(&dropped_count);
    let publishing = std::thread::spawn(move || {
        let mut doomed = Some(doomed);
        for data in 0..100 {
            if data == 50 {
                // Drop while the executor spins and messages keep arriving.
                let deadline = Instant::now() + PATIENCE;
                while doomed_seen.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                doomed.take();
            }
            publisher.publish(Int32 { data }).unwrap();
            std::thread::sleep(Duration::from_micros(500));
        }
        publisher
    });
    spin_until(&mut executor, done);
    let _publisher = publishing.join().unwrap();
    let after_drop = dropped_count.load(Ordering::SeqCst);
    assert!(
        after_drop > 0 && after_drop <= 50,
        "dropped subscription ran {after_drop} times"
    );
    assert_eq!(kept_count.load(Ordering::SeqCst), 100);
}

fn a_burst_while_not_spinning_is_delivered_up_to_the_depth(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("burst").as_str()).unwrap();
    let topic = unique("burst_topic");
    let received = Arc::new(Mutex::new(Vec::new()));
    let _sub = {
        let received = Arc::clone(&received);
        node.create_subscription(topic.as_str().keep_last(10).reliable(), move |m: Int32| {
            received.lock().unwrap().push(m.data)
        })
        .unwrap()
    };
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(10).reliable())
        .unwrap();
    wait_matched(&publisher, 1);
    for data in 0..25 {
        publisher.publish(Int32 { data }).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        received.lock().unwrap().is_empty(),
        "delivered while not spinning"
    );
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(500)));
    assert_eq!(*received.lock().unwrap(), (15..25).collect::<Vec<_>>());
}

/// Bursts of 1 to 40 messages from another thread, each sent only once the last message
/// of the one before has arrived: the end of a burst must arrive without a later
/// message to carry it (the Tokio executor pauses a subscription's notifications while
/// it drains a backlog, and resumes them when rmw's queue is empty).
fn the_last_message_of_every_burst_arrives(make: MakeExecutor) {
    const BURSTS: i32 = 150;
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("bursts").as_str()).unwrap();
    let worker = node.create_worker::<Vec<i32>>(Vec::new());
    let topic = unique("bursts_topic");
    let last = Arc::new(std::sync::atomic::AtomicI32::new(-1));
    let total = (0..BURSTS).map(|b| b % 40 + 1).sum::<i32>();
    let (countdown, done) = Countdown::new(total as usize);
    let _sub = {
        let last = Arc::clone(&last);
        worker
            .create_subscription(
                topic.as_str().keep_last(1000).reliable(),
                move |log: &mut Vec<i32>, m: Int32| {
                    // A little work per message, so that a burst queues up behind it.
                    let busy = Instant::now();
                    while busy.elapsed() < Duration::from_micros(20) {}
                    log.push(m.data);
                    last.store(m.data, Ordering::SeqCst);
                    countdown.tick();
                },
            )
            .unwrap()
    };
    let publisher = matched_publisher(&node, &topic);
    let sender = std::thread::spawn(move || {
        let mut data = 0;
        let mut stuck = Vec::new();
        for burst in 0..BURSTS {
            for _ in 0..burst % 40 + 1 {
                publisher.publish(Int32 { data }).unwrap();
                data += 1;
            }
            let sent = Instant::now();
            while last.load(Ordering::SeqCst) != data - 1 {
                if sent.elapsed() > Duration::from_secs(2) {
                    stuck.push(burst);
                    break;
                }
                std::thread::sleep(Duration::from_micros(50 * (burst % 3) as u64));
            }
        }
        stuck
    });
    spin_until(&mut executor, done);
    let stuck = sender.join().unwrap();
    assert!(
        stuck.is_empty(),
        "bursts whose end waited for 2 s: {stuck:?}"
    );
    let log = worker.run(|log: &mut Vec<i32>| log.clone());
    let (mut log, notice) = executor.commands().create_notice(log);
    spin_until(&mut executor, notice);
    assert_eq!(
        log.try_recv().unwrap().unwrap(),
        (0..total).collect::<Vec<_>>()
    );
}

/// A transient-local message published before a subscription exists reaches it when
/// it matches, however that delivery falls against the subscription's registration,
/// for twenty subscriptions in turn (with nothing published after it).
fn a_transient_local_message_reaches_each_late_subscription(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("latched").as_str()).unwrap();
    let topic = unique("latched_topic");
    let qos = || topic.as_str().keep_last(1).reliable().transient_local();
    let publisher = node.create_publisher::<Int32>(qos()).unwrap();
    publisher.publish(Int32 { data: 42 }).unwrap();
    for _ in 0..20 {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let (countdown, done) = Countdown::new(1);
        let log = Arc::clone(&heard);
        let _late = node
            .create_subscription(qos(), move |m: Int32| {
                log.lock().unwrap().push(m.data);
                countdown.tick();
            })
            .unwrap();
        spin_until(&mut executor, done);
        assert_eq!(*heard.lock().unwrap(), vec![42]);
    }
}

fn a_worker_runs_its_work_in_order(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
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

fn work_sent_to_a_worker_before_it_is_dropped_still_runs(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
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

fn activity_listeners_see_every_callback_and_only_while_spinning(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
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

fn two_workers_run_blocking_callbacks_in_parallel(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
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

fn timers_fire_only_while_spinning(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("timer").as_str()).unwrap();
    let fired = Arc::new(AtomicUsize::new(0));
    let (countdown, done) = Countdown::new(5);
    let _timer = {
        let fired = Arc::clone(&fired);
        node.create_timer_repeating(Duration::from_millis(10), move || {
            fired.fetch_add(1, Ordering::SeqCst);
            countdown.tick();
        })
        .unwrap()
    };
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        fired.load(Ordering::SeqCst),
        0,
        "a timer fired while not spinning"
    );
    spin_until(&mut executor, done);
    assert!(fired.load(Ordering::SeqCst) >= 5);
}

fn timers_can_be_cancelled_and_reset_from_callbacks(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("timer_cancel").as_str())
        .unwrap();
    let fires = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let cancelled_at = Arc::new(Mutex::new(None::<Instant>));
    let reset_at = Arc::new(Mutex::new(None::<Instant>));
    let (countdown, done) = Countdown::new(6);
    // Fires every 10 ms; cancels itself on its third fire, from inside its callback.
    let fast = {
        let fires = Arc::clone(&fires);
        let cancelled_at = Arc::clone(&cancelled_at);
        node.create_timer_repeating(Duration::from_millis(10), move |timer: &Timer| {
            let mut fires = fires.lock().unwrap();
            fires.push(Instant::now());
            if fires.len() == 3 {
                timer.cancel().unwrap();
                *cancelled_at.lock().unwrap() = Some(Instant::now());
            }
            countdown.tick();
        })
        .unwrap()
    };
    // Resets it from another timer's callback, 150 ms later.
    let _resetter = {
        let fast = Arc::clone(&fast);
        let reset_at = Arc::clone(&reset_at);
        node.create_timer_oneshot(Duration::from_millis(150), move || {
            *reset_at.lock().unwrap() = Some(Instant::now());
            fast.reset().unwrap();
        })
        .unwrap()
    };
    spin_until(&mut executor, done);
    let fires = fires.lock().unwrap();
    let cancelled = cancelled_at.lock().unwrap().expect("cancelled");
    let reset = reset_at.lock().unwrap().expect("reset");
    assert!(
        fires.iter().all(|t| *t <= cancelled || *t >= reset),
        "a cancelled timer fired before it was reset"
    );
    assert!(
        fires.len() >= 6 && fires[3] >= reset,
        "the reset timer did not resume"
    );
}

fn timers_follow_their_mode_oneshot_inert_and_changed_from_inside(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("timer_modes").as_str())
        .unwrap();
    let period = Duration::from_millis(10);
    let counter = || Arc::new(AtomicUsize::new(0));
    let count = |c: &Arc<AtomicUsize>| {
        let c = Arc::clone(c);
        move || {
            c.fetch_add(1, Ordering::SeqCst);
        }
    };
    // Fires once, then stays inert.
    let once = counter();
    let _oneshot = node.create_timer_oneshot(period, count(&once)).unwrap();
    // Never fires until it gets a callback.
    let later = counter();
    let inert = node.create_timer_inert(period).unwrap();
    // Goes inert from inside its third call.
    let to_inert = counter();
    let _goes_inert = {
        let c = Arc::clone(&to_inert);
        node.create_timer_repeating(period, move |timer: &Timer| {
            if c.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                timer.set_inert();
            }
        })
        .unwrap()
    };
    // Turns into a oneshot from inside its second call: one more call after that.
    let (before, after) = (counter(), counter());
    let _goes_oneshot = {
        let c = Arc::clone(&before);
        let then = count(&after);
        let then = Mutex::new(Some(then));
        node.create_timer_repeating(period, move |timer: &Timer| {
            if c.fetch_add(1, Ordering::SeqCst) + 1 == 2 {
                if let Some(then) = then.lock().unwrap().take() {
                    timer.set_oneshot(then);
                }
            }
        })
        .unwrap()
    };
    let snapshot = || [&once, &later, &to_inert, &before, &after].map(|c| c.load(Ordering::SeqCst));
    spin_for(&mut executor, Duration::from_millis(300));
    assert_eq!(
        snapshot(),
        [1, 0, 3, 2, 1],
        "[oneshot, inert, to inert, before, after]"
    );
    // Nothing fires while not spinning; the inert timer, given a callback, runs on.
    inert.set_repeating(count(&later));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        snapshot(),
        [1, 0, 3, 2, 1],
        "a timer fired while not spinning"
    );
    spin_for(&mut executor, Duration::from_millis(200));
    let [once_n, later_n, to_inert_n, before_n, after_n] = snapshot();
    assert_eq!([once_n, to_inert_n, before_n, after_n], [1, 3, 2, 1]);
    assert!(
        (5..=25).contains(&later_n),
        "the timer given a callback fired {later_n} times in 200 ms at 10 ms"
    );
}

fn an_overrunning_timer_does_not_burst(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("timer_overrun").as_str())
        .unwrap();
    let starts = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let (countdown, done) = Countdown::new(8);
    let _timer = {
        let starts = Arc::clone(&starts);
        node.create_timer_repeating(Duration::from_millis(10), move || {
            starts.lock().unwrap().push(Instant::now());
            // Three periods' worth of work every time.
            std::thread::sleep(Duration::from_millis(30));
            countdown.tick();
        })
        .unwrap()
    };
    spin_until(&mut executor, done);
    let starts = starts.lock().unwrap();
    for pair in starts.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(25),
            "fires {gap:?} apart: missed periods were replayed as a burst"
        );
    }
}

fn a_zero_period_timer_shares_the_worker_and_the_spin_keeps_its_deadline(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("timer_zero").as_str()).unwrap();
    let topic = unique("timer_zero_topic");
    let fired = Arc::new(AtomicUsize::new(0));
    // Always due: rcl accepts a zero period.
    let _timer = {
        let fired = Arc::clone(&fired);
        node.create_timer_repeating(Duration::ZERO, move || {
            fired.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    let received = Arc::new(AtomicUsize::new(0));
    let _subscription = {
        let received = Arc::clone(&received);
        node.create_subscription(topic.as_str().keep_last(100).reliable(), move |_: Int32| {
            received.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    publish_to(&publisher, 1, 50);
    let started = Instant::now();
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(300)));
    let took = started.elapsed();
    assert_eq!(
        received.load(Ordering::SeqCst),
        50,
        "the always-due timer starved the subscription"
    );
    assert!(
        fired.load(Ordering::SeqCst) > 10,
        "the timer fired only {} times",
        fired.load(Ordering::SeqCst)
    );
    assert!(took < Duration::from_secs(2), "a 300 ms spin took {took:?}");
}

fn a_timer_dropped_during_spin_stops_firing(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("timer_drop").as_str()).unwrap();
    let fired = Arc::new(AtomicUsize::new(0));
    let timer = {
        let fired = Arc::clone(&fired);
        node.create_timer_repeating(Duration::from_millis(5), move || {
            fired.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    // Created while spinning: a second timer, from another thread.
    let late_fired = Arc::new(AtomicUsize::new(0));
    let (countdown, done) = Countdown::new(5);
    let dropper = {
        let node = node.clone();
        let fired = Arc::clone(&fired);
        let late_fired = Arc::clone(&late_fired);
        std::thread::spawn(move || {
            let deadline = Instant::now() + PATIENCE;
            while fired.load(Ordering::SeqCst) < 5 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            drop(timer);
            let at_drop = fired.load(Ordering::SeqCst);
            let late = node
                .create_timer_repeating(Duration::from_millis(20), move || {
                    late_fired.fetch_add(1, Ordering::SeqCst);
                    countdown.tick();
                })
                .unwrap();
            (at_drop, late)
        })
    };
    spin_until(&mut executor, done);
    let (at_drop, _late) = dropper.join().unwrap();
    let after = fired.load(Ordering::SeqCst);
    assert!(
        after <= at_drop + 1,
        "a dropped timer fired {} more times",
        after - at_drop
    );
    assert!(late_fired.load(Ordering::SeqCst) >= 5);
}

/// Publish 10 messages to a subscription (on the node or on a Worker) whose first
/// callback drops its last handle (and, on a Worker, the Worker's), then spin: the
/// callbacks that run after the drop.
fn callbacks_after_a_drop_from_inside(make: MakeExecutor, on_worker: bool) -> usize {
    let context = Context::default_from_env().unwrap();
    let mut executor = make(&context);
    let node = executor.create_node(unique("self_drop").as_str()).unwrap();
    let topic = unique("self_drop_topic");
    let options = || topic.as_str().keep_last(100).reliable();
    let count = Arc::new(AtomicUsize::new(0));
    // What the first callback drops: the subscription, and the Worker it is on.
    let doomed: Arc<Mutex<Option<Box<dyn std::any::Any + Send>>>> = Arc::default();
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

fn a_subscription_dropped_inside_its_own_callback_runs_no_more(make: MakeExecutor) {
    assert_eq!(callbacks_after_a_drop_from_inside(make, false), 0);
}

fn a_worker_dropped_inside_its_own_callback_runs_no_more(make: MakeExecutor) {
    assert_eq!(callbacks_after_a_drop_from_inside(make, true), 0);
}

macro_rules! suite {
    ($module:ident, $make:expr $(, $extra:ident)?) => {
        mod $module {
            use super::*;
            const MAKE: MakeExecutor = $make;
            $($extra!();)?

            #[test]
            fn pub_sub_delivers_every_message_in_order() {
                super::pub_sub_delivers_every_message_in_order(MAKE)
            }
            #[test]
            fn services_and_clients_answer_requests() {
                super::services_and_clients_answer_requests(MAKE)
            }
            #[test]
            fn worker_payload_is_mutated_by_several_callbacks() {
                super::worker_payload_is_mutated_by_several_callbacks(MAKE)
            }
            #[test]
            fn spin_once_timeout_and_halt_return_as_specified() {
                super::spin_once_timeout_and_halt_return_as_specified(MAKE)
            }
            #[test]
            fn spin_until_a_promise_resolves() {
                super::spin_until_a_promise_resolves(MAKE)
            }
            #[test]
            fn async_tasks_run_while_spinning() {
                super::async_tasks_run_while_spinning(MAKE)
            }
            #[test]
            fn dropping_an_entity_during_spin_stops_its_callbacks() {
                super::dropping_an_entity_during_spin_stops_its_callbacks(MAKE)
            }
            #[test]
            fn a_burst_while_not_spinning_is_delivered_up_to_the_depth() {
                super::a_burst_while_not_spinning_is_delivered_up_to_the_depth(MAKE)
            }
            #[test]
            fn a_worker_runs_its_work_in_order() {
                super::a_worker_runs_its_work_in_order(MAKE)
            }
            #[test]
            fn work_sent_to_a_worker_before_it_is_dropped_still_runs() {
                super::work_sent_to_a_worker_before_it_is_dropped_still_runs(MAKE)
            }
            #[test]
            fn activity_listeners_see_every_callback_and_only_while_spinning() {
                super::activity_listeners_see_every_callback_and_only_while_spinning(MAKE)
            }
            #[test]
            fn the_last_message_of_every_burst_arrives() {
                super::the_last_message_of_every_burst_arrives(MAKE)
            }
            #[test]
            fn a_transient_local_message_reaches_each_late_subscription() {
                super::a_transient_local_message_reaches_each_late_subscription(MAKE)
            }
            #[test]
            fn timers_can_be_cancelled_and_reset_from_callbacks() {
                super::timers_can_be_cancelled_and_reset_from_callbacks(MAKE)
            }
            #[test]
            fn timers_follow_their_mode_oneshot_inert_and_changed_from_inside() {
                super::timers_follow_their_mode_oneshot_inert_and_changed_from_inside(MAKE)
            }
            #[test]
            fn an_overrunning_timer_does_not_burst() {
                super::an_overrunning_timer_does_not_burst(MAKE)
            }
            #[test]
            fn a_timer_dropped_during_spin_stops_firing() {
                super::a_timer_dropped_during_spin_stops_firing(MAKE)
            }
            #[test]
            fn a_zero_period_timer_shares_the_worker_and_the_spin_keeps_its_deadline() {
                super::a_zero_period_timer_shares_the_worker_and_the_spin_keeps_its_deadline(
                    MAKE,
                )
            }
            #[test]
            fn a_halt_from_inside_a_callback_ends_the_spin_and_loses_nothing() {
                super::a_halt_from_inside_a_callback_ends_the_spin_and_loses_nothing(MAKE)
            }
            #[test]
            fn a_promise_resolved_inside_a_callback_ends_the_spin_and_loses_nothing() {
                super::a_promise_resolved_inside_a_callback_ends_the_spin_and_loses_nothing(
                    MAKE,
                )
            }
            #[test]
            fn parameter_services_answer_remote_gets_and_sets() {
                super::parameter_services_answer_remote_gets_and_sets(MAKE)
            }
            #[test]
            fn timers_fire_only_while_spinning() {
                super::timers_fire_only_while_spinning(MAKE)
            }
            #[test]
            fn two_workers_run_blocking_callbacks_in_parallel() {
                super::two_workers_run_blocking_callbacks_in_parallel(MAKE)
            }
        }
    };
}

/// Where the Tokio executor promises more than the basic one, which (measured with
/// rclrs 0.8) still ran 7 of 9 queued callbacks of a subscription dropped inside its
/// own callback, and more callbacks after a halt or a resolved promise from inside one:
/// it stops at once.
/// Expanded inside a `suite!` module.
macro_rules! stricter_than_basic {
    () => {
        #[test]
        fn a_subscription_dropped_inside_its_own_callback_runs_no_more() {
            super::a_subscription_dropped_inside_its_own_callback_runs_no_more(MAKE)
        }
        #[test]
        fn a_worker_dropped_inside_its_own_callback_runs_no_more() {
            super::a_worker_dropped_inside_its_own_callback_runs_no_more(MAKE)
        }
        #[test]
        fn a_halt_from_inside_a_callback_starts_no_further_callback() {
            super::a_halt_from_inside_a_callback_starts_no_further_callback(MAKE)
        }
        #[test]
        fn a_promise_resolved_inside_a_callback_starts_no_further_callback() {
            super::a_promise_resolved_inside_a_callback_starts_no_further_callback(MAKE)
        }
    };
}

suite!(basic, |context| context.create_basic_executor());
suite!(
    tokio,
    |context| context.create_tokio_executor(),
    stricter_than_basic
);
// Worker tasks moving between two pool threads as their load says.
suite!(
    tokio_follow_load,
    |context| support::follow_load_executor(context, "rclrs-tokio"),
    stricter_than_basic
);
// Every Worker on a thread of its own, asking for a core that does not exist and a
// SCHED_FIFO priority above Linux's 99: both refused (and logged once), and the
// contract holds all the same.
suite!(
    tokio_dedicated,
    |context| {
        let refused = DedicatedWorkers::all().cpus([4095]).fifo_priority(255);
        context
            .create_tokio_executor_with(TokioExecutorOptions::new().dedicated_workers(refused))
            .unwrap()
    },
    stricter_than_basic
);
