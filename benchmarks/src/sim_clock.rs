//! A simulated clock private to one process, for the nodes that publish ROS time to
//! themselves (the sim-time timer benchmark and the stress suite's R6).
//!
//! `/clock` is one topic for the whole ROS domain: publishing it would move the ROS time
//! of every `use_sim_time` node there (a simulator's, another benchmark's), and theirs
//! would move this process's timers. So the node under test remaps its `/clock` to a
//! topic named after this process ([`PrivateClock::node_arguments`]); its time source
//! follows that topic exactly as it would follow `/clock`.

use ros_env::builtin_interfaces::msg::Time as TimeMsg;
use ros_env::rosgraph_msgs::msg::Clock as ClockMsg;

const SEC: i64 = 1_000_000_000;

/// The clock topic of one process.
pub struct PrivateClock {
    topic: String,
}

impl PrivateClock {
    /// `/<name>_<pid>/clock`.
    pub fn new(name: &str) -> Self {
        Self {
            topic: format!("/{name}_{}/clock", std::process::id()),
        }
    }

    /// Where to publish the time.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The ROS arguments of a node that follows this clock: `use_sim_time` on and its
    /// `/clock` remapped here.
    pub fn node_arguments(&self) -> [String; 5] {
        [
            "--ros-args".into(),
            "-p".into(),
            "use_sim_time:=true".into(),
            "-r".into(),
            format!("/clock:={}", self.topic),
        ]
    }
}

/// A clock message for `ns` nanoseconds of ROS time (negative times round down).
pub fn clock_message(ns: i64) -> ClockMsg {
    ClockMsg {
        clock: TimeMsg {
            sec: ns.div_euclid(SEC) as i32,
            nanosec: ns.rem_euclid(SEC) as u32,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_messages_split_seconds_and_nanoseconds() {
        let msg = clock_message(1_500_000_000);
        assert_eq!((msg.clock.sec, msg.clock.nanosec), (1, 500_000_000));
        let msg = clock_message(-1);
        assert_eq!((msg.clock.sec, msg.clock.nanosec), (-1, 999_999_999));
    }

    #[test]
    fn the_node_remaps_clock_to_the_private_topic() {
        let clock = PrivateClock::new("bench");
        let args = clock.node_arguments();
        assert_eq!(args[4], format!("/clock:={}", clock.topic()));
        assert!(clock.topic().starts_with("/bench_") && clock.topic().ends_with("/clock"));
    }
}
