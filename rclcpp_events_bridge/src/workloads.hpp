// The workloads of bench_node_cpp, one source file each (workload_*.cpp), and what they
// share: the parsed command line, the delivery counters, the paced publisher loop with
// the measured window's edges, and the keys of the JSON line.
//
// The C++ twin of benchmarks/src/workload/ (the Rust bench_node): same flags, same keys.

#ifndef RCLCPP_EVENTS_BRIDGE__WORKLOADS_HPP_
#define RCLCPP_EVENTS_BRIDGE__WORKLOADS_HPP_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rclcpp/rclcpp.hpp"
#include "rclrs_tokio_msgs/msg/bench_message.hpp"

#include "bench_common.hpp"
#include "thread_cpu.hpp"

namespace workloads
{

using rclrs_tokio_msgs::msg::BenchMessage;
using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux, as Rust's Instant

// ---------------------------------------------------------------------------------------
// The command line
// ---------------------------------------------------------------------------------------

enum class Workload {Stream, Service, Action, Scaling, Parallel, RobotMix, MixedCriticality, Nodes};
enum class Role {Both, Sub, Pub};

const char * name(Workload workload);
const char * name(Role role);

/// Every flag of bench_node_cpp, parsed and checked (bench_node_cpp.cpp).
struct Config
{
  std::string executor;
  Workload workload = Workload::Stream;
  Role role = Role::Both;
  std::string topic;          // the base name of every topic of the run
  uint64_t payload = 0;
  bool reliable = true;
  uint32_t depth = 1000;
  double rate_hz = 0.0;       // 0: as fast as possible
  double warmup_s = 1.0;
  double window_s = 3.0;
  bool latency = false;
  uint64_t threads = 0;       // pool of rclcpp_multi / rclcpp_events_cbg (0: 2)
  bool intra_process = false; // stream, scaling, parallel: rclcpp's intra-process comms
  uint64_t subscriptions = 1;
  uint64_t workers = 1;
  uint64_t work_us = 200;     // parallel, mixed_criticality: CPU time each callback burns
  double burn_rate_hz = 200.0;  // mixed_criticality: the burning topic's rate
  uint64_t nodes = 1;         // nodes: how many nodes the process composes
  double timer_hz = 10.0;     // nodes: each node's timer
  double idle_exit_s = 1.0;   // sub role: end after this long without a message
  double publish_tail_s = 0.5;  // pub role: publishing after the window, so a subscriber
                                // process's window ends while messages still flow

  /// Parse and check; throws std::invalid_argument / std::runtime_error naming the flag.
  static Config from(const bench::Args & args);

  /// The QoS of every topic: keep last --depth, --reliability.
  rclcpp::QoS qos() const;

  /// The node's name, unique per process.
  std::string node_name() const;
};

// ---------------------------------------------------------------------------------------
// Counting deliveries
// ---------------------------------------------------------------------------------------

/// What the subscription callbacks record, shared by every subscription of a run.
struct Stats
{
  std::atomic<uint64_t> received{0};
  std::atomic<bool> in_window{false};
  std::atomic<int64_t> first_arrival_ns{0};  // CLOCK_MONOTONIC of the first delivery
  const bool latency;  // record latencies inside the window
  std::mutex mutex;
  bench::Latencies latencies;

  explicit Stats(bool record_latency)
  : latency(record_latency) {}

  uint64_t count() const {return received.load(std::memory_order_relaxed);}

  void on_message(const BenchMessage & msg)
  {
    if (first_arrival_ns.load(std::memory_order_relaxed) == 0) {
      int64_t none = 0;
      first_arrival_ns.compare_exchange_strong(none, bench::monotonic_ns());
    }
    received.fetch_add(1, std::memory_order_relaxed);
    if (latency && in_window.load(std::memory_order_relaxed)) {
      const int64_t ns = bench::monotonic_ns() - msg.header.send_time_ns;
      std::lock_guard<std::mutex> lock(mutex);
      latencies.push(ns);
    }
  }
};

/// `count` MutuallyExclusive callback groups; none (the node's default group) when
/// `count` is 1 and `default_for_one` is set.
std::vector<rclcpp::CallbackGroup::SharedPtr> make_groups(
  rclcpp::Node & node, uint64_t count, bool default_for_one);

/// One subscription per entry of `topics`, subscription i in group i % groups.size()
/// (the default group when `groups` is empty), each calling `callback`.
std::vector<rclcpp::Subscription<BenchMessage>::SharedPtr> subscribe(
  rclcpp::Node & node, const std::vector<std::string> & topics, const rclcpp::QoS & qos,
  const std::vector<rclcpp::CallbackGroup::SharedPtr> & groups,
  const std::function<void(const BenchMessage &)> & callback);

// ---------------------------------------------------------------------------------------
// The measured window
// ---------------------------------------------------------------------------------------

/// The clocks and counters at one edge of the window.
struct Edge
{
  int64_t wall_ns = 0;
  int64_t process_cpu_ns = 0;
  int64_t thread_cpu_ns = 0;  // the thread that took the edge (subtracted for the executor)
  uint64_t context_switches = 0;  // of the process's threads
  uint64_t sent = 0;
  uint64_t received = 0;

