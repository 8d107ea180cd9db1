// Timer benchmarks in one process with an rclcpp executor, printing one JSON line.
//
//   timer_node_cpp --executor rclcpp_single|rclcpp_multi|rclcpp_events|rclcpp_events_cbg
//                  --rate-hz R [--timers N] [--seconds S] [--warmup-s W]
//   timer_node_cpp --executor ... --sim-speed X [--period-s P] [--seconds S] [--clock-hz H]
//
// The C++ twin of benchmarks/src/bin/timer_node.rs, with the same flags and JSON keys.
//
// Without `--sim-speed`: --timers N steady-clock (wall) timers (default one) at R Hz,
// their phases spread evenly over one period; reports the rate each achieved on
// average, the jitter of their periods (|interval - period|, every timer's intervals
// pooled) and the process CPU.
//
// With `--sim-speed X`: a node with `use_sim_time:=true` and a timer on the node's (ROS)
// clock with period P; another node publishes ROS time at H Hz (wall), advancing
// X x 1/H seconds of ROS time per message (X = 0 keeps publishing the same time: paused),
// on a clock topic private to the process (the node's /clock is remapped to it).
// Reports the fires seen against the fires due, and the process CPU. The sim-time node
// is created with `use_clock_thread(false)`, so its /clock subscription is served by
// the executor under test (as in rclrs) rather than by rclcpp's private clock thread.
//
// Exit codes: 0 ok, 2 bad argument or failed run, 3 executor not in this rclcpp.

#include <unistd.h>

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
#include <vector>

#include "builtin_interfaces/msg/time.hpp"
#include "rclcpp/rclcpp.hpp"
#include "rosgraph_msgs/msg/clock.hpp"

#include "bench_common.hpp"

namespace
{

using Clock = std::chrono::steady_clock;

/// CLOCK_MONOTONIC stamps of timer fires, written by the timer callback.
struct Fires
{
  std::mutex mutex;
  std::vector<int64_t> stamps;

  void push(int64_t ns)
  {
    std::lock_guard<std::mutex> lock(mutex);
    stamps.push_back(ns);
  }
};

/// Rejects negative, NaN and infinite durations/rates with the argument's name.
double non_negative(const char * name, double value)
{
  if (!(value >= 0.0) || !std::isfinite(value)) {
    throw std::invalid_argument(std::string(name) + ": must be a finite number >= 0");
  }
  return value;
}

/// Rejects zero too, for values that are divided by.
double positive(const char * name, double value)
{
  if (!(non_negative(name, value) > 0.0)) {
    throw std::invalid_argument(std::string(name) + ": must be > 0");
  }
  return value;
}

/// Sim-time mode: a node-time timer driven by an in-process clock publisher.
std::string run_sim_time(
  const bench::Args & args, const std::string & executor_name, rclcpp::Executor & executor,
  double speed, double seconds, const std::string & pid)
{
  const double period_s = positive("--period-s", args.get<double>("period-s", 1.0));
  const double clock_hz = positive("--clock-hz", args.get<double>("clock-hz", 100.0));
  Fires fires;

  // ROS time on a topic of this process's own, as in timer_node.rs: the node's /clock is
  // remapped to it, so no other process's /clock reaches it, nor this one theirs.
  const std::string clock_topic = "/timer_node_" + pid + "/clock";
  auto node = std::make_shared<rclcpp::Node>(
    "timer_sim_" + pid,
    rclcpp::NodeOptions()
    .arguments({"--ros-args", "-p", "use_sim_time:=true", "-r", "/clock:=" + clock_topic})
    .use_clock_thread(false));
  auto timer = rclcpp::create_timer(
    node, node->get_clock(), rclcpp::Duration::from_seconds(period_s),
    [&fires] {fires.push(bench::monotonic_ns());});

  auto clock_node = std::make_shared<rclcpp::Node>("clock_pub_" + pid);
  auto clock_pub = clock_node->create_publisher<rosgraph_msgs::msg::Clock>(
    clock_topic, rclcpp::QoS(rclcpp::KeepLast(10)).reliable());
  bench::wait_for_match(
    [&clock_pub] {return clock_pub->get_subscription_count();},
    "the /clock subscription never matched");

  executor.add_node(node);
  executor.add_node(clock_node);
  bench::SpinThread spinning(executor);

  // Start ROS time at 1000 s, then advance it `speed` times wall time.
  constexpr int64_t start_ns = 1000LL * 1000000000LL;
  auto publish = [&clock_pub](int64_t ns) {
      rosgraph_msgs::msg::Clock msg;
      msg.clock.sec = static_cast<int32_t>(ns / 1000000000LL);
      msg.clock.nanosec = static_cast<uint32_t>(ns % 1000000000LL);
      clock_pub->publish(msg);
    };
  publish(start_ns);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    std::lock_guard<std::mutex> lock(fires.mutex);
    fires.stamps.clear();
  }

