// What the workloads share: QoS, callback groups, subscriptions, settling and the keys
// of the JSON line (declared in workloads.hpp).

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rclcpp/rclcpp.hpp"

#include "workloads.hpp"

namespace workloads
{
namespace
{

/// How long a subscriber process waits for its first message.
constexpr int64_t kFirstMessageTimeoutNs = 30LL * 1000000000LL;

/// Notices when deliveries stop: the time since the counter last moved.
class Activity
{
public:
  Activity(const std::function<uint64_t()> & count, int64_t since_ns)
  : count_(count), seen_(count()), changed_ns_(since_ns) {}

  int64_t idle_ns()
  {
    const uint64_t count = count_();
    const int64_t now = bench::monotonic_ns();
    if (count != seen_) {
      seen_ = count;
      changed_ns_ = now;
    }
    return now - changed_ns_;
  }

private:
  const std::function<uint64_t()> & count_;
  uint64_t seen_;
  int64_t changed_ns_;
};

}  // namespace

const char * name(Workload workload)
{
  switch (workload) {
    case Workload::Stream: return "stream";
    case Workload::Service: return "service";
    case Workload::Action: return "action";
    case Workload::Scaling: return "scaling";
    case Workload::Parallel: return "parallel";
    case Workload::RobotMix: return "robot_mix";
    case Workload::MixedCriticality: return "mixed_criticality";
    case Workload::Nodes: return "nodes";
  }
  return "?";
}

const char * name(Role role)
{
  switch (role) {
    case Role::Both: return "both";
    case Role::Sub: return "sub";
    case Role::Pub: return "pub";
  }
  return "?";
}

rclcpp::QoS Config::qos() const
{
  rclcpp::QoS qos{rclcpp::KeepLast(depth)};
  if (reliable) {
    qos.reliable();
  } else {
    qos.best_effort();
  }
  return qos;
}

std::string Config::node_name() const
{
  return "bench_" + executor + "_" + std::to_string(::getpid());
}

std::vector<rclcpp::CallbackGroup::SharedPtr> make_groups(
  rclcpp::Node & node, uint64_t count, bool default_for_one)
{
  std::vector<rclcpp::CallbackGroup::SharedPtr> groups;
  if (count == 1 && default_for_one) {
    return groups;
  }
  for (uint64_t i = 0; i < count; ++i) {
    // Added to the executor together with the node.
    groups.push_back(node.create_callback_group(
        rclcpp::CallbackGroupType::MutuallyExclusive, true));
  }
  return groups;
}

std::vector<rclcpp::Subscription<BenchMessage>::SharedPtr> subscribe(
  rclcpp::Node & node, const std::vector<std::string> & topics, const rclcpp::QoS & qos,
  const std::vector<rclcpp::CallbackGroup::SharedPtr> & groups,
  const std::function<void(const BenchMessage &)> & callback)
{
  std::vector<rclcpp::Subscription<BenchMessage>::SharedPtr> subscriptions;
  subscriptions.reserve(topics.size());
  for (size_t i = 0; i < topics.size(); ++i) {
    rclcpp::SubscriptionOptions options;
    if (!groups.empty()) {
      options.callback_group = groups[i % groups.size()];
    }
    subscriptions.push_back(
      node.create_subscription<BenchMessage>(topics[i], qos, callback, options));
  }
  return subscriptions;
}

RoundTrips drive_round_trips(
  const Config & config, const std::function<int64_t(uint64_t)> & round_trip)
{
  const auto start = Clock::now();
  const auto opens = start + bench::seconds_to_ns(config.warmup_s);
  const auto closes = opens + bench::seconds_to_ns(config.window_s);
  RoundTrips out;
  bool opened = false;
  for (;;) {
    const auto now = Clock::now();
    if (!opened && now >= opens) {
      out.window.first = Edge::now(out.completed, out.completed);
      opened = true;
    }
    if (now >= closes || bench::interrupted()) {
      out.window.last = Edge::now(out.completed, out.completed);
      if (!opened) {
        out.window.first = out.window.last;
      }
      return out;
    }
    const int64_t rtt_ns = round_trip(out.completed);
    if (opened) {
      out.latencies.push(rtt_ns);
    }
    ++out.completed;
  }
}

bench::Json round_trip_report(
  const Config & config, const RoundTrips & trips, std::optional<uint64_t> payload)
{
  const Window & w = trips.window;
  const double wall_s = w.wall_s();
  const double per_s = static_cast<double>(w.received()) / wall_s;
  bench::Json json;
  json.text("workload", name(config.workload))
  .text("role", name(config.role))
  .text("executor", config.executor);
  if (payload) {
    json.integer("payload", *payload);
  }
  json.number("window_s", wall_s, 3)
  .integer("sent", trips.completed)
  .integer("received", trips.completed)
  .integer("dropped", 0)
  .number("drop_pct", 0.0, 2)
  .number("sent_per_s", per_s, 1)
  .number("received_per_s", per_s, 1)
  .number("cpu_process_pct", 100.0 * w.process_cpu_s() / wall_s, 1)
  .number("cpu_executor_pct", 100.0 * w.executor_cpu_s() / wall_s, 1)
  .latencies(trips.latencies);
  return json;
}

Window idle_window(const Config & config)
{
  bench::sleep_until(Clock::now() + std::chrono::milliseconds(500));
  Window idle;
  idle.first = Edge::now(0, 0);
  bench::sleep_until(Clock::now() + bench::seconds_to_ns(config.window_s));
  idle.last = Edge::now(0, 0);
  return idle;
}

SubscriberWindow watch_subscriber(
  const Config & config, const std::function<uint64_t()> & count,
  const std::function<int64_t()> & first_arrival_ns, const std::function<void(bool)> & in_window,
  const std::function<void()> & at_edge)
{
  const int64_t started_ns = bench::monotonic_ns();
  while (first_arrival_ns() == 0 && !bench::interrupted()) {
    if (bench::monotonic_ns() - started_ns > kFirstMessageTimeoutNs) {
      throw std::runtime_error("no message arrived on " + config.topic + " within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  const int64_t first_ns = bench::interrupted() ? bench::monotonic_ns() : first_arrival_ns();
  const int64_t idle_exit_ns = bench::seconds_to_ns(config.idle_exit_s).count();
  // A few wake-ups per idle period, at most 20 per second: negligible CPU.
  const int64_t poll_ns = std::clamp<int64_t>(idle_exit_ns / 4, 1000000, 50000000);
  Activity activity(count, first_ns);
  const auto sleep_until = [&](int64_t due_ns) {
      for (;;) {
        const int64_t now = bench::monotonic_ns();
        if (now >= due_ns || bench::interrupted()) {
          return;
        }
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(poll_ns, due_ns - now)));
        if (activity.idle_ns() >= idle_exit_ns && !bench::interrupted()) {
          throw std::runtime_error("the publisher stopped before the window ended");
        }
      }
    };
  // Only the process's CPU: no publisher thread to take out.
  const auto edge = [&count] {
      Edge e = Edge::now(0, count());
      e.thread_cpu_ns = 0;
      return e;
    };

  SubscriberWindow watched;
  const int64_t opens_ns = first_ns + bench::seconds_to_ns(config.warmup_s).count();
  sleep_until(opens_ns);
  watched.window.first = edge();
  at_edge();
  watched.threads_first = bench::thread_ticks_now();
  in_window(true);
  sleep_until(watched.window.first.wall_ns + bench::seconds_to_ns(config.window_s).count());
  in_window(false);
  watched.window.last = edge();
  at_edge();
  watched.threads_last = bench::thread_ticks_now();

  // Count the rest of the stream until it stops.
  while (activity.idle_ns() < idle_exit_ns && !bench::interrupted()) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(poll_ns));
  }
  return watched;
}

