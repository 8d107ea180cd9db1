// Shared pieces of the rclcpp comparison nodes: the `--key value` argument reader, the
// clocks, latency/jitter percentiles, number formatting that matches the Rust nodes'
// JSON (and a one-line JSON object builder), and the executor factory.
//
// Everything here mirrors rclrs_tokio_benchmarks (benchmarks/src/lib.rs) so that a row
// printed by `bench_node_cpp` / `timer_node_cpp` can sit next to one printed by
// `bench_node` / `timer_node` without any translation in the harness.

#ifndef RCLCPP_EVENTS_BRIDGE__BENCH_COMMON_HPP_
#define RCLCPP_EVENTS_BRIDGE__BENCH_COMMON_HPP_

#include <time.h>

#include <algorithm>
#include <csignal>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rclcpp/rclcpp.hpp"
#include "rclcpp/version.h"
#include "rclcpp/experimental/executors/events_executor/events_executor.hpp"

// The EventsCBGExecutor only exists in newer rclcpp releases: Kilted backported it in
// rclcpp 29.5.9 as `rclcpp/executors/events_cbg_executor/…`, Rolling has it under
// `rclcpp/experimental/executors/events_cbg_executor/…`. The class has been declared in
// `rclcpp::executors` in both so far; the lookup below finds it in either namespace.
// Defining RCLCPP_EVENTS_BRIDGE_HAS_CBG=0 on the command line forces the absent path.
#if !defined(RCLCPP_EVENTS_BRIDGE_HAS_CBG) && defined(__has_include)
#  if __has_include("rclcpp/executors/events_cbg_executor/events_cbg_executor.hpp")
#    include "rclcpp/executors/events_cbg_executor/events_cbg_executor.hpp"
#    define RCLCPP_EVENTS_BRIDGE_HAS_CBG 1
#  elif __has_include("rclcpp/experimental/executors/events_cbg_executor/events_cbg_executor.hpp")
#    include "rclcpp/experimental/executors/events_cbg_executor/events_cbg_executor.hpp"
#    define RCLCPP_EVENTS_BRIDGE_HAS_CBG 1
#  endif
#endif
#ifndef RCLCPP_EVENTS_BRIDGE_HAS_CBG
#  define RCLCPP_EVENTS_BRIDGE_HAS_CBG 0
#endif

#if RCLCPP_EVENTS_BRIDGE_HAS_CBG
// Declare both candidate namespaces (harmless if empty) so that both using-directives
// are valid; the unqualified name then resolves to the one that really has the class.
namespace rclcpp::executors {}
namespace rclcpp::experimental::executors {}
namespace rclcpp_events_bridge_cbg_lookup
{
using namespace rclcpp::executors;               // NOLINT(build/namespaces)
using namespace rclcpp::experimental::executors;  // NOLINT(build/namespaces)
using EventsCBG = EventsCBGExecutor;
}  // namespace rclcpp_events_bridge_cbg_lookup
#endif

namespace bench
{

// ---------------------------------------------------------------------------------------
// Errors and exit codes
// ---------------------------------------------------------------------------------------

/// Exit code for a bad argument or a failed run (the Rust nodes use 2 as well).
constexpr int kExitError = 2;
/// Exit code for an executor this rclcpp does not provide: the harness reports it absent.
constexpr int kExitUnavailable = 3;

/// Thrown when `--executor` names an executor the installed rclcpp lacks.
class ExecutorUnavailable : public std::runtime_error
{
public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------
// Clocks
// ---------------------------------------------------------------------------------------

/// Nanoseconds of a POSIX clock.
inline int64_t clock_ns(clockid_t clock)
{
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + static_cast<int64_t>(t.tv_nsec);
}

/// CLOCK_MONOTONIC: one clock for every process on the machine, as in the Rust nodes,
/// so `send_time_ns` stamps compare across processes too.
inline int64_t monotonic_ns() {return clock_ns(CLOCK_MONOTONIC);}

/// CPU time of the whole process.
inline int64_t process_cpu_ns() {return clock_ns(CLOCK_PROCESS_CPUTIME_ID);}

/// CPU time of the calling thread.
inline int64_t thread_cpu_ns() {return clock_ns(CLOCK_THREAD_CPUTIME_ID);}

/// Seconds as a std::chrono duration (nanosecond resolution).
inline std::chrono::nanoseconds seconds_to_ns(double seconds)
{
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(seconds * 1e9)));
}

// ---------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------

