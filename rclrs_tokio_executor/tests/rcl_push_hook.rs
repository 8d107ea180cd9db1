//! The rclrs push-callback hook (patches/rclrs-0.8.0) on the real rmw, without any
//! executor in between: registration reports the backlog, then each arrival; a paused
//! registration reports nothing until resumed, then what was not taken; draining
//! stops at TAKE_FAILED; a publish in this process notifies inside itself and runs
//! the work deferred to its end before it returns; dropping entities while messages arrive never calls freed
//! memory (also run under valgrind by `teardown_is_clean_under_valgrind`).

mod support;

use rclrs::*;
use rclrs_tokio_executor::capture::CaptureRuntime;
use ros_env::std_msgs::msg::Int32;
use ros_env::std_srvs::srv::{Trigger, Trigger_Request, Trigger_Response};
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};
use support::ffi::execute_node_primitive;
use support::unique;

fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Record every (kind, count) the hook reports.
fn recorder() -> (OnReadyCallback, Arc<Mutex<Vec<usize>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let callback: OnReadyCallback = Arc::new(move |ready: ReadyKind, count: usize| {
        assert_eq!(ready, ReadyKind::Basic);
        sink.lock().unwrap().push(count);
    });
    (callback, events)
}

fn total(events: &Arc<Mutex<Vec<usize>>>) -> usize {
    events.lock().unwrap().iter().sum()
}

struct Fixture {
    runtime: CaptureRuntime,
    _executor: Executor,
    node: Node,
}

fn fixture(name: &str) -> Fixture {
    let context = support::isolated_context();
    let runtime = CaptureRuntime::new();
    let executor = context.create_executor(runtime.clone());
    let node = executor.create_node(unique(name).as_str()).unwrap();
    Fixture {
        runtime,
        _executor: executor,
        node,
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.runtime.clear();
    }
}

impl Fixture {
    /// The Waitable rclrs created last (the entity just made).
    fn last_waitable(&self) -> Waitable {
        self.runtime
            .take_last_waitable()
            .expect("rclrs hands every new entity to the runtime")
    }
}

/// A node subscription to a new topic that records what its callback received, its
/// Waitable, and a publisher it matched.
struct Stream {
    _subscription: Subscription<Int32>,
    waitable: Waitable,
    publisher: Publisher<Int32>,
    received: Arc<Mutex<Vec<i32>>>,
}

impl Fixture {
    fn stream(&self, name: &str, depth: u32) -> Stream {
        let topic = unique(name);
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&received);
        let subscription = self
            .node
            .create_subscription(
                topic.as_str().keep_last(depth).reliable(),
                move |m: Int32| sink.lock().unwrap().push(m.data),
            )
            .unwrap();
        let waitable = self.last_waitable();
        assert!(waitable.primitive().kind() == RclPrimitiveKind::Subscription);
        let publisher = self
            .node
            .create_publisher::<Int32>(topic.as_str().keep_last(depth).reliable())
            .unwrap();
        wait_until("the subscription to match", || {
            publisher.get_subscription_count().unwrap() == 1
        });
        Stream {
            _subscription: subscription,
            waitable,
            publisher,
            received,
        }
    }
}

/// Register a [`recorder`] for a subscription's, service's or client's arrivals.
fn registered(waitable: &Waitable) -> (OnReadyHandle, Arc<Mutex<Vec<usize>>>) {
    let (callback, events) = recorder();
    let handle = waitable
        .primitive()
        .register_on_ready(callback)
        .unwrap()
        .expect("subscriptions, services and clients have a push path");
    (handle, events)
}

/// Execute `waitable` `n` times, each taking a message.
fn take(waitable: &mut Waitable, n: usize) {
    for _ in 0..n {
        reset_take_failed();
        execute_node_primitive(waitable).unwrap();
        assert!(!take_failed_since_reset());
    }
}

#[test]
fn subscription_push_reports_backlog_then_each_arrival() {
    let f = fixture("hook_subscription");
    let stream = f.stream("hook_sub_topic", 100);
    let (mut waitable, publisher, received) = (stream.waitable, stream.publisher, stream.received);

    for data in 0..3 {
        publisher.publish(Int32 { data }).unwrap();
    }
    // Let all three reach the reader before registering.
    std::thread::sleep(Duration::from_millis(100));
    let (handle, events) = registered(&waitable);
    // The backlog is reported synchronously, from inside the registration, at once.
    assert_eq!(*events.lock().unwrap(), vec![3]);

    publisher.publish(Int32 { data: 3 }).unwrap();
    publisher.publish(Int32 { data: 4 }).unwrap();
    wait_until("two more notifications", || total(&events) == 5);
    assert_eq!(
        *events.lock().unwrap(),
        vec![3, 1, 1],
        "one notification per arrival"
    );

    // Each execution takes one message; the sixth finds the queue empty.
    take(&mut waitable, 5);
    reset_take_failed();
    execute_node_primitive(&mut waitable).unwrap();
    assert!(
        take_failed_since_reset(),
        "an empty queue reports TAKE_FAILED"
    );
    f.runtime.run_tasks();
    assert_eq!(*received.lock().unwrap(), vec![0, 1, 2, 3, 4]);

    // After the handle is dropped, arrivals are no longer reported.
    drop(handle);
    publisher.publish(Int32 { data: 5 }).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(total(&events), 5);
}