void settle(const Stats & stats, uint64_t expected)
{
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  uint64_t seen = stats.count();
  while (std::chrono::steady_clock::now() < limit && !bench::interrupted()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t now = stats.count();
    if (now == seen || now >= expected) {
      return;
    }
    seen = now;
  }
}

bench::Json message_report(
  const Config & config, const Window & window, const Totals & totals,
  const bench::Latencies & latencies)
{
  const double wall_s = window.wall_s();
  bench::Json json;
  json.text("workload", name(config.workload))
  .text("role", name(config.role))
  .text("executor", config.executor)
  .integer("payload", config.payload)
  .flag("reliable", config.reliable)
  .integer("depth", config.depth)
  .raw("rate_hz", bench::display(config.rate_hz))
  .number("window_s", wall_s, 3);
  if (totals.sent) {
    const uint64_t dropped =
      totals.expected > totals.received ? totals.expected - totals.received : 0;
    // Deliveries due per message sent (the subscriptions per topic), for the backlog
    // still queued when the window closed.
    const uint64_t per_sent = *totals.sent ? totals.expected / *totals.sent : 1;
    const uint64_t due = window.last.sent * per_sent;
    const uint64_t queued = due > window.last.received ? due - window.last.received : 0;
    json.integer("sent", *totals.sent)
    .integer("received", totals.received)
    .integer("dropped", dropped)
    .number(
      "drop_pct",
      100.0 * static_cast<double>(dropped) /
      static_cast<double>(std::max<uint64_t>(totals.expected, 1)), 2)
    .integer("queued_at_close", queued)
    .number(
      "sent_per_s", static_cast<double>(window.last.sent - window.first.sent) / wall_s, 1);
  } else {
    json.null("sent").integer("received", totals.received).null("dropped").null("drop_pct")
    .null("queued_at_close").null("sent_per_s");
  }
  return json.number("received_per_s", static_cast<double>(window.received()) / wall_s, 1)
         .number("cpu_process_pct", 100.0 * window.process_cpu_s() / wall_s, 1)
         .number("cpu_executor_pct", 100.0 * window.executor_cpu_s() / wall_s, 1)
         .latencies(latencies);
}

