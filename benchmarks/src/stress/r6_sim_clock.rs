//! R6, an adversarial `/clock` under `use_sim_time`: a node-time timer (10 ms of ROS
//! time) while `/clock` moves forward, jumps backwards, jumps a million seconds
//! forward, goes to zero, stalls, repeats one stamp, and arrives at 10 kHz. Each phase's
//! fire count is reported; the harness compares them with the basic executor's, which
//! follows rcl's timer semantics. On its own a run checks what rcl promises whatever
//! the executor: no fire while time stands still, and no burst after a jump. The clock
//! is private to the process (`sim_clock.rs`).

use super::common::{unique, BoxError, CaseResult, ExecutorKind, Scale};
use crate::sim_clock::{clock_message, PrivateClock};
use rclrs::*;
use ros_env::rosgraph_msgs::msg::Clock as ClockMsg;
use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};
use std::time::{Duration, Instant};

const SEC: i64 = 1_000_000_000;
const PERIOD: Duration = Duration::from_millis(10);
/// Wall time between `/clock` messages, except in the 10 kHz phase: time for the tick
/// to run before the next step even on a loaded machine (a tick still pending when the
/// next period is due coalesces with it, in either executor, and the phase counts one
/// fire fewer; 2 ms lost up to 8 of 50 under `make test`).
const STEP_WALL: Duration = Duration::from_millis(5);

struct SimClock {
    publisher: Publisher<ClockMsg>,
    now: i64,
}

impl SimClock {
    fn set(&mut self, ns: i64) {
        self.now = ns;
        let _ = self.publisher.publish(clock_message(ns));
    }

    /// `steps` messages, each `by` later than the last, `wall` apart.
    fn advance(&mut self, steps: u32, by: i64, wall: Duration) {
        let start = Instant::now();
        for n in 1..=steps {
            self.set(self.now + by);
            if let Some(wait) = (start + wall * n).checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
    }
}

/// Run R6 against `kind`.
pub fn run(kind: ExecutorKind, scale: Scale) -> Result<CaseResult, BoxError> {
    let mut result = CaseResult::new("r6_sim_clock", kind, scale);
    let fast_seconds = scale.pick(1, 3);
    let context = Context::default_from_env()?;
    let (mut executor, _) = kind.create(&context)?;
    let clock = PrivateClock::new("r6");
    let node = executor.create_node(unique("r6").as_str().arguments(clock.node_arguments()))?;
    let fired = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&fired);
    let _timer = node.create_timer_repeating(PERIOD.node_time(), move || {
        count.fetch_add(1, Ordering::SeqCst);
    })?;
    let clock_node = executor.create_node(unique("r6_clock").as_str())?;
    let mut sim = SimClock {
        publisher: clock_node
            .create_publisher::<ClockMsg>(clock.topic().keep_last(10).reliable())?,
        now: 0,
    };
    let commands = Arc::clone(executor.commands());
    let spinning = std::thread::spawn(move || executor.spin(SpinOptions::default()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while sim.publisher.get_subscription_count().unwrap_or(0) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    sim.set(100 * SEC);
    std::thread::sleep(Duration::from_millis(200));
    fired.store(0, Ordering::SeqCst);

    let ms = 1_000_000;
    let mut phase = |name: &str, act: &mut dyn FnMut(&mut SimClock)| -> u64 {
        let before = fired.load(Ordering::SeqCst);
        act(&mut sim);
        std::thread::sleep(Duration::from_millis(100));
        let fires = fired.load(Ordering::SeqCst) - before;
        result.figure(&format!("{name}_fires"), fires);
        fires
    };
    let forward = phase("forward_50_periods", &mut |s| {
        s.advance(50, 10 * ms, STEP_WALL)
    });
    let backwards = phase("backwards_jump_then_20_periods", &mut |s| {
        s.set(50 * SEC);
        s.advance(20, 10 * ms, STEP_WALL)
    });
    let huge = phase("huge_forward_jump_then_20_periods", &mut |s| {
        s.set(s.now + 1_000_000 * SEC);
        s.advance(20, 10 * ms, STEP_WALL)
    });
    let zero = phase("zero_then_10_periods", &mut |s| {
        s.set(0);
        s.advance(10, 10 * ms, STEP_WALL)
    });
    let stall = phase("stall_300ms", &mut |_| {
        std::thread::sleep(Duration::from_millis(300))
    });
    let repeated = phase("repeated_stamp_x50", &mut |s| s.advance(50, 0, STEP_WALL));
    let fast_periods = fast_seconds * 100;
    let fast = phase("clock_at_10kHz", &mut |s| {
        s.advance(
            fast_seconds as u32 * 10_000,
            ms / 10,
            Duration::from_micros(100),
        )
    });
    commands.halt_spinning();
    let spun = spinning.join();

    result.check(stall == 0, || {
        format!("{stall} fires while /clock stood still")
    });
    result.check(repeated <= 1, || {
        format!("{repeated} fires while /clock repeated one stamp")
    });
    result.check(huge <= 22, || {
        format!("{huge} fires after a huge forward jump and 20 periods: a burst")
    });
    result.check((45..=51).contains(&forward), || {
        format!("{forward} fires over 50 periods")
    });
    result.check(backwards <= 21, || {
        format!("{backwards} fires after a backward jump and 20 periods")
    });
    result.check(zero <= 11, || {
        format!("{zero} fires after time went to zero and 10 periods")
    });
    result.check(
        fast >= fast_periods * 8 / 10 && fast <= fast_periods + 2,
        || format!("{fast} fires over {fast_periods} periods of 10 kHz /clock"),
    );
    result.check(matches!(&spun, Ok(errors) if errors.is_empty()), || {
        format!("the spin ended with {spun:?}")
    });
    Ok(result)
}
