//! R1, spin start and stop under load: a thousand short spins and `spin_once` calls,
//! with pauses between them, under a 20 kHz reliable stream whose depth covers what
//! piles up during a pause. A node-level and a Worker subscription must each receive
//! every message once, in order, and no spin may report an error other than its timeout.

use super::common::{paced_publisher, unique, wait_matched, CaseResult, ExecutorKind, Scale};
use rclrs::*;
use ros_env::std_msgs::msg::UInt64;
use serde::Serialize;
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};

const RATE_HZ: f64 = 20_000.0;
/// The most a Fast DDS reader holds, whatever depth is asked for: its default
/// `max_samples` resource limit. A reliable keep-last subscription deeper than this
/// rejects the sample that finds 5,000 waiting, and in one process that reader then never
/// delivers another (the later samples wait behind the rejected one, which is not sent
/// again; README, "Reliability suite"). At this depth a backlog that overflows loses its
/// oldest messages instead, as keep-last says.
const DEPTH: u32 = 5_000;

/// What one subscription saw of the sequence numbers.
#[derive(Debug, Default, Serialize)]
struct Track {
    received: u64,
    duplicated: u64,
    reordered: u64,
    /// The highest sequence number seen, plus one.
    next: u64,
}

impl Track {
    fn saw(&mut self, n: u64) {
        self.received += 1;
        if n + 1 == self.next {
            self.duplicated += 1;
        } else if n < self.next {
            self.reordered += 1;
        }
        self.next = self.next.max(n + 1);
    }
}

/// The errors spins reported, other than the timeout every timed spin ends with.
#[derive(Debug, Default)]
struct SpinErrors {
    count: usize,
    first: Option<String>,
}

impl SpinErrors {
    fn note(&mut self, errors: Vec<RclrsError>) {
        for error in errors.iter().filter(|e| !crate::is_timeout(e)) {
            self.count += 1;
            self.first.get_or_insert_with(|| error.to_string());
        }
    }
}

/// Run R1 against `kind`.
pub fn run(kind: ExecutorKind, scale: Scale) -> Result<CaseResult, super::common::BoxError> {
    let mut result = CaseResult::new("r1_start_stop", kind, scale);
    let cycles = scale.pick(300, 1000);
    let context = Context::default_from_env()?;
    let (mut executor, _) = kind.create(&context)?;
    let node = executor.create_node(unique("r1").as_str())?;
    let topic = unique("r1_stream");
    let qos = || topic.as_str().keep_last(DEPTH).reliable();

    let on_node = Arc::new(Mutex::new(Track::default()));
    let on_worker = Arc::new(Mutex::new(Track::default()));
    let track = Arc::clone(&on_node);
    let _node_subscription = node.create_subscription(qos(), move |m: UInt64| {
        track.lock().unwrap().saw(m.data);
    })?;
    let worker = node.create_worker::<()>(());
    let track = Arc::clone(&on_worker);
    let _worker_subscription =
        worker.create_subscription(qos(), move |_: &mut (), m: UInt64| {
            track.lock().unwrap().saw(m.data);
        })?;
    let publisher = node.create_publisher::<UInt64>(qos())?;
    result.check(wait_matched(&publisher, 2), || {
        "subscriptions never matched".into()
    });

    let stop = Arc::new(AtomicBool::new(false));
    let publishing = paced_publisher(publisher, RATE_HZ, Arc::clone(&stop), |n| UInt64 {
        data: n,
    });
    let mut errors = SpinErrors::default();
    for cycle in 0..cycles {
        let options = if cycle % 2 == 0 {
            SpinOptions::default().timeout(Duration::from_millis(1 + cycle % 3))
        } else {
            SpinOptions::spin_once().timeout(Duration::from_millis(5))
        };
        errors.note(executor.spin(options));
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);
    let sent = publishing.join().map_err(|_| "the publisher panicked")?;

    // Drain what is left.
    let deadline = Instant::now() + Duration::from_secs(20);
    let all_in =
        || on_node.lock().unwrap().received >= sent && on_worker.lock().unwrap().received >= sent;
    while !all_in() && Instant::now() < deadline {
        errors.note(executor.spin(SpinOptions::default().timeout(Duration::from_millis(50))));
    }
    errors.note(executor.spin(SpinOptions::default().timeout(Duration::from_millis(50))));

    result.figure("cycles", cycles);
    result.figure("sent", sent);
    result.figure("spin_errors", errors.count);
    result.check(errors.count == 0, || {
        format!(
            "spins reported {} errors other than a timeout, first: {:?}",
            errors.count, errors.first
        )
    });
    for (name, track) in [("node", &on_node), ("worker", &on_worker)] {
        let track = track.lock().unwrap();
        let lost = sent.saturating_sub(track.received - track.duplicated);
        result.figure(&format!("{name}_received"), track.received);
        result.figure(&format!("{name}_next"), track.next);
        result.figure(&format!("{name}_lost"), lost);
        result.figure(&format!("{name}_duplicated"), track.duplicated);
        result.figure(&format!("{name}_reordered"), track.reordered);
        result.check(lost == 0, || {
            format!("{name} subscription lost {lost} of {sent}")
        });
        result.check(track.duplicated == 0, || {
            format!("{name} subscription got {} duplicates", track.duplicated)
        });
        result.check(track.reordered == 0, || {
            format!("{name} subscription got {} out of order", track.reordered)
        });
    }
    Ok(result)
}