uint64_t publish_one(rclcpp::Publisher<BenchMessage> & publisher, BenchMessage & msg, uint64_t seq)
{
  msg.header.seq = seq;
  msg.header.send_time_ns = bench::monotonic_ns();
  publisher.publish(msg);
  return 1;
}

void wait_for_subscriptions(
  const std::vector<rclcpp::Publisher<BenchMessage>::SharedPtr> & publishers)
{
  for (const auto & publisher : publishers) {
    bench::wait_for_match(
      [&publisher] {return publisher->get_subscription_count();},
      std::string("the subscription on ") + publisher->get_topic_name() + " never matched");
  }
}

bench::Json published_report(const Config & config, const Published & published, Stats & stats)
{
  std::lock_guard<std::mutex> lock(stats.mutex);
  bench::Json json = message_report(
    config, published.window, Totals{published.total_sent, published.total_sent, stats.count()},
    stats.latencies);
  published.window.context_switches(json);
  return json;
}

std::shared_ptr<rclcpp::Node> make_node(const Config & config)
{
  return std::make_shared<rclcpp::Node>(
    config.node_name(), rclcpp::NodeOptions().use_intra_process_comms(config.intra_process));
}

void stop_spinning(bench::SpinThread & spinning)
{
  const std::string error = spinning.stop();
  if (!error.empty()) {
    throw std::runtime_error("spin: " + error);
  }
}

void print(const bench::Json & json)
{
  bench::Json line = json;
  if (bench::interrupted()) {
    line.flag("interrupted", true);
  }
  std::printf("%s\n", line.line().c_str());
  std::fflush(stdout);
}

}  // namespace workloads
