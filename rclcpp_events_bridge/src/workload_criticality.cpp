// --workload mixed_criticality: the graph of benchmarks/src/workload/criticality.rs. One
// node with two MutuallyExclusive callback groups (the Rust node's two Workers):
//   perception: <t>_burn (reliable, depth 10), published at --burn-rate-hz (200); each
//               callback burns --work-us (4000) of its thread's CPU time;
//   control:    <t>_control (reliable, depth 100), published at --rate-hz (1000); each
//               callback records the latency from the sender's stamp.
// The two publishers run on two threads of their own in this process. Reports the control
// stream as latency_* and control_latency_*, and the burn's achieved rate (burn_rate_hz).

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>

#include "rclcpp/rclcpp.hpp"

#include "workloads.hpp"

namespace workloads
{

int run_mixed_criticality(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  auto node = make_node(config);
  Stats burns(false);
  Stats control(config.latency);
  const int64_t work_ns = static_cast<int64_t>(config.work_us) * 1000;
  const auto burn_qos = rclcpp::QoS(rclcpp::KeepLast(10)).reliable();
  const auto control_qos = rclcpp::QoS(rclcpp::KeepLast(100)).reliable();
  const auto groups = make_groups(*node, 2, false);
  const auto burn_subscription = subscribe(
    *node, {config.topic + "_burn"}, burn_qos, {groups[0]},
    [&burns, work_ns](const BenchMessage & msg) {
      burn(work_ns);
      burns.on_message(msg);
    });
  const auto control_subscription = subscribe(
    *node, {config.topic + "_control"}, control_qos, {groups[1]},
    [&control](const BenchMessage & msg) {control.on_message(msg);});
  auto burn_publisher = node->create_publisher<BenchMessage>(config.topic + "_burn", burn_qos);
  auto control_publisher =
    node->create_publisher<BenchMessage>(config.topic + "_control", control_qos);
  wait_for_subscriptions({burn_publisher, control_publisher});

  executor->add_node(node);
  bench::SpinThread spinning(*executor);
  // The burning topic's publisher on a thread of its own, the control stream's on another.
  Config burning = config;
  burning.rate_hz = config.burn_rate_hz;
  auto burn_run = std::async(
    std::launch::async, [&] {
      return publish_stream(
        burning, burns, [&](BenchMessage & msg, uint64_t seq) {
          return publish_one(*burn_publisher, msg, seq);
        });
    });
  const Published published = publish_stream(
    config, control, [&](BenchMessage & msg, uint64_t seq) {
      return publish_one(*control_publisher, msg, seq);
    });
  const Published burned = burn_run.get();
  settle(control, published.total_sent);
  stop_spinning(spinning);
  executor->remove_node(node);

  bench::Json json = published_report(config, published, control);
  std::lock_guard<std::mutex> lock(control.mutex);
  json.number("burn_offered_hz", config.burn_rate_hz, 1)
  .integer("work_us", config.work_us)
  .number(
    "burn_rate_hz",
    static_cast<double>(burned.window.received()) / burned.window.wall_s(), 1)
  .latencies_as("control_latency", control.latencies);
  print(json);
  return 0;
}

}  // namespace workloads
