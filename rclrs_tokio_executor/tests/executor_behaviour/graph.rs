//! The ROS graph: graph-change promises, and nodes leaving the graph when dropped,
//! from outside the executor or from inside one of their own callbacks.

use super::*;

/// A graph-change promise resolves when the graph changes, not at its polling period:
/// with a period of a minute, a publisher that appears on another node is seen within
/// seconds (rcl's graph guard condition, by push on the Tokio executor).
pub(crate) fn a_graph_change_resolves_its_promise_before_the_period(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let watcher = executor
        .create_node(unique("graph_watcher").as_str())
        .unwrap();
    let topic = format!("/{}", unique("graph_watched"));
    let checks = Arc::new(AtomicUsize::new(0));
    let seen = {
        let (counting, topic, checks) = (Arc::clone(&watcher), topic.clone(), Arc::clone(&checks));
        watcher.notify_on_graph_change_with_period(Duration::from_secs(60), move || {
            checks.fetch_add(1, Ordering::SeqCst);
            counting.count_publishers(&topic).unwrap() > 0
        })
    };
    // The watch starts, checks once (no publisher yet) and waits.
    support::spin_until(&mut executor, || checks.load(Ordering::SeqCst) > 0);
    let publishing = executor
        .create_node(unique("graph_publisher").as_str())
        .unwrap();
    let _publisher = publishing
        .create_publisher::<Int32>(topic.as_str())
        .unwrap();
    let started = Instant::now();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(seen)
            .timeout(Duration::from_secs(20)),
    );
    assert!(
        errors.is_empty(),
        "no graph change noticed in 20 s: {errors:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// A fresh executor with a node that watches the ROS graph.
fn executor_with_graph_observer(make: MakeExecutor) -> (Executor, Node) {
    let context = crate::support::isolated_context();
    let executor = make(&context);
    let observer = executor
        .create_node(unique("graph_observer").as_str())
        .unwrap();
    (executor, observer)
}

/// Whether `observer` sees a node named `name` in the graph.
fn lists_node(observer: &Node, name: &str) -> bool {
    let names = observer.get_node_names().unwrap();
    names.iter().any(|node| node.name == name)
}

pub(crate) fn a_dropped_node_leaves_the_graph_while_the_executor_spins(make: MakeExecutor) {
    let (mut executor, observer) = executor_with_graph_observer(make);
    let name = unique("graph_leaver");
    let leaver = executor.create_node(name.as_str()).unwrap();
    let listed = |observer: &Node| lists_node(observer, &name);
    // Spinning starts the leaver's graph-change task, which owns its graph guard
    // condition and, through it, the node handle. A client waiting for a service that
    // never comes listens for graph changes, so that guard condition is also waited on.
    let client = leaver
        .create_client::<SetBool>(unique("graph_leaver_service").as_str())
        .unwrap();
    let ready = client.notify_on_service_ready();
    support::spin_until(&mut executor, || listed(&observer));
    spin_for(&mut executor, Duration::from_millis(50));
    drop((ready, client, leaver));
    support::spin_until(&mut executor, || !listed(&observer));
    // The executor goes on serving the nodes it still has.
    let (_service, client) = support::echo_service(&observer, &unique("graph_stayer"));
    spin_until(&mut executor, client.notify_on_service_ready());
    let response: Promise<SetBool_Response> = client.call(SetBool_Request { data: true }).unwrap();
    assert!(run_to_end(&mut executor, response).unwrap().success);
}

/// A node whose only entity in the executor is its graph guard condition (no parameter
/// services; a graph-change listener made it join) leaves the graph once dropped: the
/// graph-change task ends with the node, and dropping the guard condition wakes the
/// Worker that holds it, which then drops it and with it the node handle (patch 0019).
/// Nothing else of the node would wake that Worker.
pub(crate) fn a_dropped_node_with_only_a_graph_listener_leaves_the_graph(make: MakeExecutor) {
    let (mut executor, observer) = executor_with_graph_observer(make);
    let name = unique("graph_listener_only");
    let leaver = executor
        .create_node(name.as_str().start_parameter_services(false))
        .unwrap();
    let listed = |observer: &Node| lists_node(observer, &name);
    let checks = Arc::new(AtomicUsize::new(0));
    let never = {
        let checks = Arc::clone(&checks);
        leaver.notify_on_graph_change(move || {
            checks.fetch_add(1, Ordering::SeqCst);
            false
        })
    };
    support::spin_until(&mut executor, || {
        checks.load(Ordering::SeqCst) > 0 && listed(&observer)
    });
    spin_for(&mut executor, Duration::from_millis(50));
    drop((never, leaver));
    support::spin_until(&mut executor, || !listed(&observer));
}

/// A node whose subscription's first callback drops the node itself, with its
/// subscription and its timer (their last handles), while the executor spins: the node
/// leaves the graph and the executor goes on serving its other node. Returns the
/// subscription's and the timer's callbacks that ran after the drop.
fn callbacks_after_a_node_dropped_itself(make: MakeExecutor) -> (usize, usize) {
    let (mut executor, observer) = executor_with_graph_observer(make);
    let name = unique("self_dropping_node");
    let leaver = executor.create_node(name.as_str()).unwrap();
    let topic = unique("self_dropping_node_topic");
    let options = || topic.as_str().keep_last(100).reliable();
    let (messages, ticks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let doomed: Arc<Mutex<Option<Box<dyn std::any::Any + Send>>>> = Arc::default();
    let subscription = {
        let (messages, doomed) = (Arc::clone(&messages), Arc::clone(&doomed));
        leaver
            .create_subscription(options(), move |_: Int32| {
                messages.fetch_add(1, Ordering::SeqCst);
                doomed.lock().unwrap().take();
            })
            .unwrap()
    };
    let timer = {
        let ticks = Arc::clone(&ticks);
        leaver
            .create_timer_repeating(Duration::from_millis(5), move || {
                ticks.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
    };
    support::spin_until(&mut executor, || {
        ticks.load(Ordering::SeqCst) > 0 && lists_node(&observer, &name)
    });
    let publisher = observer.create_publisher::<Int32>(options()).unwrap();
    *doomed.lock().unwrap() = Some(Box::new((subscription, timer, leaver)));
    publish_to(&publisher, 1, 10);
    support::spin_until(&mut executor, || doomed.lock().unwrap().is_none());
    let ticks_at_drop = ticks.load(Ordering::SeqCst);
    support::spin_until(&mut executor, || !lists_node(&observer, &name));
    spin_for(&mut executor, Duration::from_millis(50));
    let (_service, client) = support::echo_service(&observer, &unique("self_drop_stayer"));
    spin_until(&mut executor, client.notify_on_service_ready());
    let response: Promise<SetBool_Response> = client.call(SetBool_Request { data: true }).unwrap();
    assert!(run_to_end(&mut executor, response).unwrap().success);
    (
        messages.load(Ordering::SeqCst) - 1,
        ticks.load(Ordering::SeqCst) - ticks_at_drop,
    )
}

pub(crate) fn a_node_dropped_inside_its_own_callback_leaves_the_graph(make: MakeExecutor) {
    callbacks_after_a_node_dropped_itself(make);
}

/// The basic executor runs some of the dropped subscription's waiting messages after
/// the drop (4 to 7 of the other 9 in three runs); a Worker drops a node's entities
/// with their last handles.
pub(crate) fn a_node_dropped_inside_its_own_callback_runs_no_more(make: MakeExecutor) {
    assert_eq!(callbacks_after_a_node_dropped_itself(make), (0, 0));
}
