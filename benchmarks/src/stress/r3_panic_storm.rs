//! R3, panic storm: a thousand panicking callbacks spread over subscriptions, timers
//! and services, at node and at Worker level. Each entity panics for its share of
//! calls, then must go on being served; a sibling subscription on another Worker must
//! keep its throughput; and every panic must be one of ours (no secondary panic in
//! rclrs or the executor: each is counted once in `ExecutorStats`).
//!
//! The basic executor does not contain panics (the first one unwinds out of `spin`),
//! so the case applies to the Tokio executor only.

use super::common::{
    paced_publisher, unique, wait_matched, BoxError, CaseResult, ExecutorKind, Scale,
};
use rclrs::*;
use ros_env::std_msgs::msg::UInt64;
use ros_env::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use std::any::Any;
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};

const PANIC_MESSAGE: &str = "deliberate panic";
const SIBLING_HZ: f64 = 5_000.0;
const KINDS: [&str; 6] = [
    "node_subscription",
    "worker_subscription",
    "node_timer",
    "worker_timer",
    "node_service",
    "worker_service",
];

/// One panicking entity's calls: it panics on the first `quota`.
struct Share {
    quota: u64,
    calls: AtomicU64,
}

impl Share {
    fn call(&self) {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.quota {
            panic!("{PANIC_MESSAGE} {n}");
        }
    }

    fn served_after_quota(&self) -> u64 {
        self.calls.load(Ordering::SeqCst).saturating_sub(self.quota)
    }
}

/// Messages of every panic in this process (the hook replaces the default printer).
fn record_panics() -> Arc<Mutex<Vec<String>>> {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let hook_seen = Arc::clone(&seen);
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let at = info.location().map(|l| l.to_string()).unwrap_or_default();
        hook_seen.lock().unwrap().push(format!("{message} at {at}"));
    }));
    seen
}

/// Messages a subscription received during `window`.
fn throughput(heard: &AtomicU64, window: Duration) -> f64 {
    let before = heard.load(Ordering::SeqCst);
    std::thread::sleep(window);
    (heard.load(Ordering::SeqCst) - before) as f64 / window.as_secs_f64()
}

fn panicking_entities(
    node: &Node,
    shares: &[Arc<Share>],
    name: &str,
) -> Result<Vec<Box<dyn Any + Send>>, RclrsError> {
    let topic = format!("{name}_storm");
    let service = format!("{name}_service");
    let share = |i: usize| Arc::clone(&shares[i]);
    let mut entities: Vec<Box<dyn Any + Send>> = Vec::new();
    let s = share(0);
    entities.push(Box::new(node.create_subscription(
        topic.as_str().keep_last(1000),
        move |_: UInt64| s.call(),
    )?));
    let worker = node.create_worker::<()>(());
    let s = share(1);
    entities.push(Box::new(worker.create_subscription(
        topic.as_str().keep_last(1000),
        move |_: &mut (), _: UInt64| s.call(),
    )?));
    let s = share(2);
    entities.push(Box::new(
        node.create_timer_repeating(Duration::from_millis(1), move || s.call())?,
    ));
    let s = share(3);
    entities.push(Box::new(worker.create_timer_repeating(
        Duration::from_millis(1),
        move |_: &mut ()| s.call(),
    )?));
    let s = share(4);
    entities.push(Box::new(node.create_service::<SetBool, _>(
        format!("{service}_node").as_str(),
        move |request: SetBool_Request| {
            s.call();
            SetBool_Response {
                success: request.data,
                message: String::new(),
            }
        },
    )?));
    let s = share(5);
    entities.push(Box::new(worker.create_service::<SetBool, _>(
        format!("{service}_worker").as_str(),
        move |_: &mut (), request: SetBool_Request| {
            s.call();
            SetBool_Response {
                success: request.data,
                message: String::new(),
            }
        },
    )?));
    entities.push(Box::new(worker));
    Ok(entities)
}

