//! Closed-loop service round trips: a `BenchEcho` server and a client on the executor
//! under test, and a driver thread that calls, waits for the answer, and calls again.
//! The round trip is measured from the request's `send_time_ns`, which the server
//! echoes back.

use super::round_trips::{self, RoundTrips};
use super::spinner::Setup;
use super::{Config, Report};
use crate::{interrupt, monotonic_ns};
use rclrs::Promise;
use ros_env::rclrs_tokio_msgs::msg::BenchHeader;
use ros_env::rclrs_tokio_msgs::srv::{BenchEcho, BenchEcho_Request, BenchEcho_Response};
use std::time::{Duration, Instant};

/// Run the service workload.
pub fn run(config: &Config) -> Result<Report, Box<dyn std::error::Error>> {
    let setup = Setup::new(config)?;
    let node = setup.executor.create_node(
        format!("bench_service_{}_{}", config.executor, std::process::id()).as_str(),
    )?;
    let name = format!("{}_echo", config.topic);
    let _service =
        node.create_service::<BenchEcho, _>(name.as_str(), |request: BenchEcho_Request| {
            BenchEcho_Response {
                header: request.header,
                payload: request.payload,
            }
        })?;
    let client = node.create_client::<BenchEcho>(name.as_str())?;
    let spinner = setup.start()?;

    let result = (|| -> Result<RoundTrips, String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !client.service_is_ready().map_err(|e| e.to_string())? {
            if interrupt::interrupted() {
                break;
            }
            if Instant::now() > deadline {
                return Err("the service was not ready within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut request = BenchEcho_Request {
            header: BenchHeader::default(),
            payload: vec![0u8; config.payload],
        };
        round_trips::drive(config, |seq| {
            request.header.seq = seq;
            request.header.send_time_ns = monotonic_ns();
            let promise: Promise<BenchEcho_Response> =
                client.call(&request).map_err(|e| e.to_string())?;
            let response = futures::executor::block_on(promise)
                .map_err(|_| "the client dropped the call".to_string())?;
            Ok(monotonic_ns() - response.header.send_time_ns)
        })
    })();
    let executor_stats = spinner.stats();
    let executor = spinner.stop()?;
    let report = result?
        .report(&config.executor, "service", Some(config.payload))
        .introspection(executor_stats.as_ref());
    drop(client);
    drop(executor);
    Ok(report)
}
