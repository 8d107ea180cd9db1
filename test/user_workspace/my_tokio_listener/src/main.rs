//! Publishes `count` messages (default 20) of its workspace's own type
//! (`my_interfaces/msg/Greeting`) on a topic of its own and listens to them on the Tokio
//! executor, then prints one JSON line: `{"sent": 20, "heard": 20}`. Exits 1 if it heard
//! fewer, or one out of order, within 20 s.

use rclrs::*;
use rclrs_tokio_executor::CreateTokioExecutor;
use ros_env::my_interfaces::msg::Greeting;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() -> Result<(), RclrsError> {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(20);
    let topic = format!("my_tokio_listener_{}", std::process::id());

    let context = Context::default_from_env()?;
    let mut executor = context.create_tokio_executor();
    let node = executor.create_node("my_tokio_listener")?;
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&heard);
    let _subscription = node.create_subscription(
        topic.as_str().keep_last(100).reliable(),
        move |greeting: Greeting| {
            // In order: the n-th greeting heard is greeting number n.
            let n = counter.load(Ordering::SeqCst) as u32;
            if greeting.number == n && greeting.to == "world" {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        },
    )?;
    let publisher = node.create_publisher::<Greeting>(topic.as_str().keep_last(100).reliable())?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while publisher.get_subscription_count()? < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for number in 0..count as u32 {
        publisher.publish(Greeting {
            number,
            to: "world".into(),
        })?;
    }
    while heard.load(Ordering::SeqCst) < count && Instant::now() < deadline {
        executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)));
    }
    let heard = heard.load(Ordering::SeqCst);
    println!("{{\"sent\": {count}, \"heard\": {heard}}}");
    if heard < count {
        std::process::exit(1);
    }
    Ok(())
}
