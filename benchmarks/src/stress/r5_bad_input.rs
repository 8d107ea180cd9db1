//! R5, bad input: invalid node and topic names, a service called with the wrong type,
//! `spin()` inside a Tokio runtime (and on the one its Workers need), entities created
//! after the executor was dropped, very large and zero timeouts, a runtime handle
//! nobody drives, and a thread name with a NUL byte. Each must end in a typed error
//! (or, where there is no error to give, an orderly outcome), never a panic or a hang.
//! Outcomes are reported for both executors; the checks hold the Tokio executor to them
//! (the basic executor panics on `Duration::MAX`, for one).

use super::common::{unique, BoxError, CaseResult, ExecutorKind, Scale, Watchdog};
use rclrs::*;
use rclrs_tokio_executor::{
    is_runtime_not_driven_error, is_spin_inside_runtime_error, CreateTokioExecutor,
    TokioExecutorError, TokioExecutorOptions,
};
use ros_env::std_msgs::msg::UInt64;
use ros_env::std_srvs::srv::{
    SetBool, SetBool_Request, SetBool_Response, Trigger, Trigger_Request, Trigger_Response,
};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// How a case ended, in words; `Ok` for an orderly outcome, `Err` for a wrong one.
type Outcome = Result<String, String>;

fn code(errors: &[RclrsError]) -> Vec<String> {
    errors
        .iter()
        .map(|e| match e {
            RclrsError::RclError { code, .. } => format!("{code:?}"),
            other => other.to_string(),
        })
        .collect()
}

fn invalid_names(kind: ExecutorKind) -> Result<Outcome, BoxError> {
    let (executor, _) = kind.create_fresh()?;
    let node_error = match executor.create_node("bad node name!") {
        Ok(_) => return Ok(Err("a node named `bad node name!` was created".into())),
        Err(err) => err,
    };
    let node = executor.create_node(unique("r5_names").as_str())?;
    let topic_error = match node.create_subscription("bad topic?!", |_: UInt64| {}) {
        Ok(_) => return Ok(Err("a subscription to `bad topic?!` was created".into())),
        Err(err) => err,
    };
    let service_error =
        match node.create_service::<SetBool, _>("9 bad service", |r: SetBool_Request| {
            SetBool_Response {
                success: r.data,
                message: String::new(),
            }
        }) {
            Ok(_) => return Ok(Err("a service named `9 bad service` was created".into())),
            Err(err) => err,
        };
    Ok(Ok(format!(
        "node: {node_error}; topic: {topic_error}; service: {service_error}"
    )))
}

fn wrong_service_type(kind: ExecutorKind) -> Result<Outcome, BoxError> {
    let (mut executor, _) = kind.create_fresh()?;
    let node = executor.create_node(unique("r5_types").as_str())?;
    let name = unique("r5_set_bool");
    let _service =
        node.create_service::<SetBool, _>(name.as_str(), |r: SetBool_Request| SetBool_Response {
            success: r.data,
            message: String::new(),
        })?;
    // Fast DDS refuses a second type on one name in one participant: a typed error.
    let client = match node.create_client::<Trigger>(name.as_str()) {
        Ok(client) => client,
        Err(err) => return Ok(Ok(format!("the client was refused: {err}"))),
    };
    let response: Promise<Trigger_Response> = client.call(Trigger_Request::default())?;
    let (_response, answered) = executor.commands().create_notice(response);
    let start = Instant::now();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(answered)
            .timeout(Duration::from_secs(1)),
    );
    let took = start.elapsed();
    let ready = client.service_is_ready().unwrap_or(false);
    if took > Duration::from_millis(1500) {
        return Ok(Err(format!("a 1 s spin took {took:?}")));
    }
    Ok(Ok(format!(
        "no response (the types never match; service_is_ready {ready}); the spin ended with {:?}",
        code(&errors)
    )))
}

