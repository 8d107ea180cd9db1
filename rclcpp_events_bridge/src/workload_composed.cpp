// --workload nodes: the graph of benchmarks/src/workload/composed.rs. --nodes N nodes
// bench_nodes_<executor>_<pid>_<i> in a ring: node i subscribes (default callback group)
// to <t>_<i> and publishes on <t>_<(i + 1) mod N>.
//   1. After a settling pause, an idle window of --seconds with nothing published and no
//      timer: idle_cpu_pct (the process's CPU) and idle_threads.
//   2. Each node gets a --timer-hz wall timer, and one publisher thread publishes
//      --rate-hz messages a second on every topic, one topic after the other: the stream
//      keys, threads (as the window closes, the publisher thread gone) and timer_rate_hz
//      (each timer's mean rate over the phase).

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rclcpp/rclcpp.hpp"

#include "workloads.hpp"

namespace workloads
{
namespace
{

/// The process's threads now (entries of /proc/self/task; 0 where it cannot be read).
uint64_t thread_count()
{
  std::error_code error;
  uint64_t count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", error);
    !error && it != std::filesystem::directory_iterator(); it.increment(error))
  {
    ++count;
  }
  return count;
}

}  // namespace

int run_nodes(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  const uint64_t n = config.nodes;
  Stats stats(false);
  const auto topic = [&config](uint64_t i) {return config.topic + "_" + std::to_string(i);};
  std::vector<std::shared_ptr<rclcpp::Node>> nodes;
  std::vector<rclcpp::Subscription<BenchMessage>::SharedPtr> subscriptions;
  std::vector<rclcpp::Publisher<BenchMessage>::SharedPtr> publishers;
  for (uint64_t i = 0; i < n; ++i) {
    auto node = std::make_shared<rclcpp::Node>(
      "bench_nodes_" + config.executor + "_" + std::to_string(::getpid()) + "_" +
      std::to_string(i));
    subscriptions.push_back(
      node->create_subscription<BenchMessage>(
        topic(i), config.qos(), [&stats](const BenchMessage & msg) {stats.on_message(msg);}));
    publishers.push_back(node->create_publisher<BenchMessage>(topic((i + 1) % n), config.qos()));
    nodes.push_back(node);
  }
  wait_for_subscriptions(publishers);
  for (const auto & node : nodes) {
    executor->add_node(node);
  }
  bench::SpinThread spinning(*executor);

  // Phase 1: idle.
  const Window idle = idle_window(config);
  const uint64_t idle_threads = thread_count();

  // Phase 2: a timer per node, and every topic at the rate.
  std::atomic<uint64_t> fires{0};
  std::vector<rclcpp::TimerBase::SharedPtr> timers;
  const auto period = bench::seconds_to_ns(1.0 / config.timer_hz);
  for (const auto & node : nodes) {
    timers.push_back(
      node->create_wall_timer(
        period, [&fires] {fires.fetch_add(1, std::memory_order_relaxed);}));
  }
  const int64_t timers_started_ns = bench::monotonic_ns();
  Config paced = config;
  paced.rate_hz = config.rate_hz * static_cast<double>(n);
  const Published published = publish_stream(
    paced, stats, [&](BenchMessage & msg, uint64_t seq) {
      return publish_one(*publishers[seq % n], msg, seq);
    });
  // The window has just closed; the publisher thread has ended, as in phase 1.
  const uint64_t threads = thread_count();
  const double timer_s =
    static_cast<double>(bench::monotonic_ns() - timers_started_ns) / 1e9;
  const uint64_t timer_fires = fires.load();
  settle(stats, published.total_sent);
  stop_spinning(spinning);
  for (const auto & node : nodes) {
    executor->remove_node(node);
  }

  bench::Json json = published_report(config, published, stats);
  json.integer("nodes", n)
  .raw("timer_hz", bench::display(config.timer_hz))
  .number("idle_cpu_pct", 100.0 * idle.process_cpu_s() / idle.wall_s(), 3)
  .integer("idle_threads", idle_threads)
  .integer("threads", threads)
  .number("timer_rate_hz", static_cast<double>(timer_fires) / timer_s / static_cast<double>(n), 2);
  print(json);
  return 0;
}

}  // namespace workloads