  const int64_t cpu0 = bench::process_cpu_ns();
  const auto wall0 = Clock::now();
  const auto duration = bench::seconds_to_ns(seconds);
  const double step_ns = 1e9 / clock_hz;
  uint64_t n = 0;
  int64_t sim_ns = start_ns;
  while (Clock::now() - wall0 < duration) {
    ++n;
    if (!bench::sleep_until(
        wall0 + std::chrono::nanoseconds(static_cast<int64_t>(step_ns * static_cast<double>(n)))))
    {
      break;
    }
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - wall0).count();
    sim_ns = start_ns + static_cast<int64_t>(speed * elapsed_s * 1e9);
    publish(sim_ns);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  const double cpu = static_cast<double>(bench::process_cpu_ns() - cpu0) / 1e9;

  const std::string spin_error = spinning.stop();
  if (!spin_error.empty()) {
    throw std::runtime_error("spin: " + spin_error);
  }
  executor.remove_node(clock_node);
  executor.remove_node(node);

  const double sim_s = static_cast<double>(sim_ns - start_ns) / 1e9;
  const auto expected = static_cast<uint64_t>(std::floor(sim_s / period_s));
  size_t fired = 0;
  {
    std::lock_guard<std::mutex> lock(fires.mutex);
    fired = fires.stamps.size();
  }
  char line[512];
  std::snprintf(
    line, sizeof(line),
    "{\"executor\": \"%s\", \"sim_speed\": %s, \"period_s\": %s, \"wall_s\": %s, "
    "\"sim_s\": %s, \"fires\": %zu, \"expected_fires\": %llu, \"cpu_process_pct\": %s}",
    executor_name.c_str(), bench::display(speed).c_str(), bench::display(period_s).c_str(),
    bench::fixed(wall, 3).c_str(), bench::fixed(sim_s, 3).c_str(), fired,
    static_cast<unsigned long long>(expected), bench::fixed(100.0 * cpu / wall, 2).c_str());
  return line;
}

