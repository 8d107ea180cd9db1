// One benchmark run in one process, with an rclcpp executor: a publisher thread and a
// subscription served by the executor under test, printing one JSON line of metrics.
//
//   bench_node_cpp --executor rclcpp_single|rclcpp_multi|rclcpp_events|rclcpp_events_cbg
//                  [--payload BYTES] [--reliability reliable|best_effort] [--depth N]
//                  [--rate-hz R (0 = as fast as possible)] [--warmup-s S] [--seconds S]
//                  [--latency] [--threads N] [--ros-args ...]
//
// The C++ twin of benchmarks/src/bin/bench_node.rs: same workload, same flags (`--callback`
// is accepted and ignored: rclcpp has a single kind of subscription callback), same JSON
// keys. `--threads` sizes the pool of rclcpp_multi and rclcpp_events_cbg (default 2).
//
// Metrics are taken over the window after the warm-up. `cpu_process_pct` is the whole
// process; `cpu_executor_pct` is the process minus the publisher thread (with the
// publisher in the same process, Fast DDS delivers inside `publish()`, on that thread),
// which is the executor's threads plus the middleware's own background threads.
//
// Exit codes: 0 ok, 2 bad argument or failed run, 3 executor not in this rclcpp.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "rclcpp/rclcpp.hpp"
#include "rclrs_tokio_msgs/msg/bench_message.hpp"

#include "bench_common.hpp"

namespace
{

using rclrs_tokio_msgs::msg::BenchMessage;
using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux, as Rust's Instant

/// What the subscription callback records.
struct Stats
{
  std::atomic<uint64_t> received{0};
  std::atomic<bool> in_window{false};
  bool latency = false;
  std::mutex mutex;
  bench::Latencies latencies;

  void on_message(const BenchMessage & msg)
  {
    received.fetch_add(1, std::memory_order_relaxed);
    if (latency && in_window.load(std::memory_order_relaxed)) {
      const int64_t ns = bench::monotonic_ns() - msg.header.send_time_ns;
      std::lock_guard<std::mutex> lock(mutex);
      latencies.push(ns);
    }
  }
};

/// What the publisher thread saw at the window's edges.
struct Edge
{
  int64_t wall_ns = 0;
  int64_t process_cpu_ns = 0;
  int64_t publisher_cpu_ns = 0;
  uint64_t sent = 0;
  uint64_t received = 0;
};

/// The run's parameters, from the command line.
struct Config
{
  std::string executor;
  uint64_t payload = 0;
  bool reliable = true;
  uint32_t depth = 1000;
  double rate_hz = 0.0;
  double warmup_s = 1.0;
  double window_s = 3.0;
  bool latency = false;
  uint64_t threads = 0;

  static Config from(const bench::Args & args)
  {
    Config c;
    c.executor = args.string("executor", "rclcpp_events");
    c.payload = args.get<uint64_t>("payload", 0);
    const std::string reliability = args.string("reliability", "reliable");
    if (reliability == "reliable") {
      c.reliable = true;
    } else if (reliability == "best_effort") {
      c.reliable = false;
    } else {
      throw std::invalid_argument(
              "--reliability " + reliability + ": use reliable or best_effort");
    }
    c.depth = args.get<uint32_t>("depth", 1000);
    c.rate_hz = args.get<double>("rate-hz", 0.0);
    c.warmup_s = args.get<double>("warmup-s", 1.0);
    c.window_s = args.get<double>("seconds", 3.0);
    c.latency = args.get<bool>("latency", false);
    c.threads = args.get<uint64_t>("threads", 0);
    for (auto [name, value] : {std::pair{"--rate-hz", c.rate_hz},
        std::pair{"--warmup-s", c.warmup_s}, std::pair{"--seconds", c.window_s}})
    {
      if (!(value >= 0.0) || !std::isfinite(value)) {
        throw std::invalid_argument(std::string(name) + ": must be a finite number >= 0");
      }
    }
    return c;
  }
};

/// The publisher thread's work: publish for warm-up + window, saturating or at
/// `rate_hz`, and capture the window's edges. Returns (first, last, total sent).
struct PublishResult
{
  Edge first;
  Edge last;
  uint64_t total_sent = 0;
};

PublishResult publish_loop(
  const Config & config, rclcpp::Publisher<BenchMessage> & publisher, Stats & stats)
{
  BenchMessage msg;
  msg.payload.resize(config.payload, 0);
  auto edge = [&stats](uint64_t sent) {
      Edge e;
      e.wall_ns = bench::monotonic_ns();
      e.process_cpu_ns = bench::process_cpu_ns();
      e.publisher_cpu_ns = bench::thread_cpu_ns();
      e.sent = sent;
      e.received = stats.received.load(std::memory_order_relaxed);
      return e;
    };
  const bool paced = config.rate_hz > 0.0;
  const double period_ns = paced ? 1e9 / config.rate_hz : 0.0;
  const auto start = Clock::now();
  const auto window_start = start + bench::seconds_to_ns(config.warmup_s);
  const auto end = window_start + bench::seconds_to_ns(config.window_s);

  PublishResult result;
  bool have_first = false;
  uint64_t seq = 0;
  for (;;) {
    const auto now = Clock::now();
    if (!have_first && now >= window_start) {
      result.first = edge(seq);
      have_first = true;
      stats.in_window.store(true, std::memory_order_relaxed);
    }
    if (now >= end) {
      stats.in_window.store(false, std::memory_order_relaxed);
      result.last = edge(seq);
      break;
    }
    if (paced) {
      // Due times from the start, so a late message does not shift the ones after it.
      const auto due = start + std::chrono::nanoseconds(
        static_cast<int64_t>(period_ns * static_cast<double>(seq)));
      std::this_thread::sleep_until(due);
    }
    msg.header.seq = seq;
    msg.header.send_time_ns = bench::monotonic_ns();
    publisher.publish(msg);
    ++seq;
  }
  result.total_sent = seq;
  return result;
}

int run(int argc, char ** argv)
{
  const bench::Args args(argc, argv);
  const Config config = Config::from(args);
  // An executor this rclcpp lacks is reported (exit 3) before anything is set up.
  bench::validate_executor(config.executor);

  rclcpp::init(argc, argv);
  const std::string pid = std::to_string(::getpid());
  const std::string topic = "bench_" + pid;

  auto executor = bench::make_executor(config.executor, config.threads);
  auto node = std::make_shared<rclcpp::Node>(
    "bench_" + config.executor + "_" + pid,
    rclcpp::NodeOptions().use_intra_process_comms(false));

  rclcpp::QoS qos{rclcpp::KeepLast(config.depth)};
  if (config.reliable) {
    qos.reliable();
  } else {
    qos.best_effort();
  }

  Stats stats;
  stats.latency = config.latency;
  auto subscription = node->create_subscription<BenchMessage>(
    topic, qos, [&stats](const BenchMessage & msg) {stats.on_message(msg);});
  auto publisher = node->create_publisher<BenchMessage>(topic, qos);
  bench::wait_for_match(
    [&publisher] {return publisher->get_subscription_count();},
    "the subscription never matched");

  // The executor spins on its own thread, the publisher on another, as in the Rust node.
  executor->add_node(node);
  bench::SpinThread spinning(*executor);

  PublishResult published;
  std::string publish_error;
  std::thread publishing([&] {
      try {
        published = publish_loop(config, *publisher, stats);
      } catch (const std::exception & e) {
        publish_error = e.what();
      }
    });
  publishing.join();
  if (!publish_error.empty()) {
    throw std::runtime_error("publishing: " + publish_error);
  }

  // Let what is still queued arrive (reliable), then stop the executor.
  uint64_t settled = stats.received.load();
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint64_t now = stats.received.load();
    if (now == settled || now >= published.total_sent) {
      break;
    }
    settled = now;
  }
  const std::string spin_error = spinning.stop();
  if (!spin_error.empty()) {
    throw std::runtime_error("spin: " + spin_error);
  }
  executor->remove_node(node);
  const uint64_t total_received = stats.received.load();

