//! A talker and a listener on the Tokio executor.
//!
//! ```sh
//! cargo run --example minimal_pub_sub
//! ```

use rclrs::*;
use rclrs_tokio_executor::CreateTokioExecutor;
use ros_env::std_msgs::msg::String as StringMsg;
use std::time::Duration;

fn main() -> Result<(), RclrsError> {
    let context = Context::default_from_env()?;
    let mut executor = context.create_tokio_executor();
    let node = executor.create_node("minimal_pub_sub")?;

    let _subscription = node.create_subscription("chatter", |msg: StringMsg| {
        println!("heard: {}", msg.data);
    })?;
    let publisher = node.create_publisher::<StringMsg>("chatter")?;

    // Publish from a plain thread; the executor delivers on its own threads.
    std::thread::spawn(move || {
        for n in 0.. {
            let _ = publisher.publish(StringMsg {
                data: format!("hello {n}"),
            });
            std::thread::sleep(Duration::from_millis(500));
        }
    });

    executor.spin(SpinOptions::default()).first_error()
}
