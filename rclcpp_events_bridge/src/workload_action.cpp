// --workload action: an idle window, then closed-loop goal round trips. A BenchCount
// action server (bench_count_<pid>) and client, both in the node's default callback
// group on the executor under test, and this (main) thread as the driver: send a goal
// with target 0 (accepted and succeeded at once), wait for its result, send the next.
// The client asks for the result as soon as the goal is accepted (a result callback),
// as rclrs's does.
//
//   1. one goal to warm up, settle 0.5 s, then an idle window of --seconds with the
//      server and client only existing: idle_cpu_pct = CPU of every thread but this
//      driver's (the executor's and the middleware's) / wall, idle_process_cpu_pct =
//      the whole process's;
//   2. round trips for warm-up + window: received_per_s = goals per second,
//      latency_* = request to result, on the driver thread.
//
// Finished goals expire after kGoalExpiry, as in the Rust node (rcl's default is 15
// minutes; every status change publishes the status of every goal not yet expired, so
// with it the loop would measure a growing status array, not the executor).
//
// Built only where rclcpp_action was found (CMakeLists.txt); otherwise bench_node_cpp
// says so and exits 3, and the harness reports the row absent.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>

#include "rclcpp/rclcpp.hpp"
#include "rclcpp_action/rclcpp_action.hpp"
#include "rclrs_tokio_msgs/action/bench_count.hpp"

#include "workloads.hpp"

namespace workloads
{

using rclrs_tokio_msgs::action::BenchCount;
using GoalHandle = rclcpp_action::ClientGoalHandle<BenchCount>;

namespace
{

/// How long a finished goal's result is kept.
constexpr auto kGoalExpiry = std::chrono::milliseconds(10);

/// How long one goal may take before the run fails instead of hanging.
constexpr auto kGoalTimeout = std::chrono::seconds(5);

/// One goal, from its request to its result: the round trip's nanoseconds. The result
/// callback makes the client request the result as soon as the goal is accepted, on the
/// executor's thread (as rclrs's client does), not after the driver saw the acceptance.
int64_t round_trip(rclcpp_action::Client<BenchCount> & client)
{
  const int64_t sent = bench::monotonic_ns();
  BenchCount::Goal goal;
  goal.target = 0;
  auto done = std::make_shared<std::promise<rclcpp_action::ResultCode>>();
  auto finished = done->get_future();
  rclcpp_action::Client<BenchCount>::SendGoalOptions options;
  options.result_callback = [done](const GoalHandle::WrappedResult & result) {
      done->set_value(result.code);
    };
  auto accepted = client.async_send_goal(goal, options);
  if (finished.wait_for(kGoalTimeout) != std::future_status::ready) {
    const bool answered = accepted.wait_for(std::chrono::seconds(0)) ==
      std::future_status::ready;
    throw std::runtime_error(
            !answered ? "a goal got no answer within 5 s" :
            !accepted.get() ? "the server rejected a goal" :
            "a goal's result did not come within 5 s");
  }
  const auto code = finished.get();
  if (code != rclcpp_action::ResultCode::SUCCEEDED) {
    const int64_t after_us = (bench::monotonic_ns() - sent) / 1000;
    throw std::runtime_error(
            "a goal did not succeed (result code " + std::to_string(static_cast<int>(code)) +
            ", " + std::to_string(after_us) + " us after its request)");
  }
  return bench::monotonic_ns() - sent;
}

}  // namespace

int run_action(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  auto node = std::make_shared<rclcpp::Node>(
    config.node_name(), rclcpp::NodeOptions().use_intra_process_comms(false));
  const std::string action_name = "bench_count_" + std::to_string(::getpid());
  rcl_action_server_options_t server_options = rcl_action_server_get_default_options();
  server_options.result_timeout.nanoseconds =
    std::chrono::duration_cast<std::chrono::nanoseconds>(kGoalExpiry).count();
  auto server = rclcpp_action::create_server<BenchCount>(
    node, action_name,
    [](const rclcpp_action::GoalUUID &, std::shared_ptr<const BenchCount::Goal>) {
      return rclcpp_action::GoalResponse::ACCEPT_AND_EXECUTE;
    },
    [](const std::shared_ptr<rclcpp_action::ServerGoalHandle<BenchCount>>) {
      return rclcpp_action::CancelResponse::ACCEPT;
    },
    [](const std::shared_ptr<rclcpp_action::ServerGoalHandle<BenchCount>> goal) {
      auto result = std::make_shared<BenchCount::Result>();
      result->reached = goal->get_goal()->target;
      goal->succeed(result);
    },
    server_options);
  auto client = rclcpp_action::create_client<BenchCount>(node, action_name);
  executor->add_node(node);
  bench::SpinThread spinning(*executor);

  if (!client->wait_for_action_server(std::chrono::seconds(20))) {
    throw std::runtime_error("the action server was not ready within 20 s");
  }
  round_trip(*client);  // the first goal, before the idle window

  const Window idle = idle_window(config);
  const RoundTrips goals = drive_round_trips(
    config, [&client](uint64_t) {return round_trip(*client);});
  stop_spinning(spinning);
  executor->remove_node(node);

  bench::Json json = round_trip_report(config, goals, std::nullopt);
  json.number("idle_cpu_pct", 100.0 * idle.executor_cpu_s() / idle.wall_s(), 3)
  .number("idle_process_cpu_pct", 100.0 * idle.process_cpu_s() / idle.wall_s(), 3)
  .number("idle_window_s", idle.wall_s(), 3);
  print(json);
  return 0;
}

}  // namespace workloads