/// A blocking spin inside a user's current-thread runtime times out as it would outside
/// one, on both executors; on the Tokio executor, one on the runtime its own Workers run
/// on (passed as `runtime_handle`) returns the typed error at once instead of hanging.
fn spin_inside_tokio(kind: ExecutorKind) -> Result<Outcome, BoxError> {
    let (mut executor, _) = kind.create_fresh()?;
    let _node = executor.create_node(unique("r5_inside").as_str())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let start = Instant::now();
    let errors = runtime.block_on(async {
        executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)))
    });
    let took = start.elapsed();
    let inside = code(&errors);
    if inside != ["Timeout"] || took > Duration::from_secs(2) {
        return Ok(Err(format!(
            "a 100 ms spin inside a runtime: {inside:?} after {took:?}"
        )));
    }
    if kind == ExecutorKind::Basic {
        return Ok(Ok(format!(
            "spun, blocking the runtime's thread: {inside:?}"
        )));
    }
    let mut on_its_own_runtime = Context::default_from_env()?.create_tokio_executor_with(
        TokioExecutorOptions::new().runtime_handle(runtime.handle().clone()),
    )?;
    let _node = on_its_own_runtime.create_node(unique("r5_inside_own").as_str())?;
    let start = Instant::now();
    let errors = runtime.block_on(async { on_its_own_runtime.spin(SpinOptions::default()) });
    let took = start.elapsed();
    Ok(
        if errors.iter().any(is_spin_inside_runtime_error) && took < Duration::from_secs(1) {
            Ok(format!(
                "spun, blocking the runtime's thread: {inside:?}; on the runtime its \
                 Workers need: typed error (is_spin_inside_runtime_error)"
            ))
        } else {
            Err(format!(
                "on the runtime its Workers need: {:?} after {took:?}",
                code(&errors)
            ))
        },
    )
}

fn entities_after_drop(kind: ExecutorKind) -> Result<Outcome, BoxError> {
    let (executor, _) = kind.create_fresh()?;
    let node = executor.create_node(unique("r5_orphan").as_str())?;
    drop(executor);
    let topic = unique("r5_orphan_topic");
    let subscription = node.create_subscription(topic.as_str(), |_: UInt64| {});
    let publisher = node.create_publisher::<UInt64>(topic.as_str())?;
    let _ = publisher.publish(UInt64 { data: 1 });
    let timer = node.create_timer_repeating(Duration::from_millis(1), || {});
    std::thread::sleep(Duration::from_millis(50));
    Ok(Ok(format!(
        "subscription: {}; timer: {}; nothing runs, nothing panics",
        subscription
            .map(|_| "created".to_string())
            .unwrap_or_else(|e| e.to_string()),
        timer
            .map(|_| "created".to_string())
            .unwrap_or_else(|e| e.to_string()),
    )))
}

fn timeouts(kind: ExecutorKind) -> Result<Outcome, BoxError> {
    let (mut executor, _) = kind.create_fresh()?;
    let _node = executor.create_node(unique("r5_timeouts").as_str())?;
    let mut outcomes = Vec::new();
    let mut wrong = false;
    let cases = [
        (
            "Duration::MAX",
            SpinOptions::default().timeout(Duration::MAX),
            "InvalidArgument",
        ),
        (
            "spin_once Duration::MAX",
            SpinOptions::spin_once().timeout(Duration::MAX),
            "InvalidArgument",
        ),
        (
            "u64::MAX/4 s",
            SpinOptions::default().timeout(Duration::from_secs(u64::MAX / 4)),
            "InvalidArgument",
        ),
        (
            "zero",
            SpinOptions::default().timeout(Duration::ZERO),
            "Timeout",
        ),
    ];
    for (name, options, wanted) in cases {
        let start = Instant::now();
        let got = match catch_unwind(AssertUnwindSafe(|| executor.spin(options))) {
            Ok(errors) => code(&errors).join(","),
            Err(_) => "panicked".to_string(),
        };
        let took = start.elapsed();
        let right = got == wanted && took <= Duration::from_secs(2);
        wrong |= !right;
        let verdict = if right { "" } else { " (WRONG)" };
        outcomes.push(format!("{name}: {got} after {took:.2?}{verdict}"));
    }
    // Every outcome is listed either way, the wrong ones marked.
    let listed = outcomes.join("; ");
    Ok(if wrong { Err(listed) } else { Ok(listed) })
}

