//! Timers: only while spinning, cancel and reset, oneshot and inert modes, overruns,
//! zero periods, drops during a spin, and ROS time that goes back or switches source.

use super::*;

pub(crate) fn timers_fire_only_while_spinning(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("timer").as_str()).unwrap();
    let fired = Arc::new(AtomicUsize::new(0));
    let (countdown, done) = Countdown::new(5);
    let _timer = {
        let fired = Arc::clone(&fired);
        node.create_timer_repeating(Duration::from_millis(10), move || {
            fired.fetch_add(1, Ordering::SeqCst);
            countdown.tick();
        })
        .unwrap()
    };
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        fired.load(Ordering::SeqCst),
        0,
        "a timer fired while not spinning"
    );
    spin_until(&mut executor, done);
    assert!(fired.load(Ordering::SeqCst) >= 5);
}

pub(crate) fn timers_can_be_cancelled_and_reset_from_callbacks(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("timer_cancel").as_str())
        .unwrap();
    let fires = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let cancelled_at = Arc::new(Mutex::new(None::<Instant>));
    let reset_at = Arc::new(Mutex::new(None::<Instant>));
    let (countdown, done) = Countdown::new(6);
    // Fires every 10 ms; cancels itself on its third fire, from inside its callback.
    let fast = {
        let fires = Arc::clone(&fires);
        let cancelled_at = Arc::clone(&cancelled_at);
        node.create_timer_repeating(Duration::from_millis(10), move |timer: &Timer| {
            let mut fires = fires.lock().unwrap();
            fires.push(Instant::now());
            if fires.len() == 3 {
                timer.cancel().unwrap();
                *cancelled_at.lock().unwrap() = Some(Instant::now());
            }
            countdown.tick();
        })
        .unwrap()
    };
    // Resets it from another timer's callback, 150 ms later.
    let _resetter = {
        let fast = Arc::clone(&fast);
        let reset_at = Arc::clone(&reset_at);
        node.create_timer_oneshot(Duration::from_millis(150), move || {
            *reset_at.lock().unwrap() = Some(Instant::now());
            fast.reset().unwrap();
        })
        .unwrap()
    };
    spin_until(&mut executor, done);
    let fires = fires.lock().unwrap();
    let cancelled = cancelled_at.lock().unwrap().expect("cancelled");
    let reset = reset_at.lock().unwrap().expect("reset");
    assert!(
        fires.iter().all(|t| *t <= cancelled || *t >= reset),
        "a cancelled timer fired before it was reset"
    );
    assert!(
        fires.len() >= 6 && fires[3] >= reset,
        "the reset timer did not resume"
    );
}

pub(crate) fn timers_follow_their_mode_oneshot_inert_and_changed_from_inside(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("timer_modes").as_str())
        .unwrap();
    let period = Duration::from_millis(10);
    let counter = || Arc::new(AtomicUsize::new(0));
    let count = |c: &Arc<AtomicUsize>| {
        let c = Arc::clone(c);
        move || {
            c.fetch_add(1, Ordering::SeqCst);
        }
    };
    // Fires once, then stays inert.
    let once = counter();
    let _oneshot = node.create_timer_oneshot(period, count(&once)).unwrap();
    // Never fires until it gets a callback.
    let later = counter();
    let inert = node.create_timer_inert(period).unwrap();
    // Goes inert from inside its third call.
    let to_inert = counter();
    let _goes_inert = {
        let c = Arc::clone(&to_inert);
        node.create_timer_repeating(period, move |timer: &Timer| {
            if c.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                timer.set_inert();
            }
        })
        .unwrap()
    };
    // Turns into a oneshot from inside its second call: one more call after that.
    let (before, after) = (counter(), counter());
    let _goes_oneshot = {
        let c = Arc::clone(&before);
        let then = count(&after);
        let then = Mutex::new(Some(then));
        node.create_timer_repeating(period, move |timer: &Timer| {
            if c.fetch_add(1, Ordering::SeqCst) + 1 == 2 {
                if let Some(then) = then.lock().unwrap().take() {
                    timer.set_oneshot(then);
                }
            }
        })
        .unwrap()
    };
    let snapshot = || [&once, &later, &to_inert, &before, &after].map(|c| c.load(Ordering::SeqCst));
    spin_for(&mut executor, Duration::from_millis(300));
    assert_eq!(
        snapshot(),
        [1, 0, 3, 2, 1],
        "[oneshot, inert, to inert, before, after]"
    );
    // Nothing fires while not spinning; the inert timer, given a callback, runs on.
    inert.set_repeating(count(&later));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        snapshot(),
        [1, 0, 3, 2, 1],
        "a timer fired while not spinning"
    );
    spin_for(&mut executor, Duration::from_millis(200));
    let [once_n, later_n, to_inert_n, before_n, after_n] = snapshot();
    assert_eq!([once_n, to_inert_n, before_n, after_n], [1, 3, 2, 1]);
    assert!(
        (5..=25).contains(&later_n),
        "the timer given a callback fired {later_n} times in 200 ms at 10 ms"
    );
}