#[test]
fn a_paused_subscription_is_not_notified_and_resuming_reports_what_was_not_taken() {
    let f = fixture("hook_pause");
    let stream = f.stream("hook_pause_topic", 100);
    let (mut waitable, publisher, received) = (stream.waitable, stream.publisher, stream.received);
    let (handle, events) = registered(&waitable);
    publisher.publish(Int32 { data: 0 }).unwrap();
    wait_until("the first notification", || total(&events) == 1);

    assert!(handle.set_paused(true));
    for data in 1..6 {
        publisher.publish(Int32 { data }).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(total(&events), 1, "a paused subscription is not notified");
    // Take the message notified before the pause and two of the five that arrived
    // while paused: resuming reports the other three, from inside the call.
    take(&mut waitable, 3);
    assert!(handle.set_paused(false));
    assert_eq!(*events.lock().unwrap(), vec![1, 3]);

    publisher.publish(Int32 { data: 6 }).unwrap();
    wait_until("notifications again after resuming", || total(&events) == 5);
    take(&mut waitable, 4);
    f.runtime.run_tasks();
    assert_eq!(*received.lock().unwrap(), (0..7).collect::<Vec<_>>());
}

/// The order of events in `a_publish_in_this_process_notifies_inside_it_and_runs_deferred_work_before_returning`.
static PUBLISH_ORDER: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

fn note_deferred_work() {
    PUBLISH_ORDER
        .lock()
        .unwrap()
        .push(if rclrs::is_publishing() {
            "deferred work ran inside the publish"
        } else {
            "deferred work ran"
        });
}

/// Patch 0016: a publisher in this process delivers inside `publish()`, on the
/// publishing thread, so the push callback runs inside the publish; work it defers with
/// `after_publish` runs once the publish is over, before `publish()` returns. Outside a
/// publish (the backlog reported at registration) nothing is deferred.
#[test]
fn a_publish_in_this_process_notifies_inside_it_and_runs_deferred_work_before_returning() {
    let f = fixture("hook_publish_scope");
    let stream = f.stream("hook_publish_scope_topic", 100);
    let publisher = stream.publisher;
    publisher.publish(Int32 { data: 0 }).unwrap();
    std::thread::sleep(Duration::from_millis(100));

    let publishing_thread = std::thread::current().id();
    let callback: OnReadyCallback = Arc::new(move |_: ReadyKind, _: usize| {
        let mut order = PUBLISH_ORDER.lock().unwrap();
        order.push(
            match (
                std::thread::current().id() == publishing_thread,
                rclrs::is_publishing(),
            ) {
                (true, true) => "notified inside the publish",
                (true, false) => "notified outside a publish",
                (false, _) => "notified on another thread",
            },
        );
        drop(order);
        rclrs::after_publish(note_deferred_work);
        PUBLISH_ORDER.lock().unwrap().push("callback returned");
    });
    let _handle = stream
        .waitable
        .primitive()
        .register_on_ready(callback)
        .unwrap()
        .expect("subscriptions have a push path");
    assert_eq!(
        *PUBLISH_ORDER.lock().unwrap(),
        [
            "notified outside a publish",
            "deferred work ran",
            "callback returned"
        ],
        "the backlog is reported from the registration, outside any publish"
    );

    PUBLISH_ORDER.lock().unwrap().clear();
    assert!(!rclrs::is_publishing());
    publisher.publish(Int32 { data: 1 }).unwrap();
    PUBLISH_ORDER.lock().unwrap().push("publish returned");
    assert_eq!(
        *PUBLISH_ORDER.lock().unwrap(),
        [
            "notified inside the publish",
            "callback returned",
            "deferred work ran",
            "publish returned"
        ],
        "work deferred inside a publish runs when it is over, before publish() returns"
    );
}

#[test]
fn service_and_client_push_report_backlog_then_each_arrival() {
    let f = fixture("hook_service");
    let name = unique("hook_trigger");
    let served = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&served);
    let _service = f
        .node
        .create_service::<Trigger, _>(name.as_str(), move |_request: Trigger_Request| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            Trigger_Response {
                success: true,
                message: format!("served {n}"),
            }
        })
        .unwrap();
    let mut service_waitable = f.last_waitable();
    assert!(service_waitable.primitive().kind() == RclPrimitiveKind::Service);
    let client = f.node.create_client::<Trigger>(name.as_str()).unwrap();
    let mut client_waitable = f.last_waitable();
    assert!(client_waitable.primitive().kind() == RclPrimitiveKind::Client);
    wait_until("the service to be ready", || {
        client.service_is_ready().unwrap()
    });

    // Two requests before the service registers: reported as a backlog of 2.
    let mut first: Promise<Trigger_Response> = client.call(Trigger_Request::default()).unwrap();
    let mut second: Promise<Trigger_Response> = client.call(Trigger_Request::default()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (service_handle, service_events) = registered(&service_waitable);
    assert_eq!(*service_events.lock().unwrap(), vec![2]);

    // Serve both; the responses arrive before the client registers: a backlog of 2.
    for _ in 0..2 {
        reset_take_failed();
        execute_node_primitive(&mut service_waitable).unwrap();
        assert!(!take_failed_since_reset());
    }
    f.runtime.run_tasks();
    assert_eq!(served.load(Ordering::SeqCst), 2);
    std::thread::sleep(Duration::from_millis(200));
    let (client_handle, client_events) = registered(&client_waitable);
    assert_eq!(*client_events.lock().unwrap(), vec![2]);
    for _ in 0..2 {
        execute_node_primitive(&mut client_waitable).unwrap();
    }
    assert_eq!(first.try_recv().unwrap().unwrap().message, "served 0");
    assert_eq!(second.try_recv().unwrap().unwrap().message, "served 1");

    // Registered now: one notification per request, then per response.
    let mut third: Promise<Trigger_Response> = client.call(Trigger_Request::default()).unwrap();
    wait_until("the third request", || total(&service_events) == 3);
    assert_eq!(*service_events.lock().unwrap(), vec![2, 1]);
    execute_node_primitive(&mut service_waitable).unwrap();
    f.runtime.run_tasks();
    wait_until("the third response", || total(&client_events) == 3);
    assert_eq!(*client_events.lock().unwrap(), vec![2, 1]);
    execute_node_primitive(&mut client_waitable).unwrap();
    assert_eq!(third.try_recv().unwrap().unwrap().message, "served 2");
    drop(service_handle);
    drop(client_handle);
}