/// `--key value` and `--flag` arguments, ignoring everything from `--ros-args` to `--`
/// (the same rules as the Rust `Args`): a flag followed by another `--…` argument or by
/// nothing is "true"; a later occurrence of a key replaces an earlier one.
class Args
{
public:
  Args(int argc, const char * const * argv)
  {
    bool in_ros_args = false;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--ros-args") {
        in_ros_args = true;
        continue;
      }
      if (in_ros_args) {
        if (arg == "--") {
          in_ros_args = false;
        }
        continue;
      }
      if (arg.rfind("--", 0) != 0) {
        continue;
      }
      std::string value = "true";
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
        value = argv[++i];
      }
      values_[arg.substr(2)] = value;
    }
  }

  /// The string value of `--key`, or `fallback`.
  std::string string(const std::string & key, const std::string & fallback) const
  {
    auto it = values_.find(key);
    return it == values_.end() ? fallback : it->second;
  }

  /// True when `--key` was given at all.
  bool has(const std::string & key) const {return values_.count(key) != 0;}

  /// The value of `--key` parsed as T, or `fallback`. A value that does not parse
  /// throws an error naming the argument.
  template<typename T>
  T get(const std::string & key, T fallback) const
  {
    auto it = values_.find(key);
    if (it == values_.end()) {
      return fallback;
    }
    T out{};
    if (!parse(it->second, out)) {
      throw std::runtime_error("--" + key + ": cannot parse \"" + it->second + "\"");
    }
    return out;
  }

private:
  static bool parse(const std::string & s, bool & out)
  {
    if (s == "true") {
      out = true;
      return true;
    }
    if (s == "false") {
      out = false;
      return true;
    }
    return false;
  }

  static bool parse(const std::string & s, double & out)
  {
    if (s.empty()) {
      return false;
    }
    char * end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size();
  }

  // Unsigned integers: digits only (an optional leading '+'), no sign games of strtoull.
  template<typename U>
  static bool parse_unsigned(const std::string & s, U & out)
  {
    const char * first = s.data();
    const char * last = s.data() + s.size();
    if (first != last && *first == '+') {
      ++first;
    }
    if (first == last) {
      return false;
    }
    auto [ptr, ec] = std::from_chars(first, last, out);
    return ec == std::errc() && ptr == last;
  }

  static bool parse(const std::string & s, uint64_t & out) {return parse_unsigned(s, out);}
  static bool parse(const std::string & s, uint32_t & out) {return parse_unsigned(s, out);}

  std::map<std::string, std::string> values_;
};

// ---------------------------------------------------------------------------------------
// Statistics and formatting
// ---------------------------------------------------------------------------------------

/// Samples in nanoseconds, summarised as nearest-rank percentiles (as `Latencies`).
class Latencies
{
public:
  void push(int64_t ns) {samples_ns_.push_back(ns);}
  size_t size() const {return samples_ns_.size();}

  /// The `q` quantile (0..1) in microseconds, nearest rank; false when empty.
  bool quantile_us(double q, double & out) const
  {
    if (samples_ns_.empty()) {
      return false;
    }
    std::vector<int64_t> sorted = samples_ns_;
    std::sort(sorted.begin(), sorted.end());
    const double clamped = std::min(1.0, std::max(0.0, q));
    auto rank = static_cast<size_t>(std::ceil(clamped * static_cast<double>(sorted.size())));
    rank = std::max<size_t>(rank, 1);
    out = static_cast<double>(sorted[rank - 1]) / 1000.0;
    return true;
  }

  /// How many samples fall at or below each upper edge (µs) and above the previous one;
  /// a last count for those above every edge. As `Latencies::histogram` in Rust.
  std::string histogram_json(const std::vector<double> & upper_edges_us) const
  {
    std::vector<uint64_t> counts(upper_edges_us.size() + 1, 0);
    for (int64_t ns : samples_ns_) {
      const double us = static_cast<double>(ns) / 1000.0;
      const auto bucket = static_cast<size_t>(
        std::lower_bound(upper_edges_us.begin(), upper_edges_us.end(), us) -
        upper_edges_us.begin());
      ++counts[bucket];
    }
    std::string out = "[";
    for (size_t i = 0; i < counts.size(); ++i) {
      out += (i ? ", " : "") + std::to_string(counts[i]);
    }
    return out + "]";
  }

private:
  std::vector<int64_t> samples_ns_;
};

