//! What a callback may do while the executor spins: create entities, which serve in the
//! same spin as entities created before it do, and spin another executor.

use super::*;
use std::any::Any;
use std::sync::atomic::AtomicBool;

/// Whatever a callback created, kept alive until the test ends.
type Created = Arc<Mutex<Vec<Box<dyn Any + Send>>>>;

pub(crate) fn entities_created_inside_a_callback_serve_in_the_same_spin(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("creator").as_str()).unwrap();
    let topic = unique("created_topic");
    let service = unique("created_service");
    let created: Created = Arc::default();
    // Four things must happen, all from entities born inside the first timer callback:
    // a subscription hears the stream, a timer fires, a new Worker runs its work, and a
    // service answers a client made in the same callback.
    let (countdown, done) = Countdown::new(4);
    let _creator = {
        let node = Arc::clone(&node);
        let created = Arc::clone(&created);
        let topic = topic.clone();
        let service = service.clone();
        node.clone()
            .create_timer_oneshot(Duration::from_millis(5), move || {
                let mut created = created.lock().unwrap();
                let heard = Arc::clone(&countdown);
                let once = AtomicBool::new(false);
                let subscription = node
                    .create_subscription(topic.as_str().keep_last(1000), move |_: Int32| {
                        if !once.swap(true, Ordering::SeqCst) {
                            heard.tick();
                        }
                    })
                    .unwrap();
                created.push(Box::new(subscription));
                let fired = Arc::clone(&countdown);
                let timer = node
                    .create_timer_oneshot(Duration::from_millis(5), move || fired.tick())
                    .unwrap();
                created.push(Box::new(timer));
                let worker = node.create_worker(0usize);
                let ran = Arc::clone(&countdown);
                drop(worker.run(move |count: &mut usize| {
                    *count += 1;
                    ran.tick();
                }));
                created.push(Box::new(worker));
                let (server, client) = support::echo_service(&node, &service);
                created.push(Box::new(server));
                let answered = Arc::clone(&countdown);
                let ready = client.notify_on_service_ready();
                let calling = Arc::clone(&client);
                drop(node.commands().run(async move {
                    let _ = ready.await;
                    let response: SetBool_Response = calling
                        .call(SetBool_Request { data: true })
                        .unwrap()
                        .await
                        .unwrap();
                    assert!(response.success);
                    answered.tick();
                }));
                created.push(Box::new(client));
            })
            .unwrap()
    };
    // The stream goes on until the subscription made inside the callback hears it.
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(1000))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = support::publish_until(publisher, &stop, Some(Duration::from_millis(2)));
    spin_until(&mut executor, done);
    stop.store(true, Ordering::Relaxed);
    publishing.join().unwrap();
    assert_eq!(created.lock().unwrap().len(), 5, "the callback ran once");
    created.lock().unwrap().clear();
}

pub(crate) fn a_callback_can_spin_another_executor(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut outer = make(&context);
    let inner = Arc::new(Mutex::new(make(&context)));
    let inner_node = inner
        .lock()
        .unwrap()
        .create_node(unique("inner").as_str())
        .unwrap();
    let inner_fired = Arc::new(AtomicUsize::new(0));
    let _inner_timer = {
        let fired = Arc::clone(&inner_fired);
        inner_node
            .create_timer_repeating(Duration::from_millis(5), move || {
                fired.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
    };
    let outer_node = outer.create_node(unique("outer").as_str()).unwrap();
    let (countdown, done) = Countdown::new(1);
    let _outer_timer = {
        let inner = Arc::clone(&inner);
        let fired = Arc::clone(&inner_fired);
        outer_node
            .create_timer_oneshot(Duration::from_millis(1), move || {
                // A blocking spin of a second executor, from inside this one's callback.
                let mut inner = inner.lock().unwrap();
                let deadline = Instant::now() + PATIENCE;
                while fired.load(Ordering::SeqCst) < 3 && Instant::now() < deadline {
                    let _ = inner.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
                }
                countdown.tick();
            })
            .unwrap()
    };
    spin_until(&mut outer, done);
    assert!(
        inner_fired.load(Ordering::SeqCst) >= 3,
        "the inner executor ran no timer"
    );
}
