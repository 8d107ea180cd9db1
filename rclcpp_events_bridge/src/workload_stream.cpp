// --workload stream: a BenchMessage stream on one topic, to --subscriptions N
// subscriptions spread round-robin over --workers M MutuallyExclusive callback groups
// (M == 1: the node's default group).
//
//   --role both  publisher thread and executor in this process (the original workload)
//   --role pub   publisher only; no executor spins
//   --role sub   subscriptions only, served by the executor under test; the window opens
//                at the first message + warm-up and the run ends after --idle-exit-s
//                without a message

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rclcpp/rclcpp.hpp"

#include "thread_cpu.hpp"
#include "workloads.hpp"

namespace workloads
{
namespace
{

/// The N subscriptions of the run, all on --topic, counting into `stats`.
std::vector<rclcpp::Subscription<BenchMessage>::SharedPtr> fanout(
  rclcpp::Node & node, const Config & config, Stats & stats)
{
  const std::vector<std::string> topics(config.subscriptions, config.topic);
  return subscribe(
    node, topics, config.qos(), make_groups(node, config.workers, true),
    [&stats](const BenchMessage & msg) {stats.on_message(msg);});
}

/// Wait until `publisher` matched all N subscriptions (20 s).
void wait_for_subscribers(
  const Config & config, const rclcpp::Publisher<BenchMessage> & publisher)
{
  bench::wait_for_count(
    [&publisher] {return publisher.get_subscription_count();}, config.subscriptions,
    config.subscriptions == 1 ? "the subscription on " + config.topic + " never matched" :
    "fewer than " + std::to_string(config.subscriptions) + " subscriptions on " +
    config.topic + " matched within 20 s");
}

bench::Json & fanout_keys(bench::Json & json, const Config & config)
{
  return json.integer("subscriptions", config.subscriptions).integer("workers", config.workers)
         .flag("intra_process", config.intra_process);
}

/// Publisher thread and executor in this process.
int run_both(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  auto node = make_node(config);
  Stats stats(config.latency);
  const auto subscriptions = fanout(*node, config, stats);
  auto publisher = node->create_publisher<BenchMessage>(config.topic, config.qos());
  wait_for_subscribers(config, *publisher);

  // The executor spins on its own thread, the publisher on another, as in the Rust node.
  executor->add_node(node);
  bench::SpinThread spinning(*executor);
  const Published published = publish_stream(
    config, stats, [&](BenchMessage & msg, uint64_t seq) {
      return publish_one(*publisher, msg, seq);
    });

  // Let what is still queued arrive (reliable), then stop the executor.
  const uint64_t expected = published.total_sent * config.subscriptions;
  settle(stats, expected);
  stop_spinning(spinning);
  executor->remove_node(node);

  std::lock_guard<std::mutex> lock(stats.mutex);
  bench::Json json = message_report(
    config, published.window, Totals{published.total_sent, expected, stats.count()},
    stats.latencies);
  published.window.context_switches(json);
  print(fanout_keys(json, config));
  return 0;
}

/// Publisher only: wait for the N subscriptions, publish for warm-up + window + tail.
/// cpu_publisher_pct is this process's CPU over the window (as the Rust publisher).
int run_pub(const Config & config)
{
  auto node = make_node(config);
  auto publisher = node->create_publisher<BenchMessage>(config.topic, config.qos());
  wait_for_subscribers(config, *publisher);

  Stats unused(false);
  BenchMessage msg;
  msg.payload.resize(config.payload, 0);
  const Schedule schedule{config.rate_hz, config.warmup_s, config.window_s, config.publish_tail_s};
  // A reliable writer whose history is full of samples a slow reader has not yet
  // acknowledged gives up after its blocking time and publish() throws: that message
  // was not sent. Count those and go on (as the Rust publisher); the subscriber's rate
  // is what is measured. Sequence numbers stay contiguous over the messages sent.
  uint64_t refused = 0;
  std::string first_refusal;
  const Published published = publish(
    schedule, unused, [&](uint64_t seq) -> uint64_t {
      try {
        return publish_one(*publisher, msg, seq - refused);
      } catch (const rclcpp::exceptions::RCLError & e) {
        if (refused++ == 0) {
          first_refusal = e.what();
        }
        return 0;
      }
    });
  if (published.total_sent == 0) {
    throw std::runtime_error("every publish failed: " + first_refusal);
  }
  if (config.reliable) {
    // Let the subscribers acknowledge the tail before the writer goes away.
    publisher->wait_for_all_acked(std::chrono::seconds(5));
  }

  bench::Json json;
  json.text("workload", name(config.workload))
  .text("role", name(config.role))
  .text("executor", config.executor)
  .integer("sent", published.total_sent)
  .integer("publish_failed", refused)
  .number("sent_per_s", static_cast<double>(published.total_sent) / published.elapsed_s, 1)
  .integer("payload", config.payload)
  .flag("reliable", config.reliable)
  .integer("depth", config.depth)
  .raw("rate_hz", bench::display(config.rate_hz))
  .number("publish_s", published.elapsed_s, 3)
  .number(
    "cpu_publisher_pct",
    100.0 * published.window.process_cpu_s() / published.window.wall_s(), 1);
  print(fanout_keys(json, config));
  return 0;
}

/// The subscriptions only, on the executor under test. This (main) thread watches the
/// window (watch_subscriber).
int run_sub(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  auto node = make_node(config);
  Stats stats(config.latency);
  const auto subscriptions = fanout(*node, config, stats);
  executor->add_node(node);
  bench::SpinThread spinning(*executor);

  const SubscriberWindow watched = watch_subscriber(
    config, [&stats] {return stats.count();},
    [&stats] {return stats.first_arrival_ns.load();},
    [&stats](bool open) {stats.in_window.store(open);}, [] {});
  stop_spinning(spinning);
  executor->remove_node(node);

  const Window & window = watched.window;
  std::lock_guard<std::mutex> lock(stats.mutex);
  bench::Json json =
    message_report(config, window, Totals{std::nullopt, 0, stats.count()}, stats.latencies);
  bench::receive_threads(
    json, watched.threads_first, watched.threads_last, window.wall_s(), window.received());
  window.context_switches(json);
  print(fanout_keys(json, config));
  return 0;
}

}  // namespace

int run_stream(const Config & config)
{
  switch (config.role) {
    case Role::Pub: return run_pub(config);
    case Role::Sub: return run_sub(config);
    case Role::Both: break;
  }
  return run_both(config);
}

}  // namespace workloads
