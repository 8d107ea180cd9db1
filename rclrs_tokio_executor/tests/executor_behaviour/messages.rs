//! Messages and requests: subscriptions, services, parameter services, bursts,
//! late joiners, entities dropped while the executor spins, and two executors of one
//! process serving each other.

use super::*;

pub(crate) fn pub_sub_delivers_every_message_in_order(make: MakeExecutor) {
    let context = crate::support::isolated_context();
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

/// Subscriptions whose message type is named at run time (rclrs's dynamic
/// subscriptions), one on the node, one async and one on a Worker: each hears every
/// message, in order, with the data the publisher sent.
pub(crate) fn dynamic_subscriptions_deliver_every_message_in_order(make: MakeExecutor) {
    const COUNT: i32 = 100;
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("dynamic").as_str()).unwrap();
    let topic = unique("dynamic_topic");
    let type_name = || MessageTypeName::try_from("std_msgs/msg/Int32").unwrap();
    let qos = || topic.as_str().keep_last(1000).reliable();
    fn data(message: &DynamicMessage) -> i32 {
        match message.get("data") {
            Some(Value::Simple(SimpleValue::Int32(data))) => *data,
            other => panic!("an Int32's data, not {other:?}"),
        }
    }
    let (countdown, done) = Countdown::new(3 * COUNT as usize);
    let on_node = Arc::new(Mutex::new(Vec::new()));
    let on_async = Arc::new(Mutex::new(Vec::new()));
    let _on_node = {
        let (heard, countdown) = (Arc::clone(&on_node), Arc::clone(&countdown));
        node.create_dynamic_subscription(type_name(), qos(), move |m, _| {
            heard.lock().unwrap().push(data(&m));
            countdown.tick();
        })
        .unwrap()
    };
    let _on_async = {
        let (heard, countdown) = (Arc::clone(&on_async), Arc::clone(&countdown));
        node.create_async_dynamic_subscription(type_name(), qos(), move |m, _| {
            let (heard, countdown) = (Arc::clone(&heard), Arc::clone(&countdown));
            Box::pin(async move {
                heard.lock().unwrap().push(data(&m));
                countdown.tick();
            })
        })
        .unwrap()
    };
    let worker = node.create_worker(Vec::new());
    let _on_worker = worker
        .create_dynamic_subscription(type_name(), qos(), move |heard: &mut Vec<i32>, m, _| {
            heard.push(data(&m));
            countdown.tick();
        })
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(1000).reliable())
        .unwrap();
    publish_to(&publisher, 3, COUNT);
    spin_until(&mut executor, done);
    let on_worker = run_to_end(
        &mut executor,
        worker.run(|heard: &mut Vec<i32>| heard.clone()),
    );
    let expected = (0..COUNT).collect::<Vec<_>>();
    assert_eq!(*on_node.lock().unwrap(), expected, "on the node");
    assert_eq!(*on_async.lock().unwrap(), expected, "async");
    assert_eq!(on_worker.unwrap(), expected, "on a Worker");
}

