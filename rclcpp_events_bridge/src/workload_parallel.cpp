// --workload parallel: two subscriptions on <topic>_a and <topic>_b whose callbacks each
// burn --work-us of their thread's CPU time, in --workers M MutuallyExclusive callback
// groups (subscription i in group i % M: with 1 both share a group, with 2 each has its
// own). One publisher thread publishes on a, then b, at --rate-hz per topic. Only an
// executor that runs two groups at once (rclcpp_multi, rclcpp_events_cbg) can complete
// more callbacks with 2 groups than with 1.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "rclcpp/rclcpp.hpp"

#include "workloads.hpp"

namespace workloads
{
void burn(int64_t work_ns)
{
  const int64_t until = bench::thread_cpu_ns() + work_ns;
  while (bench::thread_cpu_ns() < until) {
  }
}

int run_parallel(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  auto node = make_node(config);
  Stats stats(config.latency);
  const int64_t work_ns = static_cast<int64_t>(config.work_us) * 1000;
  const std::vector<std::string> topics{config.topic + "_a", config.topic + "_b"};
  // Explicit groups even for M == 1 (the spec's "one MutuallyExclusive group").
  const auto subscriptions = subscribe(
    *node, topics, config.qos(), make_groups(*node, config.workers, false),
    [&stats, work_ns](const BenchMessage & msg) {
      burn(work_ns);
      stats.on_message(msg);  // counts a completed callback
    });
  auto publisher_a = node->create_publisher<BenchMessage>(topics[0], config.qos());
  auto publisher_b = node->create_publisher<BenchMessage>(topics[1], config.qos());
  wait_for_subscriptions({publisher_a, publisher_b});

  executor->add_node(node);
  bench::SpinThread spinning(*executor);
  const Published published = publish_stream(
    config, stats, [&](BenchMessage & msg, uint64_t seq) {
      return publish_one(*publisher_a, msg, seq) + publish_one(*publisher_b, msg, seq);
    });
  settle(stats, published.total_sent);
  stop_spinning(spinning);
  executor->remove_node(node);

  std::lock_guard<std::mutex> lock(stats.mutex);
  bench::Json json = message_report(
    config, published.window, Totals{published.total_sent, published.total_sent, stats.count()},
    stats.latencies);
  json.integer("workers", config.workers).integer("work_us", config.work_us);
  print(json);
  return 0;
}

}  // namespace workloads