  /// An edge taken now, on the calling thread.
  static Edge now(uint64_t sent, uint64_t received)
  {
    Edge e;
    e.wall_ns = bench::monotonic_ns();
    e.process_cpu_ns = bench::process_cpu_ns();
    e.thread_cpu_ns = bench::thread_cpu_ns();
    e.context_switches = bench::context_switches_now();
    e.sent = sent;
    e.received = received;
    return e;
  }
};

/// The window between two edges.
struct Window
{
  Edge first;
  Edge last;

  double wall_s() const {return static_cast<double>(last.wall_ns - first.wall_ns) / 1e9;}
  double process_cpu_s() const
  {
    return static_cast<double>(last.process_cpu_ns - first.process_cpu_ns) / 1e9;
  }
  /// The process minus the thread that took the edges, never negative.
  double executor_cpu_s() const
  {
    const double own = static_cast<double>(last.thread_cpu_ns - first.thread_cpu_ns) / 1e9;
    return std::max(0.0, process_cpu_s() - own);
  }
  uint64_t received() const {return last.received - first.received;}
  /// `context_switches_per_msg`: the process's context switches per delivery (null
  /// without deliveries), as the Rust nodes report it.
  bench::Json & context_switches(bench::Json & json) const
  {
    if (received() == 0) {
      return json.null("context_switches_per_msg");
    }
    const uint64_t switches = last.context_switches - first.context_switches;
    return json.number(
      "context_switches_per_msg",
      static_cast<double>(switches) / static_cast<double>(received()), 3);
  }
};

/// How long to publish and how fast: warm-up, window, then a tail.
struct Schedule
{
  double rate_hz = 0.0;  // steps per second; 0: as fast as possible
  double warmup_s = 0.0;
  double window_s = 0.0;
  double tail_s = 0.0;
};

/// What the publisher loop did.
struct Published
{
  Window window;
  uint64_t total_sent = 0;  // messages over the whole run
  double elapsed_s = 0.0;   // wall seconds of the whole run
};

/// Call `step(seq)` on `schedule` and take the window's edges on this thread; `step`
/// publishes and returns how many messages it published. `stats.in_window` is true
/// while the window is open.
template<typename Step>
Published publish(const Schedule & schedule, Stats & stats, Step && step)
{
  const bool paced = schedule.rate_hz > 0.0;
  const double period_ns = paced ? 1e9 / schedule.rate_hz : 0.0;
  const auto start = Clock::now();
  const auto opens = start + bench::seconds_to_ns(schedule.warmup_s);
  const auto closes = opens + bench::seconds_to_ns(schedule.window_s);
  const auto end = closes + bench::seconds_to_ns(schedule.tail_s);

  Published out;
  bool opened = false;
  bool closed = false;
  uint64_t seq = 0;
  uint64_t sent = 0;
  for (;;) {
    const auto now = Clock::now();
    if (bench::interrupted()) {
      // SIGINT or SIGTERM: the window ends here (at once, if it had not opened), and
      // nothing more is published.
      stats.in_window.store(false, std::memory_order_relaxed);
      const Edge edge = Edge::now(sent, stats.count());
      if (!opened) {
        out.window.first = edge;
        opened = true;
      }
      if (!closed) {
        out.window.last = edge;
        closed = true;
      }
      break;
    }
    if (!opened && now >= opens) {
      out.window.first = Edge::now(sent, stats.count());
      opened = true;
      stats.in_window.store(true, std::memory_order_relaxed);
    }
    if (!closed && now >= closes) {
      stats.in_window.store(false, std::memory_order_relaxed);
      out.window.last = Edge::now(sent, stats.count());
      closed = true;
    }
    if (now >= end) {
      break;
    }
    if (paced) {
      // Due times from the start, so a late step does not shift the ones after it.
      const auto due = start + std::chrono::nanoseconds(
        static_cast<int64_t>(period_ns * static_cast<double>(seq)));
      if (!bench::sleep_until(due)) {
        continue;
      }
    }
    sent += step(seq);
    ++seq;
  }
  out.total_sent = sent;
  out.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

/// Run `body` on a thread of its own and return its result (or rethrow its error):
/// the publisher thread, apart from the executor's threads and the main thread.
template<typename Body>
auto on_own_thread(Body && body)
{
  return std::async(std::launch::async, std::forward<Body>(body)).get();
}

/// Wait for what is still queued to arrive: until the counter reaches `expected`, stops
/// moving for 100 ms, or 10 s have passed. A slow executor's backlog keeps the counter
/// moving, so it drains and counts as received; only what never arrives is dropped.
void settle(const Stats & stats, uint64_t expected);

/// One publisher step: number and time-stamp `msg`, then publish it. Returns 1 (sent).
uint64_t publish_one(rclcpp::Publisher<BenchMessage> & publisher, BenchMessage & msg, uint64_t seq);

/// A stream's publisher thread: one message of `config.payload` bytes, handed to
/// `step(msg, seq)` (which publishes and returns how many it sent) on `config`'s schedule
/// with no tail, on a thread of its own.
template<typename Step>
Published publish_stream(const Config & config, Stats & stats, Step && step)
{
  BenchMessage msg;
  msg.payload.resize(config.payload, 0);
  const Schedule schedule{config.rate_hz, config.warmup_s, config.window_s, 0.0};
  return on_own_thread(
    [&] {return publish(schedule, stats, [&](uint64_t seq) {return step(msg, seq);});});
}

/// Wait until each of `publishers` matched a subscription (20 s each, as the Rust nodes).
void wait_for_subscriptions(
  const std::vector<rclcpp::Publisher<BenchMessage>::SharedPtr> & publishers);

/// message_report for a run whose publisher thread's every message is one delivery
/// (Totals{sent, sent, received}), with `context_switches_per_msg` over its window.
bench::Json published_report(const Config & config, const Published & published, Stats & stats);

/// The run's node, with rclcpp's intra-process communication as `config` asks.
std::shared_ptr<rclcpp::Node> make_node(const Config & config);

/// What a subscriber process saw: its window, and its threads' CPU at the window's edges.
struct SubscriberWindow
{
  Window window;
  bench::ThreadTicks threads_first;
  bench::ThreadTicks threads_last;
};

/// A subscriber process's window, watched from the calling thread (the twin of the Rust
/// `publishing::subscriber_window`): it opens --warmup-s after the first arrival
/// (`first_arrival_ns`, 0 until then; within 30 s) and lasts --seconds; then the count
/// (`count`) goes on until nothing arrived for --idle-exit-s. `in_window` opens and
/// closes the callbacks' window, `at_edge` runs right after each edge is taken. Throws
/// when the stream stops before the window ends.
SubscriberWindow watch_subscriber(
  const Config & config, const std::function<uint64_t()> & count,
  const std::function<int64_t()> & first_arrival_ns, const std::function<void(bool)> & in_window,
  const std::function<void()> & at_edge);

/// Spin until this thread has used `work_ns` more CPU time.
void burn(int64_t work_ns);

/// Stop the executor's spin thread; a spin error is thrown.
void stop_spinning(bench::SpinThread & spinning);

// ---------------------------------------------------------------------------------------
// Closed-loop round trips (service, action) and the idle window (scaling, action)
// ---------------------------------------------------------------------------------------

/// What the driver did.
struct RoundTrips
{
  Window window;  // its edges count completed round trips
  uint64_t completed = 0;  // warm-up included
  bench::Latencies latencies;  // inside the window
};

/// The keys every round-trip workload reports: workload, role, executor, payload (bytes
/// per request, where the workload has one), the window, the round trips completed as
/// both sent and received (a closed loop loses none; warm-up included, as the message
/// workloads count), their rate, CPU and latencies. Callers append their own keys.
bench::Json round_trip_report(
  const Config & config, const RoundTrips & trips, std::optional<uint64_t> payload);

/// Call `round_trip(seq)` (which returns its round trip in nanoseconds) back to back
/// for the warm-up and the window, or until interrupted; the window's edges are taken
/// on this (the driver's) thread.
RoundTrips drive_round_trips(
  const Config & config, const std::function<int64_t(uint64_t)> & round_trip);

/// Settle for half a second, then measure --seconds in which this thread only sleeps.
Window idle_window(const Config & config);

// ---------------------------------------------------------------------------------------
// The JSON line
// ---------------------------------------------------------------------------------------

/// Totals over the whole run. `sent` is empty for a subscriber process (the harness
/// fills sent, dropped, drop_pct and sent_per_s from the publisher's line).
struct Totals
{
  std::optional<uint64_t> sent;  // messages published
  uint64_t expected = 0;         // deliveries expected: sent x subscriptions per topic
  uint64_t received = 0;         // deliveries
};

/// The keys of a message workload, in the order of the original bench_node_cpp line:
/// workload, role, executor, payload, reliable, depth, rate_hz, window_s, sent,
/// received, dropped, drop_pct, queued_at_close (published but not yet delivered when
/// the window closed), sent_per_s, received_per_s, cpu_process_pct,
/// cpu_executor_pct and the latency keys. Callers append their own keys.
bench::Json message_report(
  const Config & config, const Window & window, const Totals & totals,
  const bench::Latencies & latencies);

/// Print the line on stdout (one line, flushed), with "interrupted": true when SIGINT or
/// SIGTERM cut the run short.
void print(const bench::Json & json);

// ---------------------------------------------------------------------------------------
// The workloads; each returns the exit code, after printing its line
// ---------------------------------------------------------------------------------------

int run_stream(const Config & config);    // workload_stream.cpp
int run_service(const Config & config);   // workload_service.cpp
int run_action(const Config & config);    // workload_action.cpp (where rclcpp_action is)
int run_scaling(const Config & config);   // workload_scaling.cpp
int run_parallel(const Config & config);  // workload_parallel.cpp
int run_robot_mix(const Config & config);  // workload_robot_mix.cpp
int run_mixed_criticality(const Config & config);  // workload_criticality.cpp
int run_nodes(const Config & config);     // workload_composed.cpp

}  // namespace workloads

#endif  // RCLCPP_EVENTS_BRIDGE__WORKLOADS_HPP_
