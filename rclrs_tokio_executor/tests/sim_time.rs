//! Timers and sleeps that follow ROS time under `use_sim_time`, driven by a real clock
//! publisher, including `use_sim_time` switched off and on at run time, in one test whose
//! phases run in sequence. The node's `/clock` is remapped to a topic of this test's own
//! (see `support/sim_clock.rs`).

#[path = "support/mod.rs"]
mod support;

use rclrs::*;
use rclrs_tokio_executor::{sleep_until, CreateTokioExecutor};
use std::sync::{
    atomic::{AtomicI64, AtomicUsize, Ordering},
    Arc,
};
use std::time::{Duration, Instant};
use support::sim_clock::{SimClock, SEC};

fn counter() -> (Arc<AtomicUsize>, impl Fn() + Send + Sync + 'static) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&count);
    (count, move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
}

#[test]
fn timers_and_sleeps_follow_ros_time_from_clock() {
    let context = support::isolated_context();
    let mut executor = context.create_tokio_executor();
    let mut sim = SimClock::new("sim_time");
    let node = executor
        .create_node(
            support::unique("sim_time")
                .as_str()
                .arguments(sim.node_arguments()),
        )
        .unwrap();
    let clock = node.get_clock();
    assert!(
        clock.is_ros_time_override_enabled(),
        "use_sim_time must be on"
    );

    // A 100 ms (ROS time) timer, before any /clock message: time is 0 and nothing fires.
    let (fired, tick) = counter();
    let _timer = node
        .create_timer_repeating(Duration::from_millis(100).node_time(), tick)
        .unwrap();
    let commands = Arc::clone(executor.commands());
    let (stop_tx, stop_rx) = futures::channel::oneshot::channel::<()>();
    let spinning = std::thread::spawn(move || {
        let errors = executor.spin(SpinOptions::default().until_promise_resolved(stop_rx));
        assert!(errors.is_empty(), "{errors:?}");
        executor
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(fired.load(Ordering::SeqCst), 0, "fired with no /clock yet");

    let publisher_node = commands
        .create_node(support::unique("sim_clock_pub").as_str())
        .unwrap();
    sim.publish_from(&publisher_node, 1);
    sim.set(1000 * SEC);
    std::thread::sleep(Duration::from_millis(200));
    let wait_for_clock = Instant::now() + Duration::from_secs(10);
    while clock.now().nsec != 1000 * SEC {
        assert!(
            Instant::now() < wait_for_clock,
            "ROS time never followed /clock"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The timer started at ROS time 0, so jumping to 1000 s finds it far overdue: rcl
    // fires it once and skips the missed periods (no burst).
    let after_first_jump = fired.load(Ordering::SeqCst);
    assert!(
        after_first_jump <= 1,
        "a jump forward fired {after_first_jump} times"
    );

    // Faster, equal and slower than real time: every due fire happens.
    for (speed, wall, due) in [(10.0, 1.0, 100), (1.0, 1.0, 10), (0.1, 1.5, 1)] {
        let before = fired.load(Ordering::SeqCst);
        let sim_before = sim.now();
        sim.run(speed, Duration::from_secs_f64(wall));
        let fires = fired.load(Ordering::SeqCst) - before;
        let expected = ((sim.now() / (SEC / 10)) - (sim_before / (SEC / 10))) as usize;
        assert!(
            expected.abs_diff(due) <= 1,
            "test setup: {expected} periods elapsed at {speed}x, meant {due}"
        );
        assert!(
            fires.abs_diff(expected) <= 1,
            "at {speed}x: {fires} fires where {expected} were due"
        );
    }

    // Paused: /clock keeps coming with the same time; nothing fires.
    let before = fired.load(Ordering::SeqCst);
    sim.run(0.0, Duration::from_millis(500));
    assert_eq!(
        fired.load(Ordering::SeqCst),
        before,
        "fired while time was paused"
    );

    // Backwards by 5 s: rcl restarts the timer from the new time instead of waiting 5 s
    // of ROS time to catch up, so it keeps firing at its period.
    sim.set(sim.now() - 5 * SEC);
    std::thread::sleep(Duration::from_millis(50));
    let before = fired.load(Ordering::SeqCst);
    sim.run(1.0, Duration::from_secs(1));
    let fires = fired.load(Ordering::SeqCst) - before;
    assert!(
        (8..=11).contains(&fires),
        "after a backward jump: {fires} fires in 1 s"
    );

    // A ROS-time sleep that spans a backward jump wakes at the target, not before.
    let target = sim.now() + 3 * SEC;
    let woke_at = Arc::new(AtomicI64::new(0));
    let sleep_clock = clock.clone();
    let woke = Arc::clone(&woke_at);
    let sleeping = commands.run(async move {
        sleep_until(&sleep_clock, target).await.unwrap();
        woke.store(sleep_clock.now().nsec, Ordering::SeqCst);
    });
    std::thread::sleep(Duration::from_millis(100));
    sim.set(sim.now() + 2 * SEC);
    std::thread::sleep(Duration::from_millis(100));
    sim.set(sim.now() - 4 * SEC);
    std::thread::sleep(Duration::from_millis(100));
    sim.set(target - SEC / 2);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        woke_at.load(Ordering::SeqCst),
        0,
        "the sleep ended before its target"
    );
    // The same jump leaves the timer overdue, so it fires once more.
    let before = fired.load(Ordering::SeqCst);
    sim.set(target + SEC / 10);
    let deadline = Instant::now() + Duration::from_secs(5);
    while woke_at.load(Ordering::SeqCst) == 0 || fired.load(Ordering::SeqCst) == before {
        assert!(
            Instant::now() < deadline,
            "after a jump past the sleep's target: woke at {}, {} timer fires",
            woke_at.load(Ordering::SeqCst),
            fired.load(Ordering::SeqCst) - before
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(woke_at.load(Ordering::SeqCst) >= target);
    drop(sleeping);

    // use_sim_time switched off at run time: the same timer now runs on wall time. (Only
    // once that fire has run: rcl carries a timer's remaining period over a switch of
    // clock source, and for a timer overdue by d it makes the first call on the new
    // clock d + one period away, whichever executor runs it.)
    node.set_use_sim_time(false).unwrap();
    assert!(!clock.is_ros_time_override_enabled());
    // Counted against the periods that passed, which an overshooting sleep on a loaded
    // machine lengthens.
    let (before, started) = (fired.load(Ordering::SeqCst), Instant::now());
    std::thread::sleep(Duration::from_millis(600));
    let wall_fires = fired.load(Ordering::SeqCst) - before;
    let periods = (started.elapsed().as_millis() / 100) as usize;
    assert!(
        (periods / 2..=periods + 1).contains(&wall_fires),
        "on wall time: {wall_fires} fires in {periods} periods of 100 ms"
    );

    // And back on: ROS time is the last /clock value again, which stands still.
    node.set_use_sim_time(true).unwrap();
    assert!(clock.is_ros_time_override_enabled());
    std::thread::sleep(Duration::from_millis(50));
    let before = fired.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        fired.load(Ordering::SeqCst),
        before,
        "fired while /clock stood still"
    );
    let before = fired.load(Ordering::SeqCst);
    sim.run(1.0, Duration::from_millis(500));
    let fires = fired.load(Ordering::SeqCst) - before;
    assert!(
        (3..=6).contains(&fires),
        "sim time back on: {fires} fires in 0.5 s"
    );

    let _ = stop_tx.send(());
    let _executor = spinning.join().unwrap();
}