pub(crate) fn services_and_clients_answer_requests(make: MakeExecutor) {
    let context = crate::support::isolated_context();
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

/// A service on a Worker (its callback mutates the Worker's payload) and an async
/// service on the node (its response awaits that Worker), called through `call_then`
/// and `call_then_async`: every response callback runs once, with the answer the
/// payload called for.
pub(crate) fn worker_and_async_services_answer_response_callbacks(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("services").as_str()).unwrap();
    let worker = node.create_worker(0_u32);
    let counting = unique("counting");
    let _counting = worker
        .create_service::<SetBool, _>(
            counting.as_str(),
            |calls: &mut u32, request: SetBool_Request| {
                *calls += 1;
                SetBool_Response {
                    success: request.data,
                    message: calls.to_string(),
                }
            },
        )
        .unwrap();
    let asking = unique("asking");
    let _asking = {
        let worker = Arc::clone(&worker);
        node.create_async_service::<SetBool, _>(asking.as_str(), move |request: SetBool_Request| {
            let calls = worker.run(|calls: &mut u32| *calls);
            async move {
                SetBool_Response {
                    success: !request.data,
                    message: format!("after {}", calls.await.unwrap()),
                }
            }
        })
        .unwrap()
    };
    let counting = node.create_client::<SetBool>(counting.as_str()).unwrap();
    let asking = node.create_client::<SetBool>(asking.as_str()).unwrap();
    for ready in [
        counting.notify_on_service_ready(),
        asking.notify_on_service_ready(),
    ] {
        spin_until(&mut executor, ready);
    }
    let heard = Arc::new(Mutex::new(Vec::new()));
    for data in [true, false, true] {
        let heard = Arc::clone(&heard);
        let answered = counting
            .call_then(
                SetBool_Request { data },
                move |response: SetBool_Response| {
                    heard
                        .lock()
                        .unwrap()
                        .push((response.success, response.message));
                },
            )
            .unwrap();
        spin_until(&mut executor, answered);
    }
    let answered = {
        let heard = Arc::clone(&heard);
        asking
            .call_then_async(
                SetBool_Request { data: true },
                move |response: SetBool_Response| async move {
                    heard
                        .lock()
                        .unwrap()
                        .push((response.success, response.message));
                },
            )
            .unwrap()
    };
    spin_until(&mut executor, answered);
    let heard = heard.lock().unwrap().clone();
    let expected = [(true, "1"), (false, "2"), (true, "3"), (false, "after 3")];
    assert_eq!(
        heard,
        expected.map(|(success, message)| (success, message.to_string()))
    );
}

/// Two servers under one name, each on its own node, and a client on each node: every
/// client hears every call answered. Both servers answer every request, and rmw gives
/// each client both clients' responses, dropping at the take those meant for the other
/// one; the Tokio executor once read such a drop as an empty queue, and left the
/// client's own response waiting for ever.
pub(crate) fn two_servers_under_one_name_answer_every_client(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let name = unique("twin_service");
    let nodes = [unique("twin_a"), unique("twin_b")]
        .map(|node| executor.create_node(node.as_str()).unwrap());
    let [(_service_a, client_a), (_service_b, client_b)] =
        [&nodes[0], &nodes[1]].map(|node| support::echo_service(node, &name));
    for client in [&client_a, &client_b] {
        spin_until(&mut executor, client.notify_on_service_ready());
    }
    for call in 0..20 {
        let client = if call % 2 == 0 { &client_a } else { &client_b };
        let data = call % 4 < 2;
        let response: Promise<SetBool_Response> = client.call(SetBool_Request { data }).unwrap();
        let response = support::run_within(&mut executor, Duration::from_secs(5), response)
            .unwrap_or_else(|| panic!("call {call} was never answered"))
            .unwrap();
        assert_eq!(response.success, data, "call {call}");
    }
}

