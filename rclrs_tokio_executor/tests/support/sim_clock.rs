//! A simulated clock for tests under `use_sim_time`: a publisher of ROS time on a clock
//! topic private to one test.
//!
//! `/clock` is one topic for every process on the ROS domain, so a test that publishes
//! it would move the ROS time of every `use_sim_time` node there (another test's, or a
//! simulator's), and theirs would move its own. The node under test remaps `/clock` to
//! a name of its own instead ([`SimClock::node_arguments`]); its time source is the
//! same code either way.

use super::unique;
use rclrs::{IntoPrimitiveOptions, Node, Publisher};
use ros_env::builtin_interfaces::msg::Time as TimeMsg;
use ros_env::rosgraph_msgs::msg::Clock as ClockMsg;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

/// Nanoseconds in a second.
pub const SEC: i64 = 1_000_000_000;

/// Publishes ROS time on one private clock topic.
pub struct SimClock {
    topic: String,
    publisher: Option<Publisher<ClockMsg>>,
    now_ns: AtomicI64,
}

impl SimClock {
    /// A clock topic of its own, named after `name` (no publisher yet).
    pub fn new(name: &str) -> Self {
        Self {
            topic: format!("/{}/clock", unique(name)),
            publisher: None,
            now_ns: AtomicI64::new(0),
        }
    }

    /// The ROS arguments of a node that follows this clock: `use_sim_time` on, and its
    /// `/clock` remapped to this clock's topic.
    pub fn node_arguments(&self) -> [String; 5] {
        [
            "--ros-args".into(),
            "-p".into(),
            "use_sim_time:=true".into(),
            "-r".into(),
            format!("/clock:={}", self.topic),
        ]
    }

    /// Start publishing from `node`, once `subscriptions` subscriptions have matched.
    pub fn publish_from(&mut self, node: &Node, subscriptions: usize) {
        let publisher = node
            .create_publisher::<ClockMsg>(self.topic.as_str().keep_last(10).reliable())
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while publisher.get_subscription_count().unwrap() < subscriptions {
            assert!(Instant::now() < deadline, "{} never matched", self.topic);
            std::thread::sleep(Duration::from_millis(5));
        }
        self.publisher = Some(publisher);
    }

    /// Publish `ns` as the ROS time (negative times round down, as rcl reads them).
    pub fn set(&self, ns: i64) {
        self.now_ns.store(ns, Ordering::SeqCst);
        let publisher = self.publisher.as_ref().expect("publish_from comes first");
        publisher
            .publish(ClockMsg {
                clock: TimeMsg {
                    sec: ns.div_euclid(SEC) as i32,
                    nanosec: ns.rem_euclid(SEC) as u32,
                },
            })
            .unwrap();
    }

    /// The last time published.
    pub fn now(&self) -> i64 {
        self.now_ns.load(Ordering::SeqCst)
    }

    /// Advance ROS time at `speed` × wall time for `wall`, publishing at 500 Hz.
    pub fn run(&self, speed: f64, wall: Duration) {
        let start = self.now();
        let t0 = Instant::now();
        let step = Duration::from_millis(2);
        let mut n = 1u32;
        while t0.elapsed() < wall {
            if let Some(wait) = (t0 + step * n).checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            n += 1;
            let elapsed = (t0.elapsed().min(wall)).as_nanos() as f64;
            self.set(start + (speed * elapsed) as i64);
        }
        // Let the last message be processed.
        std::thread::sleep(Duration::from_millis(50));
    }
}
