// --workload service: closed-loop round trips. A BenchEcho server (bench_echo_<pid>) and
// a client, both in the node's default callback group on the executor under test, and
// this (main) thread as the driver: call, wait for the answer, call again. No deadlock
// with any of the executors: the driver waits on the future outside the executor, whose
// threads serve both the request and the response.
//
// The round trip runs from the request's send_time_ns, which the server echoes back.
// Service and client use the default services QoS (as the Rust node); --reliability
// and --depth do not apply.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "rclcpp/rclcpp.hpp"
#include "rclrs_tokio_msgs/srv/bench_echo.hpp"

#include "workloads.hpp"

namespace workloads
{

using rclrs_tokio_msgs::srv::BenchEcho;

namespace
{

/// How long one call may take before the run fails instead of hanging.
constexpr auto kCallTimeout = std::chrono::seconds(5);

/// One call, from its request to the answer: the round trip's nanoseconds.
int64_t call(rclcpp::Client<BenchEcho> & client, BenchEcho::Request::SharedPtr request, uint64_t seq)
{
  request->header.seq = seq;
  request->header.send_time_ns = bench::monotonic_ns();
  auto pending = client.async_send_request(request);
  if (pending.future.wait_for(kCallTimeout) != std::future_status::ready) {
    client.remove_pending_request(pending);
    throw std::runtime_error("a service call got no answer within 5 s");
  }
  return bench::monotonic_ns() - pending.future.get()->header.send_time_ns;
}

}  // namespace

int run_service(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  auto node = std::make_shared<rclcpp::Node>(
    config.node_name(), rclcpp::NodeOptions().use_intra_process_comms(false));
  const std::string service_name = "bench_echo_" + std::to_string(::getpid());
  auto service = node->create_service<BenchEcho>(
    service_name,
    [](const std::shared_ptr<BenchEcho::Request> request,
    std::shared_ptr<BenchEcho::Response> response) {
      response->header = request->header;
      response->payload = std::move(request->payload);
    });
  auto client = node->create_client<BenchEcho>(service_name);
  executor->add_node(node);
  bench::SpinThread spinning(*executor);

  if (!client->wait_for_service(std::chrono::seconds(20))) {
    throw std::runtime_error("the service was not ready within 20 s");
  }
  auto request = std::make_shared<BenchEcho::Request>();
  request->payload.resize(config.payload, 0);
  const RoundTrips calls = drive_round_trips(
    config, [&](uint64_t seq) {return call(*client, request, seq);});
  stop_spinning(spinning);
  executor->remove_node(node);

  print(round_trip_report(config, calls, config.payload));
  return 0;
}

}  // namespace workloads
