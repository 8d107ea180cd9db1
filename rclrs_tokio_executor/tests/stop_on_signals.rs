//! `TokioExecutorOptions::stop_on_signals`: SIGINT ends a running spin promptly, after
//! the callbacks in flight, and every later spin at once, with the typed error; an
//! executor that did not opt in keeps spinning as before. (Its own test binary: the
//! signal is process-wide and stays received.)

mod support;

use rclrs::*;
use rclrs_tokio_executor::{is_interrupted_error, CreateTokioExecutor, TokioExecutorOptions};
use ros_env::std_msgs::msg::Int32;
use signal_hook::consts::SIGINT;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{publish_until, unique, wait_matched};

#[test]
fn sigint_ends_the_spins_of_an_executor_that_stops_on_signals() {
    let context = support::isolated_context();
    let mut stopping = context
        .create_tokio_executor_with(TokioExecutorOptions::new().stop_on_signals(true))
        .unwrap();
    let mut other = context.create_tokio_executor();
    let node = stopping.create_node(unique("stops").as_str()).unwrap();
    let topic = unique("stops_topic");
    let heard = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&heard);
    let _subscription = node
        .create_subscription(topic.as_str().keep_last(100), move |_: Int32| {
            count.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100))
        .unwrap();
    wait_matched(&publisher, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = publish_until(publisher, &stop, Some(Duration::from_millis(1)));

    let spinning = std::thread::spawn(move || {
        let errors = stopping.spin(SpinOptions::default());
        (stopping, errors, Instant::now())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        heard.load(Ordering::SeqCst) > 0,
        "nothing ran before the signal"
    );
    let raised = Instant::now();
    signal_hook::low_level::raise(SIGINT).unwrap();
    let (mut stopping, errors, returned) = spinning.join().unwrap();
    assert!(
        returned - raised < Duration::from_millis(200),
        "spin returned {:?} after SIGINT",
        returned - raised
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(is_interrupted_error(&errors[0]), "{errors:?}");

    // Every later spin ends at once, as rclcpp's spins do after its context shut down.
    let start = Instant::now();
    let errors = stopping.spin(SpinOptions::default().timeout(Duration::from_secs(5)));
    assert!(start.elapsed() < Duration::from_millis(100));
    assert!(errors.iter().any(is_interrupted_error), "{errors:?}");

    // An executor that did not opt in is not affected.
    let start = Instant::now();
    let errors = other.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert!(!errors.iter().any(is_interrupted_error), "{errors:?}");

    stop.store(true, Ordering::Relaxed);
    publishing.join().unwrap();
}
