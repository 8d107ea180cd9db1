//! R4, shutdown under load: a spinning executor is dropped (its `spin_async` future
//! dropped mid-spin) and, separately, halted and then dropped, hundreds of times while
//! a publisher sends 50k msg/s. Every drop (and halt) must return within 100 ms, and
//! no callback may start once the drop has returned.
//!
//! Dropping the basic executor's `spin_async` future leaves its spin thread running
//! (rclrs spins it on a detached thread), so for the basic executor only the halt-then-
//! drop variant runs.

use super::common::{
    paced_publisher, unique, wait_matched, BoxError, CaseResult, ExecutorKind, Scale,
};
use futures::future::{select, Either};
use rclrs::*;
use ros_env::std_msgs::msg::UInt64;
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc,
};
use std::time::{Duration, Instant};

const RATE_HZ: f64 = 50_000.0;
const LIMIT: Duration = Duration::from_millis(100);

/// One repetition's timings and callback counts.
struct Repetition {
    /// How long the drop took (and, for halt-then-drop, the halt).
    drop: Duration,
    halt: Option<Duration>,
    ran: u64,
    /// Callbacks that started after the drop returned.
    late: u64,
}

fn repetition(
    kind: ExecutorKind,
    drop_mid_spin: bool,
    spin_for: Duration,
) -> Result<Repetition, BoxError> {
    let context = Context::default_from_env()?;
    let (executor, _) = kind.create(&context)?;
    let node = executor.create_node(unique("r4").as_str())?;
    let topic = unique("r4_stream");
    let started = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&started);
    let _subscription =
        node.create_subscription(topic.as_str().keep_last(1000), move |_: UInt64| {
            count.fetch_add(1, Ordering::SeqCst);
        })?;
    let publisher = node.create_publisher::<UInt64>(topic.as_str().keep_last(1000))?;
    wait_matched(&publisher, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = paced_publisher(publisher, RATE_HZ, Arc::clone(&stop), |n| UInt64 {
        data: n,
    });

    let (drop_time, halt_time) = if drop_mid_spin {
        let (elapsed_tx, elapsed) = futures::channel::oneshot::channel::<()>();
        std::thread::spawn(move || {
            std::thread::sleep(spin_for);
            let _ = elapsed_tx.send(());
        });
        let spinning = Box::pin(executor.spin_async(SpinOptions::default()));
        match futures::executor::block_on(select(spinning, elapsed)) {
            Either::Right((_, spinning)) => {
                let start = Instant::now();
                drop(spinning);
                (start.elapsed(), None)
            }
            Either::Left(((executor, _), _)) => {
                let start = Instant::now();
                drop(executor);
                (start.elapsed(), None)
            }
        }
    } else {
        let commands = Arc::clone(executor.commands());
        let mut executor = executor;
        let spinning = std::thread::spawn(move || {
            executor.spin(SpinOptions::default());
            executor
        });
        std::thread::sleep(spin_for);
        let start = Instant::now();
        commands.halt_spinning();
        let executor = spinning
            .join()
            .map_err(|_| "the spinning thread panicked")?;
        let halted = start.elapsed();
        let start = Instant::now();
        drop(executor);
        (start.elapsed(), Some(halted))
    };
    let at_drop = started.load(Ordering::SeqCst);
    // Keep publishing a while: a callback that still starts now is late.
    std::thread::sleep(Duration::from_millis(20));
    stop.store(true, Ordering::Relaxed);
    let _ = publishing.join();
    let late = started.load(Ordering::SeqCst) - at_drop;
    Ok(Repetition {
        drop: drop_time,
        halt: halt_time,
        ran: at_drop,
        late,
    })
}

/// Run R4 against `kind`.
pub fn run(kind: ExecutorKind, scale: Scale) -> Result<CaseResult, BoxError> {
    let mut result = CaseResult::new("r4_shutdown", kind, scale);
    let repetitions = scale.pick(30, 200);
    let variants: &[(&str, bool)] = match kind {
        ExecutorKind::Tokio | ExecutorKind::TokioDedicated => {
            &[("drop_while_spinning", true), ("halt_then_drop", false)]
        }
        ExecutorKind::Basic => &[("halt_then_drop", false)],
    };
    if kind == ExecutorKind::Basic {
        result.note =
            "drop_while_spinning skipped: the basic executor's spin_async spins on a detached \
                       thread that dropping the future does not stop"
                .into();
    }
    for &(variant, drop_mid_spin) in variants {
        let (mut max_drop, mut max_halt, mut late, mut late_reps, mut ran) =
            (Duration::ZERO, Duration::ZERO, 0, 0, 0);
        for i in 0..repetitions {
            let spin_for = Duration::from_millis(10 + (i as u64 * 7) % 40);
            let rep = repetition(kind, drop_mid_spin, spin_for)?;
            max_drop = max_drop.max(rep.drop);
            max_halt = max_halt.max(rep.halt.unwrap_or_default());
            late += rep.late;
            late_reps += u64::from(rep.late > 0);
            ran += rep.ran;
        }
        result.figure(&format!("{variant}_repetitions"), repetitions);
        result.figure(
            &format!("{variant}_max_drop_ms"),
            max_drop.as_secs_f64() * 1e3,
        );
        if !drop_mid_spin {
            result.figure(
                &format!("{variant}_max_halt_ms"),
                max_halt.as_secs_f64() * 1e3,
            );
        }
        result.figure(&format!("{variant}_callbacks_run"), ran);
        result.figure(&format!("{variant}_late_callbacks"), late);
        result.figure(
            &format!("{variant}_repetitions_with_late_callbacks"),
            late_reps,
        );
        result.check(max_drop < LIMIT, || {
            format!("{variant}: a drop took {max_drop:?}")
        });
        result.check(max_halt < LIMIT, || {
            format!("{variant}: a halt took {max_halt:?}")
        });
        result.check(late == 0, || {
            format!("{variant}: {late} callbacks started after the drop returned")
        });
        result.check(ran > 0, || {
            format!("{variant}: no callback ran while spinning")
        });
    }
    Ok(result)
}
