//! Closed-loop action round trips: a `BenchCount` action server and client on the
//! executor under test, and a driver thread that requests a goal, waits for its result,
//! and requests the next. Each goal's target is 0, so the server accepts and succeeds at
//! once: the round trip is goal request, goal response, result request, result
//! response (the client asks for the result as soon as the goal is accepted).
//!
//! Finished goals expire after [`GOAL_EXPIRY`] (rcl's default is 15 minutes). Every
//! status change publishes the status of every goal not yet expired, so with the default
//! a closed loop at thousands of goals per second would measure a status array that
//! grows by thousands of entries a second, not the executor; the short expiry also makes
//! the goal-expiry timer fire several times a second during the loop.
//!
//! Phase 1 (idle): one goal to warm up, a settling pause, then a window in which the
//! server and client exist and nothing happens; reports the CPU of every thread but the
//! driver's (the executor's and the middleware's) as `idle_cpu_pct`, and the whole
//! process's as `idle_process_cpu_pct`. Phase 2: round trips for the window; reports their rate as
//! `received_per_s` and their latency (measured on the driver thread, from the request
//! to the result) as the `latency_*` keys.

use super::publishing::Window;
use super::round_trips::{self, RoundTrips};
use super::spinner::Setup;
use super::{Config, Report};
use crate::{interrupt, monotonic_ns};
use rclrs::{ActionClient, IntoActionServerOptions, RequestedGoal};
use ros_env::rclrs_tokio_msgs::action::{BenchCount, BenchCount_Goal, BenchCount_Result};
use std::time::{Duration, Instant};

/// How long a finished goal's result is kept (the C++ twin uses the same).
const GOAL_EXPIRY: Duration = Duration::from_millis(10);

/// Run the action workload.
pub fn run(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let setup = Setup::new(config)?;
    let node = setup
        .executor
        .create_node(format!("bench_action_{}_{}", config.executor, std::process::id()).as_str())?;
    let name = format!("{}_count", config.topic);
    let _server = node.create_action_server::<BenchCount, _>(
        name.as_str().goal_expiration_timeout(GOAL_EXPIRY),
        |requested: RequestedGoal<BenchCount>| {
            let target = requested.goal().target;
            let executing = requested.accept().execute();
            async move { executing.succeeded_with(BenchCount_Result { reached: target }) }
        },
    )?;
    let client = node.create_action_client::<BenchCount>(name.as_str())?;
    let spinner = setup.start()?;

    let result = (|| -> Result<(Window, RoundTrips), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !client.server_is_available().map_err(|e| e.to_string())? {
            if interrupt::interrupted() {
                break;
            }
            if Instant::now() > deadline {
                return Err("the action server was not ready within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        round_trip(&client)?;
        let idle = round_trips::idle_window(config.window);
        let busy = round_trips::drive(config, |_| round_trip(&client))?;
        Ok((idle, busy))
    })();
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;
    let (idle, busy) = result?;
    let report = busy
        .report(&config.executor, "action", None)
        .num("idle_cpu_pct", idle.executor_cpu_pct(), 3)
        .num("idle_process_cpu_pct", idle.process_cpu_pct(), 3)
        .num("idle_window_s", idle.wall_s(), 3)
        .introspection(executor_stats.as_ref());
    drop(client);
    drop(executor);
    Ok(report)
}

/// One goal, from its request to its result: the round trip's nanoseconds.
fn round_trip(client: &ActionClient<BenchCount>) -> Result<i64, String> {
    let sent = monotonic_ns();
    let requested = client.request_goal(BenchCount_Goal { target: 0 });
    let (status, result) = futures::executor::block_on(async move {
        let goal = requested.await.ok_or("the server rejected a goal")?;
        Ok::<_, &str>(goal.result.await)
    })?;
    if status != rclrs::GoalStatusCode::Succeeded || result.reached != 0 {
        return Err(format!("a goal ended {status:?}"));
    }
    Ok(monotonic_ns() - sent)
}
