// One benchmark run in one process, with an rclcpp executor, printing one JSON line of
// metrics. The C++ twin of benchmarks/src/bin/bench_node.rs: same workloads, same flags,
// same JSON keys.
//
//   bench_node_cpp --executor rclcpp_single|rclcpp_multi|rclcpp_events|rclcpp_events_cbg
//                  [--workload stream|service|action|scaling|parallel|robot_mix|
//                              mixed_criticality|nodes] (default stream)
//                  [--role both|sub|pub]          (stream, and robot_mix's sub; default both)
//                  [--topic NAME]                 (default bench_<pid>; required by sub/pub)
//                  [--subscriptions N]            (default 1)
//                  [--workers M]                  (default 1)
//                  [--work-us U]                  (parallel, mixed_criticality; default 200)
//                  [--burn-rate-hz R]             (mixed_criticality only, default 200)
//                  [--nodes N] [--timer-hz R]     (nodes only, default 1 and 10)
//                  [--idle-exit-s S]              (sub role only, default 1.0)
//                  [--publish-tail-s S]           (pub role only, default 0.5)
//                  [--payload BYTES] [--reliability reliable|best_effort] [--depth N]
//                  [--rate-hz R (0 = as fast as possible)] [--warmup-s S] [--seconds S]
//                  [--latency] [--threads N] [--intra-process] [--ros-args ...]
//
// `--callback` is accepted and ignored (rclcpp has a single kind of subscription
// callback). `--threads` sizes the pool of rclcpp_multi and rclcpp_events_cbg (default 2).
// `--intra-process` turns on rclcpp's intra-process communication for the node of the
// stream, scaling and parallel workloads (in one process the subscriptions then share
// each published message by shared_ptr).
//
// Workloads (one source file each, see workloads.hpp):
//   stream    A BenchMessage stream on --topic with --subscriptions N subscriptions
//             (fanout), subscription i in MutuallyExclusive callback group i % M of
//             --workers M (M == 1: the node's default group). `received` counts
//             deliveries over all subscriptions, `dropped` = sent x N - received.
//             --role both: publisher thread + executor in this process (the original run).
//             --role pub: publisher only; waits for N matched subscriptions (20 s), then
//             publishes for warm-up + window + --publish-tail-s; prints sent, sent_per_s and
//             publish_failed (writes the middleware refused, not counted as sent).
//             --role sub: subscriptions only; window = first message + warm-up, lasting
//             --seconds; ends after --idle-exit-s without a message; prints sent,
//             dropped, drop_pct and sent_per_s as null (the harness fills them in).
//   service   Closed-loop BenchEcho calls (server and client on the executor under
//             test); received_per_s = calls per second, latency_* = round trips.
//   action    BenchCount action server and client on the executor under test:
//             idle_cpu_pct over an idle window, then closed-loop goals (goal to
//             result); received_per_s = goals per second, latency_* = round trips.
//             Needs rclcpp_action at build time (exit 3 without it).
//   scaling   --subscriptions N topics <topic>_<i>; idle_cpu_pct over an idle window,
//             then one publisher on <topic>_0: per_message_us = executor CPU / message.
//   parallel  Two subscriptions (<topic>_a, <topic>_b) burning --work-us of CPU each
//             callback, in --workers M groups; one publisher thread at --rate-hz per topic.
//   robot_mix A robot's process (--role sub only; the drivers are the Rust bench_node's
//             --role pub): the graph of benchmarks/src/workload/robot_mix.rs.
//   mixed_criticality  A group burning --work-us at --burn-rate-hz beside a --rate-hz
//             control stream in a group of its own: benchmarks/src/workload/criticality.rs.
//   nodes     --nodes N nodes in a ring, each with a subscription, a publisher and (after
//             an idle window) a timer: benchmarks/src/workload/composed.rs.
//
// Metrics are taken over the window after the warm-up. `cpu_process_pct` is the whole
// process; `cpu_executor_pct` is the process minus the publisher (or service driver)
// thread (with the publisher in the same process, Fast DDS delivers inside `publish()`,
// on that thread), which is the executor's threads plus the middleware's own background
// threads. In a subscriber process (--role sub) both are the whole process.
//
// Exit codes: 0 ok, 2 bad argument or failed run (one line on stderr), 3 executor not
// in this rclcpp.

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "rcl/validate_topic_name.h"
#include "rclcpp/rclcpp.hpp"

#include "bench_common.hpp"
#include "workloads.hpp"

