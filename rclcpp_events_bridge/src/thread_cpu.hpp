// CPU time per thread of this process, grouped by thread name, from
// /proc/self/task/*/stat: the twin of benchmarks/src/thread_cpu.rs, with the same name
// folding (digits become one '#'), the same receive-thread names and the same JSON keys
// (`receive_cpu_pct`, `receive_cpu_per_msg_us`, `thread_cpu_pct`).
//
// A subscriber process takes one snapshot at each edge of its window; the difference
// says how much the middleware's receive threads spent per message. Every edge of a
// stream window also sums the threads' context switches (from /proc/self/task/*/status)
// for `context_switches_per_msg`, the wake-ups a design pays for.

#ifndef RCLCPP_EVENTS_BRIDGE__THREAD_CPU_HPP_
#define RCLCPP_EVENTS_BRIDGE__THREAD_CPU_HPP_

#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>

#include "bench_common.hpp"

namespace bench
{

/// Each thread name's CPU time in clock ticks, summed over the threads of that name.
using ThreadTicks = std::map<std::string, uint64_t>;

/// The thread's folded name and `utime + stime` from one `stat` line; false if the line
/// cannot be read.
inline bool parse_thread_stat(const std::string & stat, std::string & name, uint64_t & ticks)
{
  const auto open = stat.find('(');
  const auto close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return false;
  }
  name.clear();
  for (const char c : stat.substr(open + 1, close - open - 1)) {
    const char folded = (c >= '0' && c <= '9') ? '#' : c;
    if (!(folded == '#' && !name.empty() && name.back() == '#')) {
      name += folded;
    }
  }
  // After comm: state is field 3; utime and stime are fields 14 and 15.
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 0; i < 11; ++i) {
    rest >> field;
  }
  uint64_t utime = 0;
  uint64_t stime = 0;
  if (!(rest >> utime >> stime)) {
    return false;
  }
  ticks = utime + stime;
  return true;
}

/// Open `file` (`stat`, `status`) of each of this process's threads and hand the stream
/// to `read` (threads that just ended are left out).
template<typename Read>
void for_each_thread(const char * file, Read read)
{
  DIR * tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    return;
  }
  while (const dirent * task = readdir(tasks)) {
    if (task->d_name[0] == '.') {
      continue;
    }
    std::ifstream stream(std::string("/proc/self/task/") + task->d_name + "/" + file);
    read(stream);
  }
  closedir(tasks);
}

/// The process's threads now (threads that just ended are left out).
inline ThreadTicks thread_ticks_now()
{
  ThreadTicks ticks;
  for_each_thread(
    "stat", [&ticks](std::ifstream & file) {
      const std::string stat(
        (std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
      std::string name;
      uint64_t used = 0;
      if (parse_thread_stat(stat, name, used)) {
        ticks[name] += used;
      }
    });
  return ticks;
}

/// `voluntary_ctxt_switches + nonvoluntary_ctxt_switches` from one task's `status`.
inline uint64_t parse_switches(std::istream & status)
{
  uint64_t switches = 0;
  std::string line;
  while (std::getline(status, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    const std::string key = line.substr(0, colon);
    if (key == "voluntary_ctxt_switches" || key == "nonvoluntary_ctxt_switches") {
      switches += std::strtoull(line.c_str() + colon + 1, nullptr, 10);
    }
  }
  return switches;
}

/// The context switches of this process's threads so far (threads that just ended are
/// left out): the twin of `context_switches_now` in benchmarks/src/thread_cpu.rs.
inline uint64_t context_switches_now()
{
  uint64_t switches = 0;
  for_each_thread(
    "status", [&switches](std::ifstream & status) {switches += parse_switches(status);});
  return switches;
}

/// Fast DDS's UDP, TCP, shared-memory and data-sharing listeners: the threads that run
/// the rmw listener, and with it rclcpp's push callbacks.
inline bool is_receive_thread(const std::string & name)
{
  for (const char * prefix : {"dds.udp.", "dds.tcp.", "dds.shm.#", "dds.dsha."}) {
    if (name.rfind(prefix, 0) == 0) {
      return true;
    }
  }
  return false;
}

/// `receive_cpu_pct`, `receive_cpu_per_msg_us` and `thread_cpu_pct` between two
/// snapshots over `wall_s` seconds with `received` deliveries.
inline Json & receive_threads(
  Json & json, const ThreadTicks & first, const ThreadTicks & last, double wall_s,
  uint64_t received)
{
  const double per_tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  double receive_s = 0.0;
  std::string threads = "{";
  for (const auto & [name, now] : last) {
    const auto before = first.find(name);
    const uint64_t then = before == first.end() ? 0 : before->second;
    if (now <= then) {
      continue;
    }
    const double seconds = static_cast<double>(now - then) * per_tick;
    if (is_receive_thread(name)) {
      receive_s += seconds;
    }
    threads += (threads.size() > 1 ? ", " : "") + quoted(name) + ": " +
      fixed(std::round(1000.0 * seconds / wall_s) / 10.0, 1);
  }
  json.number("receive_cpu_pct", 100.0 * receive_s / wall_s, 1);
  if (received > 0) {
    json.number("receive_cpu_per_msg_us", 1e6 * receive_s / static_cast<double>(received), 3);
  } else {
    json.null("receive_cpu_per_msg_us");
  }
  return json.raw("thread_cpu_pct", threads + "}");
}

}  // namespace bench

#endif  // RCLCPP_EVENTS_BRIDGE__THREAD_CPU_HPP_
