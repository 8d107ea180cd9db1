//! A Worker that a stream keeps busy: its other entities still get their turn.

use super::*;
use std::sync::atomic::AtomicBool;
use support::{busy_for, publish_until};

/// A 10 ms timer beside a subscription whose 200 µs callbacks cannot keep up with a
/// stream published as fast as a thread can, both on the node's Worker: over one second of
/// spinning the timer still fires at least half of its 100 periods (the basic executor
/// fires all 100). A Worker on a thread of its own once fired 3 of them: nobody looked
/// at its timers while its mailbox never ran dry.
pub(crate) fn a_timer_keeps_firing_beside_a_stream_that_keeps_its_worker_busy(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("busy_timer").as_str()).unwrap();
    let topic = unique("busy_timer_topic");
    let fired = Arc::new(AtomicUsize::new(0));
    let _timer = {
        let fired = Arc::clone(&fired);
        node.create_timer_repeating(Duration::from_millis(10), move || {
            fired.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    let received = Arc::new(AtomicUsize::new(0));
    let _subscription = {
        let received = Arc::clone(&received);
        node.create_subscription(topic.as_str().keep_last(10).reliable(), move |_: Int32| {
            received.fetch_add(1, Ordering::SeqCst);
            busy_for(Duration::from_micros(200));
        })
        .unwrap()
    };
    let stop = Arc::new(AtomicBool::new(false));
    // As fast as the publishing thread can go: sleeps of 100 µs stretched to about
    // 220 µs on a 2-core VM, which the Worker kept up with.
    let publishing = publish_until(matched_publisher(&node, &topic), &stop, None);
    spin_for(&mut executor, Duration::from_secs(1));
    stop.store(true, Ordering::SeqCst);
    let sent = publishing.join().unwrap();
    let received = received.load(Ordering::SeqCst);
    let fired = fired.load(Ordering::SeqCst);
    // rmw dropped what the Worker could not take (depth 10): it never caught up.
    assert!(
        received > 0 && sent > received + 100,
        "the stream did not keep the Worker busy: {received} of {sent} messages taken"
    );
    assert!(
        fired >= 50,
        "the timer fired {fired} times of 100 in one second beside a stream that keeps \
         its Worker busy ({received} messages taken)"
    );
}