/// Run R3 against `kind`.
pub fn run(kind: ExecutorKind, scale: Scale) -> Result<CaseResult, BoxError> {
    let result = CaseResult::new("r3_panic_storm", kind, scale);
    if kind == ExecutorKind::Basic {
        return Ok(result.not_applicable(
            "the basic executor does not contain panics: the first one unwinds out of spin()",
        ));
    }
    let mut result = result;
    let total = scale.pick(300u64, 1000);
    let panics_seen = record_panics();
    let context = Context::default_from_env()?;
    let (mut executor, stats) = kind.create(&context)?;
    let stats = stats.ok_or("the Tokio executor has stats")?;
    let node = executor.create_node(unique("r3").as_str())?;
    let name = unique("r3");

    // The sibling: a Worker subscription on a paced stream.
    let heard = Arc::new(AtomicU64::new(0));
    let sibling_worker = node.create_worker::<()>(());
    let count = Arc::clone(&heard);
    let sibling_topic = format!("{name}_sibling");
    let _sibling = sibling_worker.create_subscription(
        sibling_topic.as_str().keep_last(1000).reliable(),
        move |_: &mut (), _: UInt64| {
            count.fetch_add(1, Ordering::SeqCst);
        },
    )?;
    let sibling_publisher =
        node.create_publisher::<UInt64>(sibling_topic.as_str().keep_last(1000).reliable())?;
    result.check(wait_matched(&sibling_publisher, 1), || {
        "the sibling never matched".into()
    });

    let commands = Arc::clone(executor.commands());
    let spinning = std::thread::spawn(move || executor.spin(SpinOptions::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let sibling_stream = paced_publisher(sibling_publisher, SIBLING_HZ, Arc::clone(&stop), |n| {
        UInt64 { data: n }
    });
    std::thread::sleep(Duration::from_millis(500));
    let before = throughput(&heard, Duration::from_secs(2));

    // The storm.
    let shares: Vec<Arc<Share>> = (0..KINDS.len() as u64)
        .map(|i| {
            let quota = total / KINDS.len() as u64 + u64::from(i < total % KINDS.len() as u64);
            Arc::new(Share {
                quota,
                calls: AtomicU64::new(0),
            })
        })
        .collect();
    let storm = panicking_entities(&node, &shares, &name)?;
    let storm_publisher =
        node.create_publisher::<UInt64>(format!("{name}_storm").as_str().keep_last(1000))?;
    let storm_stream = paced_publisher(storm_publisher, 2_000.0, Arc::clone(&stop), |n| UInt64 {
        data: n,
    });
    let clients = [
        node.create_client::<SetBool>(format!("{name}_service_node").as_str())?,
        node.create_client::<SetBool>(format!("{name}_service_worker").as_str())?,
    ];
    let deadline = Instant::now() + Duration::from_secs(60);
    let enough = || shares.iter().all(|s| s.served_after_quota() >= 10);
    while !enough() && Instant::now() < deadline {
        for client in &clients {
            let _ = client.call_then(SetBool_Request { data: true }, |_: SetBool_Response| {});
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let after = throughput(&heard, Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let _ = sibling_stream.join();
    let _ = storm_stream.join();
    commands.halt_spinning();
    let spun = spinning.join();
    drop(storm);

    let intended: u64 = shares
        .iter()
        .map(|s| s.quota.min(s.calls.load(Ordering::SeqCst)))
        .sum();
    let recorded = panics_seen.lock().unwrap().clone();
    let secondary: Vec<&String> = recorded
        .iter()
        .filter(|m| !m.starts_with(PANIC_MESSAGE))
        .collect();
    result.figure("intended_panics", intended);
    result.figure("contained_panics", stats.callback_panics());
    result.figure("secondary_panics", secondary.len());
    result.figure("sibling_per_s_before", before.round());
    result.figure("sibling_per_s_after", after.round());
    for (kind_name, share) in KINDS.iter().zip(&shares) {
        result.figure(
            &format!("{kind_name}_served_after_panics"),
            share.served_after_quota(),
        );
        result.check(share.served_after_quota() >= 10, || {
            format!(
                "{kind_name} was not served after its panics ({} calls)",
                share.calls.load(Ordering::SeqCst)
            )
        });
    }
    result.check(intended == total, || {
        format!("only {intended} of {total} panics happened")
    });
    result.check(stats.callback_panics() == intended, || {
        format!(
            "{} panics contained for {intended} intended: {:?}",
            stats.callback_panics(),
            stats.panics_by_entity()
        )
    });
    result.check(secondary.is_empty(), || {
        format!(
            "secondary panics: {:?}",
            &secondary[..secondary.len().min(5)]
        )
    });
    result.check(after >= 0.9 * before, || {
        format!("sibling throughput fell from {before:.0}/s to {after:.0}/s")
    });
    result.check(matches!(&spun, Ok(errors) if errors.is_empty()), || {
        format!("the spin ended with {spun:?}")
    });
    Ok(result)
}