/// Rate mode: `--timers` steady-clock timers at `--rate-hz`, their rate and period
/// jitter.
std::string run_rate(
  const bench::Args & args, const std::string & executor_name, rclcpp::Executor & executor,
  double seconds, double warmup, const std::string & pid)
{
  const double rate_hz = positive("--rate-hz", args.get<double>("rate-hz", 1000.0));
  const uint64_t timers = args.get<uint64_t>("timers", 1);
  if (timers < 1) {
    throw std::runtime_error("--timers: at least one");
  }
  std::vector<std::unique_ptr<Fires>> fires;
  std::atomic<bool> recording{false};

  auto node = std::make_shared<rclcpp::Node>("timer_rate_" + pid);
  const auto period = bench::seconds_to_ns(1.0 / rate_hz);
  std::vector<rclcpp::TimerBase::SharedPtr> timer_handles;
  for (uint64_t i = 0; i < timers; ++i) {
    fires.push_back(std::make_unique<Fires>());
    Fires * sink = fires.back().get();
    // create_wall_timer: an RCL_STEADY_TIME timer, the counterpart of the Rust node's
    // plain-Duration (steady) timer.
    timer_handles.push_back(
      node->create_wall_timer(
        period, [sink, &recording] {
          if (recording.load(std::memory_order_relaxed)) {
            sink->push(bench::monotonic_ns());
          }
        }));
    // A timer's phase is its creation time: spread them over one period.
    if (i + 1 < timers) {
      std::this_thread::sleep_for(period / static_cast<int64_t>(timers));
    }
  }

  executor.add_node(node);
  bench::SpinThread spinning(executor);
  bench::sleep_until(Clock::now() + bench::seconds_to_ns(warmup));
  const int64_t cpu0 = bench::process_cpu_ns();
  const int64_t t0 = bench::monotonic_ns();
  recording.store(true, std::memory_order_relaxed);
  bench::sleep_until(Clock::now() + bench::seconds_to_ns(seconds));
  recording.store(false, std::memory_order_relaxed);
  const int64_t t1 = bench::monotonic_ns();
  const double cpu = static_cast<double>(bench::process_cpu_ns() - cpu0) / 1e9;

  const std::string spin_error = spinning.stop();
  if (!spin_error.empty()) {
    throw std::runtime_error("spin: " + spin_error);
  }
  executor.remove_node(node);

  const double wall = static_cast<double>(t1 - t0) / 1e9;
  const double period_ns = 1e9 / rate_hz;
  bench::Latencies jitter;
  size_t fired = 0;
  for (const auto & timer_fires : fires) {
    std::lock_guard<std::mutex> lock(timer_fires->mutex);
    const std::vector<int64_t> & stamps = timer_fires->stamps;
    fired += stamps.size();
    for (size_t i = 1; i < stamps.size(); ++i) {
      const double interval = static_cast<double>(stamps[i] - stamps[i - 1]);
      jitter.push(static_cast<int64_t>(std::fabs(interval - period_ns)));
    }
  }
  char line[1024];
  std::snprintf(
    line, sizeof(line),
    "{\"executor\": \"%s\", \"rate_hz\": %s, \"timers\": %llu, \"window_s\": %s, \"fires\": %zu, "
    "\"expected_fires\": %llu, \"timer_rate_hz\": %s, \"timer_jitter_p50_us\": %s, "
    "\"timer_jitter_p99_us\": %s, \"timer_jitter_max_us\": %s, \"cpu_process_pct\": %s, "
    "\"timer_jitter_hist\": %s}",
    executor_name.c_str(), bench::display(rate_hz).c_str(),
    static_cast<unsigned long long>(timers), bench::fixed(wall, 3).c_str(), fired,
    static_cast<unsigned long long>(
      std::llround(wall * rate_hz * static_cast<double>(timers))),
    bench::fixed(static_cast<double>(fired) / wall / static_cast<double>(timers), 1).c_str(),
    bench::quantile(jitter, 0.5).c_str(), bench::quantile(jitter, 0.99).c_str(),
    bench::quantile(jitter, 1.0).c_str(), bench::fixed(100.0 * cpu / wall, 2).c_str(),
    jitter.histogram_json(bench::jitter_histogram_edges_us()).c_str());
  return line;
}

int run(int argc, char ** argv)
{
  const bench::Args args(argc, argv);
  const std::string executor_name = args.string("executor", "rclcpp_events");
  const double seconds = non_negative("--seconds", args.get<double>("seconds", 3.0));
  const double warmup = non_negative("--warmup-s", args.get<double>("warmup-s", 0.5));
  const bool sim_mode = args.has("sim-speed");
  const double speed =
    sim_mode ? non_negative("--sim-speed", args.get<double>("sim-speed", 0.0)) : 0.0;
  // An executor this rclcpp lacks is reported (exit 3) before anything is set up.
  bench::validate_executor(executor_name);

  bench::record_signals();
  rclcpp::init(argc, argv);
  const std::string pid = std::to_string(::getpid());
  std::string result;
  {
    auto executor = bench::make_executor(executor_name, 0);
    result = sim_mode ?
      run_sim_time(args, executor_name, *executor, speed, seconds, pid) :
      run_rate(args, executor_name, *executor, seconds, warmup, pid);
  }
  const bool interrupted = bench::interrupted();
  if (interrupted && !result.empty() && result.back() == '}') {
    // What was measured up to the signal, marked as such.
    result.pop_back();
    result += ", \"interrupted\": true}";
  }
  std::printf("%s\n", result.c_str());
  std::fflush(stdout);
  if (rclcpp::ok()) {
    rclcpp::shutdown();
  }
  return interrupted ? bench::interrupted_exit_code() : 0;
}

}  // namespace

int main(int argc, char ** argv)
{
  return bench::guarded_main("timer_node_cpp", [&] {return run(argc, argv);});
}