#[test]
fn draining_more_arrivals_than_the_depth_stops_at_take_failed() {
    let f = fixture("hook_overflow");
    let mut stream = f.stream("hook_overflow_topic", 10);
    let (_handle, events) = registered(&stream.waitable);
    for data in 0..25 {
        stream.publisher.publish(Int32 { data }).unwrap();
    }
    wait_until("25 notifications", || total(&events) == 25);

    // 25 arrivals were counted, but the QoS depth kept only the last 10.
    let mut taken = 0;
    for _ in 0..total(&events) {
        reset_take_failed();
        execute_node_primitive(&mut stream.waitable).unwrap();
        if take_failed_since_reset() {
            break;
        }
        taken += 1;
    }
    f.runtime.run_tasks();
    assert_eq!(taken, 10);
    assert_eq!(
        *stream.received.lock().unwrap(),
        (15..25).collect::<Vec<_>>()
    );
}

/// How many create/register/drop cycles the teardown test runs.
fn teardown_cycles() -> usize {
    std::env::var("RCLRS_TOKIO_TEARDOWN_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

#[test]
fn dropping_entities_while_messages_arrive_never_calls_freed_memory() {
    let f = fixture("hook_teardown");
    let topic = unique("hook_teardown_topic");
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = f
        .node
        .create_publisher::<Int32>(topic.as_str().keep_last(10).best_effort())
        .unwrap();
    let publishing = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut data = 0;
            while !stop.load(Ordering::Relaxed) {
                publisher.publish(Int32 { data }).unwrap();
                data += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };

    let late_calls = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    for cycle in 0..teardown_cycles() {
        let subscription = f
            .node
            .create_subscription(topic.as_str().keep_last(10).best_effort(), |_m: Int32| {})
            .unwrap();
        let waitable = f.last_waitable();
        let registered = Arc::new(AtomicBool::new(true));
        let callback: OnReadyCallback = {
            let registered = Arc::clone(&registered);
            let late_calls = Arc::clone(&late_calls);
            let calls = Arc::clone(&calls);
            Arc::new(move |_ready, _count| {
                calls.fetch_add(1, Ordering::Relaxed);
                if !registered.load(Ordering::SeqCst) {
                    late_calls.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let handle = waitable
            .primitive()
            .register_on_ready(callback)
            .unwrap()
            .unwrap();
        std::thread::sleep(Duration::from_micros((cycle % 7) as u64 * 300));
        // Every drop order the executor could produce must be safe.
        match cycle % 3 {
            0 => {
                drop(handle);
                registered.store(false, Ordering::SeqCst);
                drop(waitable);
                drop(subscription);
            }
            1 => {
                drop(subscription);
                drop(waitable);
                drop(handle);
                registered.store(false, Ordering::SeqCst);
            }
            _ => {
                drop(waitable);
                drop(handle);
                registered.store(false, Ordering::SeqCst);
                drop(subscription);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    publishing.join().unwrap();
    assert_eq!(
        late_calls.load(Ordering::Relaxed),
        0,
        "a callback ran after its handle was dropped"
    );
    assert!(
        calls.load(Ordering::Relaxed) > 0,
        "the stress saw no notification at all"
    );
    drop(f);
    if std::env::var_os("RCLRS_TOKIO_UNDER_VALGRIND").is_some() {
        // Alone in its process: the context and its DDS participant are gone before the
        // process exits (a participant alive at exit races its receive threads against
        // the library's static destructors, which valgrind reports as Fast DDS's).
        let dds_threads = support::thread_names()
            .into_iter()
            // The shared-memory watchdog is Fast DDS's own, for the whole process.
            .filter(|name| name.starts_with("dds.") && name != "dds.shm.wdog")
            .collect::<Vec<_>>();
        assert_eq!(
            dds_threads,
            Vec::<String>::new(),
            "the DDS participant outlived the test"
        );
    }
}

/// How long the teardown test may run under valgrind (it takes seconds).
const VALGRIND_PATIENCE: Duration = Duration::from_secs(300);

/// Run the teardown test in a child process under valgrind, bounded in time, and fail
/// on any invalid read, write or free: a callback into freed memory shows up there. A
/// child still running after [`VALGRIND_PATIENCE`] fails the test with its threads'
/// stacks (through valgrind's gdb server), so a hang says where it hangs.
#[test]
fn teardown_is_clean_under_valgrind() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    if std::env::var_os("RCLRS_TOKIO_UNDER_VALGRIND").is_some() {
        return; // this is the child
    }
    let valgrind = Command::new("valgrind").arg("--version").output();
    assert!(
        valgrind.is_ok(),
        "valgrind is required for this test (apt-get install valgrind)"
    );
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new("valgrind")
        .args([
            // Hand valgrind's one-thread-at-a-time lock round, so a middleware thread
            // that keeps running cannot starve the test's own threads.
            "--fair-sched=yes",
            "--error-exitcode=97",
            "--errors-for-leak-kinds=none",
            "--leak-check=no",
            "--track-origins=no",
            "--vgdb=yes",
        ])
        .arg(&exe)
        .args([
            "--exact",
            "dropping_entities_while_messages_arrive_never_calls_freed_memory",
            "--test-threads=1",
        ])
        .env("RCLRS_TOKIO_UNDER_VALGRIND", "1")
        .env("RCLRS_TOKIO_TEARDOWN_CYCLES", "100")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Read on a thread of its own, so that the wait below can give up.
    let mut pipe = child.stderr.take().unwrap();
    let reading = std::thread::spawn(move || {
        let mut stderr = String::new();
        let _ = pipe.read_to_string(&mut stderr);
        stderr
    });
    let deadline = Instant::now() + VALGRIND_PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let Some(status) = status else {
        let stacks = Command::new("gdb")
            .args(["-batch", "-nx", "-ex", "set pagination off", "-ex"])
            .arg(format!("target remote | vgdb --pid={}", child.id()))
            .args(["-ex", "thread apply all bt"])
            .arg(&exe)
            .stdin(Stdio::null())
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_else(|err| format!("(no stacks: gdb failed: {err})"));
        let _ = child.kill();
        let _ = child.wait();
        let stderr = reading.join().unwrap_or_default();
        panic!(
            "the teardown test under valgrind still ran after {VALGRIND_PATIENCE:?}; \
             its threads:\n{stacks}\nthe end of its stderr:\n{}",
            last_lines(&stderr, 40)
        );
    };
    let stderr = reading.join().unwrap();
    let invalid: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            l.contains("Invalid read")
                || l.contains("Invalid write")
                || l.contains("Invalid free")
                || l.contains("Jump to the invalid address")
        })
        .collect();
    assert!(
        invalid.is_empty(),
        "valgrind found memory errors:\n{stderr}"
    );
    assert!(
        status.success() || status.code() == Some(97),
        "the teardown test failed under valgrind ({status}):\n{}",
        last_lines(&stderr, 40)
    );
}

/// The last `n` lines of `text`, in order.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