  const Edge & first = published.first;
  const Edge & last = published.last;
  const double wall_s = static_cast<double>(last.wall_ns - first.wall_ns) / 1e9;
  const double process_cpu = static_cast<double>(last.process_cpu_ns - first.process_cpu_ns) / 1e9;
  const double publisher_cpu =
    static_cast<double>(last.publisher_cpu_ns - first.publisher_cpu_ns) / 1e9;
  const uint64_t total_sent = published.total_sent;
  const uint64_t dropped = total_sent > total_received ? total_sent - total_received : 0;

  std::lock_guard<std::mutex> lock(stats.mutex);
  const bench::Latencies & lat = stats.latencies;
  std::printf(
    "{\"executor\": \"%s\", \"payload\": %llu, \"reliable\": %s, \"depth\": %u, "
    "\"rate_hz\": %s, \"window_s\": %s, \"sent\": %llu, \"received\": %llu, "
    "\"dropped\": %llu, \"drop_pct\": %s, \"sent_per_s\": %s, \"received_per_s\": %s, "
    "\"cpu_process_pct\": %s, \"cpu_executor_pct\": %s, \"latency_samples\": %zu, "
    "\"latency_p50_us\": %s, \"latency_p99_us\": %s, \"latency_p999_us\": %s, "
    "\"latency_max_us\": %s}\n",
    config.executor.c_str(),
    static_cast<unsigned long long>(config.payload),
    config.reliable ? "true" : "false",
    config.depth,
    bench::display(config.rate_hz).c_str(),
    bench::fixed(wall_s, 3).c_str(),
    static_cast<unsigned long long>(total_sent),
    static_cast<unsigned long long>(total_received),
    static_cast<unsigned long long>(dropped),
    bench::fixed(
      100.0 * static_cast<double>(dropped) /
      static_cast<double>(std::max<uint64_t>(total_sent, 1)), 2).c_str(),
    bench::fixed(static_cast<double>(last.sent - first.sent) / wall_s, 1).c_str(),
    bench::fixed(static_cast<double>(last.received - first.received) / wall_s, 1).c_str(),
    bench::fixed(100.0 * process_cpu / wall_s, 1).c_str(),
    bench::fixed(100.0 * std::max(0.0, process_cpu - publisher_cpu) / wall_s, 1).c_str(),
    lat.size(),
    bench::quantile(lat, 0.5).c_str(),
    bench::quantile(lat, 0.99).c_str(),
    bench::quantile(lat, 0.999).c_str(),
    bench::quantile(lat, 1.0).c_str());
  std::fflush(stdout);

  rclcpp::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char ** argv)
{
  return bench::guarded_main("bench_node_cpp", [&] {return run(argc, argv);});
}