/// A burst of messages whose async callbacks each call a service of the same node: every
/// call is answered. The service keeps rmw's default 10 requests, so the executor must
/// take requests while the burst's callbacks still run, not only after the last one:
/// the Tokio executor once ran the whole burst first, and half the calls were never
/// answered. The basic executor, which takes once per ready entity per wait, answers all
/// of them when it runs alone, but only half when other tests run beside it (its node
/// callbacks are async tasks, which then run as a batch before its next wait).
pub(crate) fn calls_from_a_burst_of_callbacks_are_all_answered(make: MakeExecutor) {
    const BURST: i32 = 20;
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("burst_calls").as_str())
        .unwrap();
    let (_service, client) = support::echo_service(&node, &unique("burst_calls_service"));
    spin_until(&mut executor, client.notify_on_service_ready());
    let topic = unique("burst_calls_topic");
    let answered = Arc::new(Mutex::new(Vec::new()));
    let (countdown, done) = Countdown::new(BURST as usize);
    let _sub = {
        let answered = Arc::clone(&answered);
        node.create_async_subscription(
            topic.as_str().keep_last(1000).reliable(),
            move |m: Int32| {
                let call = client.call(SetBool_Request {
                    data: m.data % 2 == 0,
                });
                let (answered, countdown) = (Arc::clone(&answered), Arc::clone(&countdown));
                async move {
                    let response: SetBool_Response = call.unwrap().await.unwrap();
                    answered.lock().unwrap().push((m.data, response.success));
                    countdown.tick();
                }
            },
        )
        .unwrap()
    };
    // The burst waits in rmw until the spin below: its callbacks run back to back.
    let publisher = matched_publisher(&node, &topic);
    for data in 0..BURST {
        publisher.publish(Int32 { data }).unwrap();
    }
    let _ = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(done)
            .timeout(Duration::from_secs(5)),
    );
    let mut answered = answered.lock().unwrap().clone();
    answered.sort_unstable();
    assert_eq!(
        answered,
        (0..BURST)
            .map(|data| (data, data % 2 == 0))
            .collect::<Vec<_>>(),
        "calls answered within 5 s"
    );
}

/// A node's parameter services (what `ros2 param get` and `set` call) answer while the
/// executor spins: a declared parameter is read remotely, and a remote set reaches the
/// node's own handle.
pub(crate) fn parameter_services_answer_remote_gets_and_sets(make: MakeExecutor) {
    use ros_env::rcl_interfaces::msg::{Parameter, ParameterValue};
    use ros_env::rcl_interfaces::srv::{
        GetParameters, GetParameters_Request, GetParameters_Response, SetParameters,
        SetParameters_Request, SetParameters_Response,
    };
    const PARAMETER_DOUBLE: u8 = 3;
    let context = crate::support::isolated_context();
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

pub(crate) fn dropping_an_entity_during_spin_stops_its_callbacks(make: MakeExecutor) {
    let context = crate::support::isolated_context();
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

pub(crate) fn a_burst_while_not_spinning_is_delivered_up_to_the_depth(make: MakeExecutor) {
    let context = crate::support::isolated_context();
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
pub(crate) fn the_last_message_of_every_burst_arrives(make: MakeExecutor) {
    const BURSTS: i32 = 150;
    let context = crate::support::isolated_context();
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
pub(crate) fn a_transient_local_message_reaches_each_late_subscription(make: MakeExecutor) {
    let context = crate::support::isolated_context();
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

pub(crate) fn two_executors_on_two_threads_serve_each_other(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut first = make(&context);
    let mut second = make(&context);
    let asking = first.create_node(unique("asking").as_str()).unwrap();
    let answering = second.create_node(unique("answering").as_str()).unwrap();
    let service = unique("across_service");
    let _server = answering
        .create_service::<SetBool, _>(service.as_str(), |request: SetBool_Request| {
            SetBool_Response {
                success: !request.data,
                message: String::new(),
            }
        })
        .unwrap();
    // The second executor spins on its own thread until the first one has its answers.
    let (finished_tx, finished) = oneshot::channel::<()>();
    let serving = std::thread::spawn(move || {
        let errors = second.spin(
            SpinOptions::default()
                .until_promise_resolved(finished)
                .timeout(PATIENCE),
        );
        assert!(errors.is_empty(), "the serving spin reported {errors:?}");
        second
    });
    let client = asking.create_client::<SetBool>(service.as_str()).unwrap();
    let (countdown, done) = Countdown::new(20);
    let calling = Arc::clone(&client);
    let ready = client.notify_on_service_ready();
    drop(asking.commands().run(async move {
        let _ = ready.await;
        for n in 0..20 {
            let response: SetBool_Response = calling
                .call(SetBool_Request { data: n % 2 == 0 })
                .unwrap()
                .await
                .unwrap();
            assert_eq!(response.success, n % 2 != 0);
            countdown.tick();
        }
    }));
    spin_until(&mut first, done);
    let _ = finished_tx.send(());
    serving.join().unwrap();
}
