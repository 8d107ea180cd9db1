//! End-to-end check of a crate generated at build time by rosidl_rust.cmake (rust_e2e_msgs).
use futures::StreamExt;
use rclrs::*;
use ros_env::rust_e2e_msgs::{action as act, msg, srv};
use rosidl_runtime_rs::BoundedSequence;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error>;

fn check(cond: bool, what: &str) -> Result<(), Error> {
    if cond {
        println!("  ok: {what}");
        Ok(())
    } else {
        Err(format!("FAILED: {what}").into())
    }
}

fn point(x: f64, label: &str) -> msg::Point3 {
    msg::Point3 { x, y: -x, z: 0.5, label: label.try_into().unwrap(), weight: 1.0 }
}

fn complex() -> msg::Complex {
    let mut m = msg::Complex::default();
    m.header.frame_id = "map".into();
    m.header.stamp.sec = 7;
    m.type_ = msg::Complex::MODE_B;
    m.origin = point(1.0, "origin");
    m.path = vec![point(2.0, "p0"), point(3.0, "p1"), point(4.0, "p2")];
    m.corners = BoundedSequence::try_from(vec![
        msg::rmw::Point3 { x: 9.0, ..Default::default() },
    ])
    .unwrap();
    m.pair = [point(5.0, "a"), point(6.0, "b")];
    m.covariance = std::array::from_fn(|i| i as f64 * 0.25);
    m.names = vec!["alpha".into(), "beta".into()];
    m.short_names = BoundedSequence::try_from(vec![
        rosidl_runtime_rs::BoundedString::<8>::try_from("x1").unwrap(),
    ])
    .unwrap();
    m.wide = "wide ∂".into();
    m.small_ints = BoundedSequence::try_from(vec![1i16, -2, 3]).unwrap();
    m.stamp.nanosec = 123;
    m
}

fn main() -> Result<(), Error> {
    let context = Context::default_from_env()?;
    let mut executor = context.create_basic_executor();
    let node = executor.create_node("rosidl_rust_e2e_custom")?;

    println!("[constants and defaults of rust_e2e_msgs/msg/Complex]");
    check(msg::Complex::ANSWER == 42 && msg::Complex::PI == 3.14159, "numeric constants")?;
    check(msg::Complex::GREETING == "say \"hi\" \\ ok", "string constant with escapes")?;
    check(msg::Tagged::TAG_PREFIX == "tag:", "constant from a hand-written .idl")?;
    let d = msg::Complex::default();
    check(d.flags == [true, false, true] && d.short_name.to_string() == "abc", "defaults")?;

    println!("[pub/sub rust_e2e_msgs/msg/Complex]");
    let sent = complex();
    let got: Arc<Mutex<Option<msg::Complex>>> = Arc::default();
    let sink = Arc::clone(&got);
    let _sub = node.create_subscription("e2e_complex", move |m: msg::Complex| {
        *sink.lock().unwrap() = Some(m);
    })?;
    let publisher = node.create_publisher::<msg::Complex>("e2e_complex")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.lock().unwrap().is_none() && Instant::now() < deadline {
        publisher.publish(&sent)?;
        executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
    }
    let received = got.lock().unwrap().take().ok_or("no Complex message received")?;
    println!(
        "  received: frame_id={:?} path labels={:?} covariance[35]={} wide={:?} short_names={:?}",
        received.header.frame_id,
        received.path.iter().map(|p| p.label.to_string()).collect::<Vec<_>>(),
        received.covariance[35],
        received.wide,
        received.short_names,
    );
    check(received == sent, "Complex round trip equals what was sent")?;

    println!("[service rust_e2e_msgs/srv/Compute]");
    let _service = node.create_service::<srv::Compute, _>("e2e_compute", |req: srv::Compute_Request| {
        let mut resp = srv::Compute_Response::default();
        resp.result = if req.op.to_string() == "sum" { req.values.iter().sum() } else { f64::NAN };
        resp.echo.names = vec![req.op.to_string()];
        resp
    })?;
    let client = node.create_client::<srv::Compute>("e2e_compute")?;
    let answer: Arc<Mutex<Option<srv::Compute_Response>>> = Arc::default();
    let sink = Arc::clone(&answer);
    let promise = executor.commands().run(async move {
        client.notify_on_service_ready().await.unwrap();
        let req = srv::Compute_Request { values: vec![1.5, 2.5, 3.0], op: "sum".try_into().unwrap() };
        let resp: srv::Compute_Response = client.call(req).unwrap().await.unwrap();
        *sink.lock().unwrap() = Some(resp);
    });
    executor.spin(SpinOptions::default().until_promise_resolved(promise).timeout(Duration::from_secs(10)));
    let answer = answer.lock().unwrap().take().ok_or("no Compute response")?;
    println!("  response: result={} echo.names={:?}", answer.result, answer.echo.names);
    check(answer.result == 7.0 && answer.echo.names == ["sum"], "Compute response")?;

    println!("[action rust_e2e_msgs/action/Count]");
    let _server = node.create_action_server("e2e_count", |handle: RequestedGoal<act::Count>| async move {
        let target = handle.goal().target;
        let start = handle.goal().start.label.to_string();
        let executing = match handle.accept().begin() {
            BeginAcceptedGoal::Execute(e) => e,
            BeginAcceptedGoal::Cancel(c) => return c.cancelled_with(act::Count_Result::default()),
        };
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        std::thread::spawn(move || {
            for i in 1..=target {
                std::thread::sleep(Duration::from_millis(30));
                if tx.unbounded_send(i).is_err() {
                    return;
                }
            }
        });
        let mut log = vec![format!("start at {start}")];
        let mut last = 0;
        while let Some(i) = rx.next().await {
            executing.publish_feedback(act::Count_Feedback { current: i });
            log.push(format!("step {i}"));
            last = i;
        }
        executing.succeeded_with(act::Count_Result { final_count: last, log })
    })?;
    let action_client = node.create_action_client::<act::Count>("e2e_count")?;
    let outcome: Arc<Mutex<Option<(GoalStatusCode, act::Count_Result, Vec<i32>)>>> = Arc::default();
    let sink = Arc::clone(&outcome);
    let promise = executor.commands().run(async move {
        let goal = act::Count_Goal { target: 4, start: point(0.0, "home") };
        let mut stream = action_client.request_goal(goal).await.expect("rejected").stream();
        let mut feedback = Vec::new();
        while let Some(event) = stream.next().await {
            match event {
                GoalEvent::Feedback(f) => feedback.push(f.current),
                GoalEvent::Status(_) => {}
                GoalEvent::Result((status, result)) => {
                    *sink.lock().unwrap() = Some((status, result, feedback));
                    return;
                }
            }
        }
    });
    executor.spin(SpinOptions::default().until_promise_resolved(promise).timeout(Duration::from_secs(10)));
    let outcome = outcome.lock().unwrap().take().ok_or("no action result")?;
    println!("  outcome: status={:?} result={:?} feedback={:?}", outcome.0, outcome.1, outcome.2);
    check(
        outcome.0 == GoalStatusCode::Succeeded
            && outcome.1.final_count == 4
            && outcome.1.log.first().map(String::as_str) == Some("start at home")
            && !outcome.2.is_empty(),
        "Count action result and feedback",
    )?;

    println!("ALL CUSTOM CHECKS PASSED");
    Ok(())
}