/// Upper edges (µs) of the timer jitter histogram, shared with the Rust timer node and
/// the harness.
inline const std::vector<double> & jitter_histogram_edges_us()
{
  static const std::vector<double> edges{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
  return edges;
}

/// A number with `decimals` digits after the point (Rust's `{:.N}`); JSON `null` when
/// the value is not finite.
inline std::string fixed(double value, int decimals)
{
  if (!std::isfinite(value)) {
    return "null";
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

/// A number as Rust's `Display` for f64 prints it: the shortest decimal that reads back
/// to the same value, never in exponent form, without a trailing ".0" (1000.0 -> "1000").
inline std::string display(double value)
{
  if (!std::isfinite(value)) {
    return "null";
  }
  char buf[400];  // the longest fixed form of a double is ~330 characters
  auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
  if (result.ec != std::errc()) {
    return fixed(value, 6);
  }
  return std::string(buf, result.ptr);
}

/// A percentile with one decimal, or `null` when there are no samples.
inline std::string quantile(const Latencies & samples, double q)
{
  double us = 0.0;
  return samples.quantile_us(q, us) ? fixed(us, 1) : std::string("null");
}

/// A JSON string: `value` in quotes, with quotes and backslashes escaped.
inline std::string quoted(const std::string & value)
{
  std::string json = "\"";
  for (const char c : value) {
    if (c == '"' || c == '\\') {
      json += '\\';
    }
    json += c;
  }
  return json + "\"";
}

/// One flat JSON object, built key by key in the order the keys are added and printed
/// as one line: `{"key": value, "key": value}` (the spacing of the Rust nodes' lines).
class Json
{
public:
  /// A string value.
  Json & text(const std::string & key, const std::string & value)
  {
    return raw(key, quoted(value));
  }

  /// An unsigned integer.
  Json & integer(const std::string & key, uint64_t value)
  {
    return raw(key, std::to_string(value));
  }

  /// A number with `decimals` digits after the point, `null` when not finite.
  Json & number(const std::string & key, double value, int decimals)
  {
    return raw(key, fixed(value, decimals));
  }

  /// `true` or `false`.
  Json & flag(const std::string & key, bool value) {return raw(key, value ? "true" : "false");}

  /// `null`: a value this process cannot know (the harness fills it in).
  Json & null(const std::string & key) {return raw(key, "null");}

  /// `latency_samples` and the p50/p99/p999/max quantiles in microseconds.
  Json & latencies(const Latencies & samples) {return latencies_as("latency", samples);}

  /// `<prefix>_samples` and the `<prefix>_p50_us`, `_p99_us`, `_p999_us` and `_max_us`
  /// quantiles: one stream's latencies among several (`control_latency_*`).
  Json & latencies_as(const std::string & prefix, const Latencies & samples)
  {
    raw(prefix + "_samples", std::to_string(samples.size()));
    raw(prefix + "_p50_us", quantile(samples, 0.5));
    raw(prefix + "_p99_us", quantile(samples, 0.99));
    raw(prefix + "_p999_us", quantile(samples, 0.999));
    return raw(prefix + "_max_us", quantile(samples, 1.0));
  }

  /// A value already formatted as JSON.
  Json & raw(const std::string & key, const std::string & json)
  {
    line_ += line_.empty() ? "{" : ", ";
    line_ += "\"" + key + "\": " + json;
    return *this;
  }

  /// The object as one line, without the newline.
  std::string line() const {return line_.empty() ? "{}" : line_ + "}";}

private:
  std::string line_;
};

// ---------------------------------------------------------------------------------------
// Executors
// ---------------------------------------------------------------------------------------

/// The executor names these nodes accept, for error messages.
constexpr const char * kExecutorNames =
  "rclcpp_single, rclcpp_multi, rclcpp_events or rclcpp_events_cbg";

/// Whether this build has the EventsCBGExecutor.
constexpr bool kHasEventsCbg = RCLCPP_EVENTS_BRIDGE_HAS_CBG != 0;

/// Check `name` before anything is set up: throws ExecutorUnavailable when this rclcpp
/// lacks the executor and std::invalid_argument for a name that is not an rclcpp one.
inline void validate_executor(const std::string & name)
{
  if (name == "rclcpp_single" || name == "rclcpp_multi" || name == "rclcpp_events") {
    return;
  }
  if (name == "rclcpp_events_cbg") {
    if (kHasEventsCbg) {
      return;
    }
    throw ExecutorUnavailable(
            "--executor rclcpp_events_cbg: the EventsCBGExecutor is not available in this "
            "rclcpp (" + std::to_string(RCLCPP_VERSION_MAJOR) + "." +
            std::to_string(RCLCPP_VERSION_MINOR) + "." + std::to_string(RCLCPP_VERSION_PATCH) +
            ")");
  }
  throw std::invalid_argument("--executor " + name + ": use " + kExecutorNames);
}

/// Create the executor called `name` (see validate_executor for what it throws).
/// `threads` is the pool size of the multi-threaded executors; 0 picks 2, the size the
/// comparison uses (MultiThreadedExecutor's own default would be the core count).
inline std::unique_ptr<rclcpp::Executor> make_executor(const std::string & name, size_t threads)
{
  validate_executor(name);
  const size_t pool = threads > 0 ? threads : 2;
  const rclcpp::ExecutorOptions options;
  if (name == "rclcpp_single") {
    return std::make_unique<rclcpp::executors::SingleThreadedExecutor>(options);
  }
  if (name == "rclcpp_multi") {
    return std::make_unique<rclcpp::executors::MultiThreadedExecutor>(options, pool);
  }
  if (name == "rclcpp_events") {
    // The default events queue; timers run on the spinning thread.
    return std::make_unique<rclcpp::experimental::executors::EventsExecutor>();
  }
#if RCLCPP_EVENTS_BRIDGE_HAS_CBG
  return std::make_unique<rclcpp_events_bridge_cbg_lookup::EventsCBG>(options, pool);
#else
  throw std::logic_error("unreachable: validate_executor accepted " + name);
#endif
}

/// Run `body` as a node's main: report errors on stderr as "<program>: <error>" and turn
/// them into the exit codes the harness expects (3 = executor absent, 2 = failure).
/// The message of an error on one line (rclcpp's messages may span several).
inline std::string one_line(const char * what)
{
  std::string line = what;
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

inline int guarded_main(const char * program, const std::function<int()> & body)
{
  try {
    return body();
  } catch (const ExecutorUnavailable & e) {
    std::fprintf(stderr, "%s: %s\n", program, one_line(e.what()).c_str());
    if (rclcpp::ok()) {
      rclcpp::shutdown();
    }
    return kExitUnavailable;
  } catch (const std::exception & e) {
    std::fprintf(stderr, "%s: %s\n", program, one_line(e.what()).c_str());
    if (rclcpp::ok()) {
      rclcpp::shutdown();
    }
    return kExitError;
  }
}

// ---------------------------------------------------------------------------------------
// SIGINT and SIGTERM
// ---------------------------------------------------------------------------------------
// rclcpp's signal handler shuts the context down, then calls the handler that was
// installed before it: record_signal, which keeps the signal's number for the exit code.
// A node stops its window when interrupted() turns true, prints what it measured marked
// "interrupted", and exits with 128 + the signal's number (130 SIGINT, 143 SIGTERM).

inline volatile std::sig_atomic_t g_signal = 0;

inline void record_signal(int number)
{
  if (g_signal == 0) {
    g_signal = number;
  }
}

/// Install record_signal for SIGINT and SIGTERM; call before rclcpp::init.
inline void record_signals()
{
  std::signal(SIGINT, record_signal);
  std::signal(SIGTERM, record_signal);
}

/// True once SIGINT or SIGTERM arrived (or the context was shut down); after rclcpp::init.
inline bool interrupted()
{
  return g_signal != 0 || !rclcpp::ok();
}

/// 128 + the signal's number (SIGINT if the context was shut down some other way).
inline int interrupted_exit_code()
{
  return 128 + (g_signal != 0 ? static_cast<int>(g_signal) : SIGINT);
}

/// Sleep until `due`, or until interrupted (checked every 10 ms); false if interrupted.
template<typename TimePoint>
bool sleep_until(TimePoint due)
{
  for (;;) {
    if (interrupted()) {
      return false;
    }
    const auto now = TimePoint::clock::now();
    if (now >= due) {
      return true;
    }
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        due - now, std::chrono::milliseconds(10)));
  }
}

/// Runs `executor->spin()` on its own thread and stops it on request.
///
/// Stopping calls `cancel()` until `spin()` has returned, so a cancel that lands before
/// the spin thread entered `spin()` cannot leave it spinning forever.
class SpinThread
{
public:
  explicit SpinThread(rclcpp::Executor & executor)
  : executor_(executor),
    thread_([this] {
        try {
          executor_.spin();
        } catch (const std::exception & e) {
          error_ = e.what();
        }
        done_.store(true);
      })
  {
  }

  SpinThread(const SpinThread &) = delete;
  SpinThread & operator=(const SpinThread &) = delete;

  ~SpinThread() {stop();}

  /// Stop spinning and join; returns the error `spin()` threw, if any ("" otherwise).
  std::string stop()
  {
    if (thread_.joinable()) {
      while (!done_.load()) {
        executor_.cancel();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      thread_.join();
    }
    return error_;
  }

private:
  rclcpp::Executor & executor_;
  std::atomic<bool> done_{false};
  std::string error_;
  std::thread thread_;  // last: starts after the members it uses exist
};

/// Block until `count()` reaches `at_least`, or throw `what` after 20 s (as the Rust nodes).
inline void wait_for_count(
  const std::function<size_t()> & count, size_t at_least, const std::string & what)
{
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (count() < at_least) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(what);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// Block until `count()` is non-zero, or throw `what` after 20 s (as the Rust nodes).
inline void wait_for_match(const std::function<size_t()> & count, const std::string & what)
{
  wait_for_count(count, 1, what);
}

}  // namespace bench

#endif  // RCLCPP_EVENTS_BRIDGE__BENCH_COMMON_HPP_