pub(crate) fn an_overrunning_timer_does_not_burst(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("timer_overrun").as_str())
        .unwrap();
    let starts = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let (countdown, done) = Countdown::new(8);
    let _timer = {
        let starts = Arc::clone(&starts);
        node.create_timer_repeating(Duration::from_millis(10), move || {
            starts.lock().unwrap().push(Instant::now());
            // Three periods' worth of work every time.
            std::thread::sleep(Duration::from_millis(30));
            countdown.tick();
        })
        .unwrap()
    };
    spin_until(&mut executor, done);
    let starts = starts.lock().unwrap();
    for pair in starts.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(25),
            "fires {gap:?} apart: missed periods were replayed as a burst"
        );
    }
}

pub(crate) fn a_zero_period_timer_shares_the_worker_and_the_spin_keeps_its_deadline(
    make: MakeExecutor,
) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("timer_zero").as_str()).unwrap();
    let topic = unique("timer_zero_topic");
    let fired = Arc::new(AtomicUsize::new(0));
    // Always due: rcl accepts a zero period.
    let _timer = {
        let fired = Arc::clone(&fired);
        node.create_timer_repeating(Duration::ZERO, move || {
            fired.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    let received = Arc::new(AtomicUsize::new(0));
    let _subscription = {
        let received = Arc::clone(&received);
        node.create_subscription(topic.as_str().keep_last(100).reliable(), move |_: Int32| {
            received.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    let publisher = node
        .create_publisher::<Int32>(topic.as_str().keep_last(100).reliable())
        .unwrap();
    publish_to(&publisher, 1, 50);
    let started = Instant::now();
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(300)));
    let took = started.elapsed();
    assert_eq!(
        received.load(Ordering::SeqCst),
        50,
        "the always-due timer starved the subscription"
    );
    assert!(
        fired.load(Ordering::SeqCst) > 10,
        "the timer fired only {} times",
        fired.load(Ordering::SeqCst)
    );
    assert!(took < Duration::from_secs(2), "a 300 ms spin took {took:?}");
}

pub(crate) fn a_timer_dropped_during_spin_stops_firing(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor.create_node(unique("timer_drop").as_str()).unwrap();
    let fired = Arc::new(AtomicUsize::new(0));
    let timer = {
        let fired = Arc::clone(&fired);
        node.create_timer_repeating(Duration::from_millis(5), move || {
            fired.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    // Created while spinning: a second timer, from another thread.
    let late_fired = Arc::new(AtomicUsize::new(0));
    let (countdown, done) = Countdown::new(5);
    let dropper = {
        let node = node.clone();
        let fired = Arc::clone(&fired);
        let late_fired = Arc::clone(&late_fired);
        std::thread::spawn(move || {
            let deadline = Instant::now() + PATIENCE;
            while fired.load(Ordering::SeqCst) < 5 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            drop(timer);
            let at_drop = fired.load(Ordering::SeqCst);
            let late = node
                .create_timer_repeating(Duration::from_millis(20), move || {
                    late_fired.fetch_add(1, Ordering::SeqCst);
                    countdown.tick();
                })
                .unwrap();
            (at_drop, late)
        })
    };
    spin_until(&mut executor, done);
    let (at_drop, _late) = dropper.join().unwrap();
    let after = fired.load(Ordering::SeqCst);
    assert!(
        after <= at_drop + 1,
        "a dropped timer fired {} more times",
        after - at_drop
    );
    assert!(late_fired.load(Ordering::SeqCst) >= 5);
}

/// A tick can go stale: ROS time jumps back after the timer fell due and before its
/// Worker runs it, so the timer is not ready by then and rcl keeps its next call time.
/// It must still fire once ROS time reaches that call time again.
pub(crate) fn a_timer_fires_when_due_again_after_ros_time_went_back(make: MakeExecutor) {
    const MS: i64 = 1_000_000;
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let mut sim = SimClock::new("went_back");
    let node = executor
        .create_node(unique("went_back").as_str().arguments(sim.node_arguments()))
        .unwrap();
    // The timer shares a Worker with a subscription that keeps it busy, while ROS time
    // moves (in the Tokio executor; the basic executor's one thread follows the clock
    // only once the busy callback is over).
    let worker = node.create_worker(());
    let fired = Arc::new(AtomicUsize::new(0));
    let _timer = {
        let fired = Arc::clone(&fired);
        worker
            .create_timer_repeating(Duration::from_millis(100).node_time(), move |_: &mut ()| {
                fired.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
    };
    let busy_topic = unique("went_back_busy");
    let busy = Arc::new(AtomicUsize::new(0));
    let _busy_subscription = {
        let busy = Arc::clone(&busy);
        worker
            .create_subscription::<Int32, _>(busy_topic.as_str(), move |_: &mut (), _: Int32| {
                busy.store(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(400));
                busy.store(2, Ordering::SeqCst);
            })
            .unwrap()
    };
    let clock_node = executor
        .create_node(unique("went_back_clock").as_str())
        .unwrap();
    sim.publish_from(&clock_node, 1);
    let busy_publisher = clock_node
        .create_publisher::<Int32>(busy_topic.as_str())
        .unwrap();
    wait_matched(&busy_publisher, 1);
    let (stop, stopped) = oneshot::channel::<()>();
    let spinning = std::thread::spawn(move || {
        spin_until(&mut executor, stopped);
        executor
    });
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + PATIENCE;
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    // After 100 ms more, the timer has still fired `fires` times.
    let stays_at = |fires: usize, why: &str| {
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(fired.load(Ordering::SeqCst), fires, "{why}");
    };

    // The timer started at ROS time 0 with a 100 ms period. At 10.05 s it is overdue:
    // it fires once, and its next call is at 10.1 s.
    sim.set(10_050 * MS);
    wait_for("the first fire", &|| fired.load(Ordering::SeqCst) == 1);
    busy_publisher.publish(Int32 { data: 0 }).unwrap();
    wait_for("the busy callback", &|| busy.load(Ordering::SeqCst) == 1);
    // Due at 10.12 s, back to 10.08 s (not before the last call, so rcl keeps the next
    // call at 10.1 s), all while the Worker is busy.
    sim.set(10_120 * MS);
    std::thread::sleep(Duration::from_millis(30));
    sim.set(10_080 * MS);
    wait_for("the end of the busy callback", &|| {
        busy.load(Ordering::SeqCst) == 2
    });
    stays_at(1, "fired before its call time");
    sim.set(10_130 * MS);
    wait_for("a fire once ROS time reached the call time again", &|| {
        fired.load(Ordering::SeqCst) == 2
    });
    stays_at(2, "fired twice for one call time");
    let _ = stop.send(());
    drop(spinning.join().unwrap());
}

/// `use_sim_time` switched back and forth many times while the clock runs and the timer
/// fires: afterwards the timer keeps its period on either clock, none is lost for good.
///
/// The basic executor passes it since patch 0018: before, a switch to sim time during
/// `rcl_wait` could end its spin with `Timeout` (about 1 run in 12 on a loaded machine).
pub(crate) fn a_timer_keeps_its_period_after_use_sim_time_flips_many_times(make: MakeExecutor) {
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let mut sim = SimClock::new("flips");
    let node = executor
        .create_node(unique("flips").as_str().arguments(sim.node_arguments()))
        .unwrap();
    let fired = Arc::new(AtomicUsize::new(0));
    let timer = {
        let fired = Arc::clone(&fired);
        node.create_timer_repeating(Duration::from_millis(10).node_time(), move || {
            fired.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    };
    let clock_node = executor
        .create_node(unique("flips_clock").as_str())
        .unwrap();
    sim.publish_from(&clock_node, 1);
    sim.set(1000 * SEC);
    let (stop, stopped) = oneshot::channel::<()>();
    let spinning = std::thread::spawn(move || {
        spin_until(&mut executor, stopped);
        executor
    });
    // Fires over about `wall`, and the 10 ms periods that passed meanwhile on the
    // clock the timer follows (ROS time from the sim clock, or wall time): a sleep
    // that overshoots on a loaded machine lengthens the window, not the rate.
    let count_over = |wall: Duration, on_sim_time: bool| {
        let (started, sim_started) = (Instant::now(), sim.now());
        let before = fired.load(Ordering::SeqCst);
        std::thread::sleep(wall);
        let count = fired.load(Ordering::SeqCst) - before;
        let passed_ns = if on_sim_time {
            (sim.now() - sim_started).max(0) as u128
        } else {
            started.elapsed().as_nanos()
        };
        (count, (passed_ns / 10_000_000) as usize)
    };
    std::thread::scope(|scope| {
        // ROS time runs at real speed for the whole case.
        scope.spawn(|| sim.run(1.0, Duration::from_millis(2600)));
        for flip in 0..40 {
            node.set_use_sim_time(flip % 2 == 1).unwrap();
            std::thread::sleep(Duration::from_millis(7));
        }
        node.set_use_sim_time(true).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let (on_sim_time, sim_periods) = count_over(Duration::from_secs(1), true);
        node.set_use_sim_time(false).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let (on_wall_time, wall_periods) = count_over(Duration::from_millis(500), false);
        assert!(
            (sim_periods * 6 / 10..=sim_periods + 10).contains(&on_sim_time),
            "{on_sim_time} fires of a 10 ms timer in {sim_periods} periods of ROS time \
             after the flips (timer ready: {:?}, until its next call: {:?}, node clock: \
             {} ns, last clock message: {} ns)",
            timer.is_ready(),
            timer.time_until_next_call(),
            node.get_clock().now().nsec,
            sim.now()
        );
        assert!(
            (wall_periods * 6 / 10..=wall_periods + 5).contains(&on_wall_time),
            "{on_wall_time} fires of a 10 ms timer in {wall_periods} periods of wall time \
             after the flips (timer ready: {:?}, until its next call: {:?}, node clock: \
             {} ns)",
            timer.is_ready(),
            timer.time_until_next_call(),
            node.get_clock().now().nsec,
        );
    });
    let _ = stop.send(());
    drop(spinning.join().unwrap());
}

/// Ninety timers of five periods, on a node and on two Workers: each fires at its own
/// rate, and a group cancelled between two spins stops while the rest go on. (The Tokio
/// executor's scheduler looks at a timer only when it is due or something changed it.)
pub(crate) fn many_timers_keep_their_periods_and_a_cancelled_group_stops(make: MakeExecutor) {
    const TIMERS: usize = 90;
    const PERIODS_MS: [u64; 5] = [7, 11, 13, 17, 23];
    let context = crate::support::isolated_context();
    let mut executor = make(&context);
    let node = executor
        .create_node(unique("many_timers").as_str())
        .unwrap();
    let workers = [node.create_worker(()), node.create_worker(())];
    let counts: Vec<Arc<AtomicUsize>> = (0..TIMERS).map(|_| Arc::default()).collect();
    let period_ms = |i: usize| PERIODS_MS[i % PERIODS_MS.len()];
    let mut on_node = Vec::new();
    let mut on_workers = Vec::new();
    for (i, count) in counts.iter().enumerate() {
        let period = Duration::from_millis(period_ms(i));
        let count = Arc::clone(count);
        let tick = move || {
            count.fetch_add(1, Ordering::SeqCst);
        };
        match i % 3 {
            0 => on_node.push((i, node.create_timer_repeating(period, tick).unwrap())),
            w => on_workers.push(
                workers[w - 1]
                    .create_timer_repeating(period, move |_: &mut ()| tick())
                    .unwrap(),
            ),
        }
    }
    let read = || {
        counts
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect::<Vec<_>>()
    };
    let started = Instant::now();
    spin_for(&mut executor, Duration::from_millis(300));
    // Cancelled while not spinning: none of them may fire again.
    let cancelled: Vec<usize> = on_node
        .iter()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(i, timer)| {
            timer.cancel().unwrap();
            *i
        })
        .collect();
    let at_cancel = read();
    let second = Instant::now();
    spin_for(&mut executor, Duration::from_millis(300));
    let (spun, second_spun) = (started.elapsed(), second.elapsed());
    let at_end = read();
    for i in 0..TIMERS {
        let per = |spin: Duration| spin.as_millis() as usize / period_ms(i) as usize;
        if cancelled.contains(&i) {
            assert_eq!(
                at_end[i], at_cancel[i],
                "timer {i} fired after it was cancelled"
            );
            continue;
        }
        assert!(
            at_end[i] <= per(spun) + 2,
            "timer {i} ({} ms) fired {} times in {spun:?}",
            period_ms(i),
            at_end[i]
        );
        assert!(
            at_end[i] - at_cancel[i] >= per(second_spun) / 3,
            "timer {i} ({} ms) fired {} times in the second spin of {second_spun:?}",
            period_ms(i),
            at_end[i] - at_cancel[i]
        );
    }
    drop((on_node, on_workers));
}
