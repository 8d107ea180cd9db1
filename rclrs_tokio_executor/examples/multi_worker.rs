//! Two Workers, each with its own state: a Worker's callbacks run one at a time and in
//! order, while the two Workers run in parallel on different threads.
//!
//! ```sh
//! cargo run --example multi_worker
//! ```

use rclrs::*;
use rclrs_tokio_executor::{CreateTokioExecutor, TokioExecutorOptions};
use ros_env::std_msgs::msg::Int32;
use std::time::Duration;

/// The state one Worker owns; no lock needed, only this Worker's callbacks touch it.
#[derive(Default)]
struct Averager {
    sum: i64,
    count: i64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = Context::default_from_env()?;
    let mut executor =
        context.create_tokio_executor_with(TokioExecutorOptions::new().worker_threads(2))?;
    let node = executor.create_node("multi_worker")?;

    let mut workers = Vec::new();
    let mut subscriptions = Vec::new();
    for topic in ["left", "right"] {
        let worker = node.create_worker(Averager::default());
        subscriptions.push(worker.create_subscription(
            topic,
            move |state: &mut Averager, msg: Int32| {
                state.sum += msg.data as i64;
                state.count += 1;
                // A slow callback only holds up this Worker.
                std::thread::sleep(Duration::from_millis(50));
                println!("{topic}: average {}", state.sum / state.count);
            },
        )?);
        workers.push(worker);
    }

    let left = node.create_publisher::<Int32>("left")?;
    let right = node.create_publisher::<Int32>("right")?;
    std::thread::spawn(move || {
        for data in 0.. {
            let _ = left.publish(Int32 { data });
            let _ = right.publish(Int32 { data: -data });
            std::thread::sleep(Duration::from_millis(100));
        }
    });

    executor.spin(SpinOptions::default()).first_error()?;
    Ok(())
}