namespace workloads
{
namespace
{

Workload parse_workload(const std::string & value)
{
  for (Workload w : {Workload::Stream, Workload::Service, Workload::Action, Workload::Scaling,
      Workload::Parallel, Workload::RobotMix, Workload::MixedCriticality, Workload::Nodes})
  {
    if (value == name(w)) {
      return w;
    }
  }
  throw std::invalid_argument(
          "--workload " + value + ": use stream, service, action, scaling, parallel, "
          "robot_mix, mixed_criticality or nodes");
}

Role parse_role(const std::string & value)
{
  for (Role r : {Role::Both, Role::Sub, Role::Pub}) {
    if (value == name(r)) {
      return r;
    }
  }
  throw std::invalid_argument("--role " + value + ": use both, sub or pub");
}

/// A topic name rcl accepts (a relative or absolute name; ~ and {} substitutions aside).
void validate_topic(const std::string & topic)
{
  int result = RCL_TOPIC_NAME_VALID;
  size_t index = 0;
  if (rcl_validate_topic_name(topic.c_str(), &result, &index) != RCL_RET_OK) {
    rcl_reset_error();
    throw std::invalid_argument("--topic " + topic + ": cannot be validated");
  }
  if (result != RCL_TOPIC_NAME_VALID) {
    throw std::invalid_argument(
            "--topic " + topic + ": not a valid topic name (" +
            rcl_topic_name_validation_result_string(result) + ", at character " +
            std::to_string(index) + ")");
  }
}

}  // namespace

Config Config::from(const bench::Args & args)
{
  Config c;
  c.executor = args.string("executor", "rclcpp_events");
  c.workload = parse_workload(args.string("workload", "stream"));
  c.role = parse_role(args.string("role", "both"));
  if (c.workload == Workload::RobotMix && c.role != Role::Sub) {
    throw std::invalid_argument(
            "--workload robot_mix: bench_node_cpp plays --role sub; the drivers (--role pub) "
            "are the Rust bench_node's");
  }
  if (c.role != Role::Both && c.workload != Workload::Stream &&
    c.workload != Workload::RobotMix)
  {
    throw std::invalid_argument(
            std::string("--role ") + name(c.role) +
            ": only the stream and robot_mix workloads run across processes");
  }
  if (c.role != Role::Both && !args.has("topic")) {
    throw std::invalid_argument("--topic: the sub and pub roles need the same --topic");
  }
  c.topic = args.string("topic", "bench_" + std::to_string(::getpid()));
  validate_topic(c.topic);
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
  c.intra_process = args.get<bool>("intra-process", false);
  c.subscriptions = args.get<uint64_t>("subscriptions", 1);
  c.workers = args.get<uint64_t>("workers", 1);
  c.work_us = args.get<uint64_t>("work-us", 200);
  c.idle_exit_s = args.get<double>("idle-exit-s", 1.0);
  c.publish_tail_s = args.get<double>("publish-tail-s", 0.5);
  c.burn_rate_hz = args.get<double>("burn-rate-hz", 200.0);
  c.nodes = args.get<uint64_t>("nodes", 1);
  c.timer_hz = args.get<double>("timer-hz", 10.0);
  for (auto [flag, value] : {std::pair{"--burn-rate-hz", c.burn_rate_hz},
      std::pair{"--timer-hz", c.timer_hz}})
  {
    if (!(value > 0.0) || !std::isfinite(value) || !std::isfinite(1.0 / value)) {
      throw std::invalid_argument(std::string(flag) + ": must be a finite number > 0");
    }
  }
  if (c.nodes == 0 || c.nodes > 10000) {
    throw std::invalid_argument("--nodes: must be between 1 and 10000");
  }
  for (auto [flag, value] : {std::pair{"--rate-hz", c.rate_hz},
      std::pair{"--warmup-s", c.warmup_s}, std::pair{"--seconds", c.window_s},
      std::pair{"--publish-tail-s", c.publish_tail_s}})
  {
    if (!(value >= 0.0) || !std::isfinite(value)) {
      throw std::invalid_argument(std::string(flag) + ": must be a finite number >= 0");
    }
  }
  if (!(c.idle_exit_s > 0.0) || !std::isfinite(c.idle_exit_s)) {
    throw std::invalid_argument("--idle-exit-s: must be a finite number > 0");
  }
  for (auto [flag, value] : {std::pair{"--subscriptions", c.subscriptions},
      std::pair{"--workers", c.workers}})
  {
    if (value == 0 || value > 100000) {
      throw std::invalid_argument(std::string(flag) + ": must be between 1 and 100000");
    }
  }
  if (c.work_us > 1000000) {
    throw std::invalid_argument("--work-us: must be at most 1000000 (1 s)");
  }
  return c;
}

}  // namespace workloads

namespace
{

int run(int argc, char ** argv)
{
  const bench::Args args(argc, argv);
  const workloads::Config config = workloads::Config::from(args);
  // An executor this rclcpp lacks is reported (exit 3) before anything is set up.
  bench::validate_executor(config.executor);
#ifndef RCLCPP_EVENTS_BRIDGE_HAS_ACTION
  if (config.workload == workloads::Workload::Action) {
    std::fprintf(stderr, "bench_node_cpp: --workload action: built without rclcpp_action\n");
    return 3;
  }
#endif

  bench::record_signals();
  rclcpp::init(argc, argv);
  int code = 0;
  switch (config.workload) {
    case workloads::Workload::Stream: code = workloads::run_stream(config); break;
    case workloads::Workload::Service: code = workloads::run_service(config); break;
    case workloads::Workload::Action:
#ifdef RCLCPP_EVENTS_BRIDGE_HAS_ACTION
      code = workloads::run_action(config);
#endif
      break;
    case workloads::Workload::Scaling: code = workloads::run_scaling(config); break;
    case workloads::Workload::Parallel: code = workloads::run_parallel(config); break;
    case workloads::Workload::RobotMix: code = workloads::run_robot_mix(config); break;
    case workloads::Workload::MixedCriticality:
      code = workloads::run_mixed_criticality(config);
      break;
    case workloads::Workload::Nodes: code = workloads::run_nodes(config); break;
  }
  if (code == 0 && bench::interrupted()) {
    code = bench::interrupted_exit_code();
  }
  if (rclcpp::ok()) {
    rclcpp::shutdown();
  }
  return code;
}

}  // namespace

int main(int argc, char ** argv)
{
  return bench::guarded_main("bench_node_cpp", [&] {return run(argc, argv);});
}