fn undriven_runtime_handle() -> Result<Outcome, BoxError> {
    let idle = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let context = Context::default_from_env()?;
    let mut executor = context.create_tokio_executor_with(
        TokioExecutorOptions::new().runtime_handle(idle.handle().clone()),
    )?;
    let _node = executor.create_node(unique("r5_undriven").as_str())?;
    let start = Instant::now();
    let timed = executor.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
    let timed_took = start.elapsed();
    let start = Instant::now();
    let unbounded = executor.spin(SpinOptions::default());
    let unbounded_took = start.elapsed();
    if !unbounded.iter().any(is_runtime_not_driven_error) || unbounded_took > Duration::from_secs(3)
    {
        return Ok(Err(format!(
            "unbounded spin: {:?} after {unbounded_took:?}",
            code(&unbounded)
        )));
    }
    if timed_took > Duration::from_millis(300) {
        return Ok(Err(format!("a 200 ms spin took {timed_took:?}")));
    }
    Ok(Ok(format!(
        "timed spin: {:?} after {timed_took:?}; unbounded spin: typed error after {unbounded_took:?}",
        code(&timed)
    )))
}

fn unusable_thread_name() -> Result<Outcome, BoxError> {
    let context = Context::default_from_env()?;
    match context.create_tokio_executor_with(TokioExecutorOptions::new().thread_name("r5\0name")) {
        Err(err @ TokioExecutorError::InvalidThreadName(_)) => {
            Ok(Ok(format!("typed error: {err}")))
        }
        Err(other) => Ok(Err(format!("another error: {other}"))),
        Ok(_) => Ok(Err("the executor was created".to_string())),
    }
}

/// One bad-input case, run once.
type BadInputCase = Box<dyn FnOnce() -> Result<Outcome, BoxError>>;

/// Run R5 against `kind`.
pub fn run(kind: ExecutorKind, scale: Scale) -> Result<CaseResult, BoxError> {
    let mut result = CaseResult::new("r5_bad_input", kind, scale);
    let mut cases: Vec<(&str, BadInputCase)> = vec![
        ("invalid_names", Box::new(move || invalid_names(kind))),
        (
            "wrong_service_type",
            Box::new(move || wrong_service_type(kind)),
        ),
        (
            "spin_inside_tokio",
            Box::new(move || spin_inside_tokio(kind)),
        ),
        (
            "entities_after_executor_dropped",
            Box::new(move || entities_after_drop(kind)),
        ),
        ("timeouts", Box::new(move || timeouts(kind))),
    ];
    if kind == ExecutorKind::Tokio {
        cases.push(("undriven_runtime_handle", Box::new(undriven_runtime_handle)));
        cases.push(("unusable_thread_name", Box::new(unusable_thread_name)));
    }
    for (name, case) in cases {
        let _watchdog = Watchdog::arm("r5_bad_input", kind, scale, name, Duration::from_secs(20));
        let outcome = match catch_unwind(AssertUnwindSafe(case)) {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(setup)) => Err(format!("setup failed: {setup}")),
            Err(_) => Err("panicked".to_string()),
        };
        let (text, wrong) = match &outcome {
            Ok(text) => (text.clone(), false),
            Err(text) => (text.clone(), true),
        };
        result.figure(name, &text);
        if kind.is_tokio() {
            result.check(!wrong, || format!("{name}: {text}"));
        }
    }
    Ok(result)
}
