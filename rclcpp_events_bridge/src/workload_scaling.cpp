// --workload scaling: --subscriptions N subscriptions, each on its own topic
// <topic>_<i>, all in the node's default callback group: what the executor costs while
// nothing happens, and what one message costs with N entities registered.
//
// After the executor started spinning:
//   1. settle 0.5 s, then an idle window of --seconds with nothing published:
//      idle_cpu_pct = process CPU / wall;
//   2. one publisher on <topic>_0 at --rate-hz for warm-up + --seconds, measured as the
//      stream workload: per_message_us = executor CPU in the window / deliveries in it.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rclcpp/rclcpp.hpp"

#include "workloads.hpp"

namespace workloads
{

int run_scaling(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  auto node = make_node(config);
  Stats stats(config.latency);
  std::vector<std::string> topics;
  topics.reserve(config.subscriptions);
  for (uint64_t i = 0; i < config.subscriptions; ++i) {
    topics.push_back(config.topic + "_" + std::to_string(i));
  }
  const auto subscriptions = subscribe(
    *node, topics, config.qos(), {}, [&stats](const BenchMessage & msg) {stats.on_message(msg);});
  auto publisher = node->create_publisher<BenchMessage>(topics.front(), config.qos());
  bench::wait_for_match(
    [&publisher] {return publisher->get_subscription_count();},
    "the subscription on " + topics.front() + " never matched");

  executor->add_node(node);
  bench::SpinThread spinning(*executor);

  // Phase 1: idle.
  const Window idle = idle_window(config);

  // Phase 2: one topic at the rate.
  const Published published = publish_stream(
    config, stats, [&](BenchMessage & msg, uint64_t seq) {
      return publish_one(*publisher, msg, seq);
    });
  settle(stats, published.total_sent);
  stop_spinning(spinning);
  executor->remove_node(node);

  const Window & w = published.window;
  // No delivery in the window: no cost per message to report (null).
  const double per_message_us = w.received() == 0 ? std::nan("") :
    1e6 * w.executor_cpu_s() / static_cast<double>(w.received());
  std::lock_guard<std::mutex> lock(stats.mutex);
  bench::Json json = message_report(
    config, w, Totals{published.total_sent, published.total_sent, stats.count()},
    stats.latencies);
  json.integer("subscriptions", config.subscriptions)
  .number("idle_cpu_pct", 100.0 * idle.process_cpu_s() / idle.wall_s(), 2)
  .number("per_message_us", per_message_us, 2);
  print(json);
  return 0;
}

}  // namespace workloads
