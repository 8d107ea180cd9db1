//! A Worker that a stream keeps busy: its other entities still get their turn.

use super::*;
use std::sync::atomic::AtomicBool;
use support::busy_for;

/// Publishes to `topic` from a thread of its own, 10 messages a millisecond, until
/// dropped; counts what it sent.
struct Stream {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stream {
    fn start(node: &Node, topic: &str) -> Self {
        let publisher = matched_publisher(node, topic);
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (stop, sent) = (Arc::clone(&stop), Arc::clone(&sent));
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    for _ in 0..10 {
                        let data = sent.fetch_add(1, Ordering::SeqCst) as i32;
                        publisher.publish(Int32 { data }).unwrap();
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        Self {
            stop,
            sent,
            thread: Some(thread),
        }
    }

    /// Stop publishing; how many messages were sent.
    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.sent.load(Ordering::SeqCst)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A 10 ms timer beside a subscription whose 200 µs callbacks cannot keep up with a
/// stream of 10 messages a millisecond, both on the node's Worker: over one second of
/// spinning the timer still fires at least half of its 100 periods (the basic executor
/// fires all 100). A Worker on a thread of its own once fired 3 of them: nobody looked
/// at its timers while its mailbox never ran dry.
pub(crate) fn a_timer_keeps_firing_beside_a_stream_that_keeps_its_worker_busy(make: MakeExecutor) {
    let context = Context::default_from_env().unwrap();
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
    let stream = Stream::start(&node, &topic);
    spin_for(&mut executor, Duration::from_secs(1));
    let sent = stream.stop();
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
