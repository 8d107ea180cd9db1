// --workload robot_mix --role sub: a robot's process, the graph of
// benchmarks/src/workload/robot_mix.rs (the Rust node's module docs hold the table;
// kStreams below is the same table). Seven nodes on the executor under test:
//   <t>_imu, <t>_odometry, <t>_tf (one subscription to four publishers, told apart by
//   header.publisher_id), <t>_lidar, <t>_camera: one subscription each, in the node's
//   default callback group;
//   <t>_control: the 1 kHz control stream in a MutuallyExclusive callback group of its own;
//   <t>_planner: the BenchEcho service <t>_plan and the parameter plan_horizon_s (2.0),
//   queried through the node's own parameter services.
// The drivers (--role pub) are the Rust bench_node's; the harness joins the two reports.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "rclcpp/rclcpp.hpp"
#include "rclrs_tokio_msgs/srv/bench_echo.hpp"

#include "thread_cpu.hpp"
#include "workloads.hpp"

namespace workloads
{
namespace
{

using rclrs_tokio_msgs::srv::BenchEcho;

/// One stream of the mix (robot_mix.rs, `STREAMS`): a message's header.publisher_id is
/// its index here.
struct MixStream
{
  const char * name;
  const char * node;   // after <t>_
  const char * topic;  // after <t>_
  uint64_t payload;
  double rate_hz;
  uint32_t depth;
};

constexpr MixStream kStreams[] = {
  {"imu", "imu", "imu", 300, 400.0, 100},
  {"odometry", "odometry", "odom", 700, 50.0, 100},
  {"tf_0", "tf", "tf", 1024, 100.0, 100},
  {"tf_1", "tf", "tf", 1024, 100.0, 100},
  {"tf_2", "tf", "tf", 1024, 100.0, 100},
  {"tf_3", "tf", "tf", 1024, 100.0, 100},
  {"lidar", "lidar", "lidar", 1 << 20, 10.0, 10},
  {"camera", "camera", "camera", 1 << 20, 30.0, 10},
  {"control", "control", "control", 64, 1000.0, 100},
};
constexpr size_t kStreamCount = sizeof(kStreams) / sizeof(kStreams[0]);
constexpr const char * kControl = "control";

/// `{name: {received, received_per_s, latency_*}}` between the window's edges.
std::string streams_json(
  const std::vector<std::unique_ptr<Stats>> & streams, const std::vector<uint64_t> & first,
  const std::vector<uint64_t> & last, double wall_s)
{
  std::string out = "{";
  for (size_t i = 0; i < kStreamCount; ++i) {
    Stats & stats = *streams[i];
    std::lock_guard<std::mutex> lock(stats.mutex);
    bench::Json stream;
    stream.integer("received", stats.count())
    .number("received_per_s", static_cast<double>(last[i] - first[i]) / wall_s, 1)
    .latencies(stats.latencies);
    out += (i ? ", " : "") + bench::quoted(kStreams[i].name) + ": " + stream.line();
  }
  return out + "}";
}

}  // namespace

int run_robot_mix(const Config & config)
{
  auto executor = bench::make_executor(config.executor, config.threads);
  std::vector<std::unique_ptr<Stats>> streams;
  for (size_t i = 0; i < kStreamCount; ++i) {
    streams.push_back(std::make_unique<Stats>(true));
  }
  const auto record = [&streams](const BenchMessage & msg) {
      if (msg.header.publisher_id < streams.size()) {
        streams[msg.header.publisher_id]->on_message(msg);
      }
    };
  const auto named = [&config](const std::string & suffix) {return config.topic + "_" + suffix;};

  std::vector<std::shared_ptr<rclcpp::Node>> nodes;
  std::vector<rclcpp::SubscriptionBase::SharedPtr> subscriptions;
  for (size_t i = 0; i < kStreamCount; ++i) {
    const MixStream & s = kStreams[i];
    const bool new_node = i == 0 || std::string(kStreams[i - 1].node) != s.node;
    if (new_node) {
      nodes.push_back(std::make_shared<rclcpp::Node>(named(s.node)));
    }
    if (i > 0 && std::string(kStreams[i - 1].topic) == s.topic) {
      continue;  // the four tf streams: one subscription
    }
    rclcpp::SubscriptionOptions options;
    if (std::string(s.name) == kControl) {
      options.callback_group = nodes.back()->create_callback_group(
        rclcpp::CallbackGroupType::MutuallyExclusive, true);
    }
    subscriptions.push_back(
      nodes.back()->create_subscription<BenchMessage>(
        named(s.topic), rclcpp::QoS(rclcpp::KeepLast(s.depth)).reliable(), record, options));
  }
  auto planner = std::make_shared<rclcpp::Node>(named("planner"));
  auto service = planner->create_service<BenchEcho>(
    named("plan"),
    [](const std::shared_ptr<BenchEcho::Request> request,
    std::shared_ptr<BenchEcho::Response> response) {
      response->header = request->header;
      response->payload = request->payload;
    });
  planner->declare_parameter("plan_horizon_s", 2.0);
  nodes.push_back(planner);
  for (const auto & node : nodes) {
    executor->add_node(node);
  }
  bench::SpinThread spinning(*executor);

  const auto total = [&streams] {
      uint64_t sum = 0;
      for (const auto & s : streams) {
        sum += s->count();
      }
      return sum;
    };
  const auto counts = [&streams] {
      std::vector<uint64_t> out;
      for (const auto & s : streams) {
        out.push_back(s->count());
      }
      return out;
    };
  std::vector<std::vector<uint64_t>> edges;
  const SubscriberWindow watched = watch_subscriber(
    config, total,
    [&streams] {
      int64_t first = 0;
      for (const auto & s : streams) {
        const int64_t at = s->first_arrival_ns.load();
        first = at != 0 && (first == 0 || at < first) ? at : first;
      }
      return first;
    },
    [&streams](bool open) {
      for (const auto & s : streams) {
        s->in_window.store(open);
      }
    },
    [&] {edges.push_back(counts());});
  stop_spinning(spinning);
  for (const auto & node : nodes) {
    executor->remove_node(node);
  }

  const Window & window = watched.window;
  const std::vector<uint64_t> now = counts();
  const std::vector<uint64_t> & first = edges.size() > 0 ? edges[0] : now;
  const std::vector<uint64_t> & last = edges.size() > 1 ? edges[1] : now;
  const double wall_s = window.wall_s();
  const auto control_index = std::find_if(
    std::begin(kStreams), std::end(kStreams),
    [](const MixStream & s) {return std::string(s.name) == kControl;}) - std::begin(kStreams);
  Stats & control = *streams[static_cast<size_t>(control_index)];
  const std::string per_stream = streams_json(streams, first, last, wall_s);
  std::lock_guard<std::mutex> lock(control.mutex);
  bench::Json json;
  json.text("workload", name(config.workload))
  .text("role", name(config.role))
  .text("executor", config.executor)
  .number("window_s", wall_s, 3)
  .null("sent")
  .integer("received", total())
  .null("dropped")
  .null("drop_pct")
  .null("lost")
  .null("sent_per_s")
  .number("received_per_s", static_cast<double>(window.received()) / wall_s, 1)
  .number("cpu_process_pct", 100.0 * window.process_cpu_s() / wall_s, 1)
  .number("cpu_executor_pct", 100.0 * window.process_cpu_s() / wall_s, 1)
  .latencies(control.latencies)
  .latencies_as("control_latency", control.latencies);
  bench::receive_threads(
    json, watched.threads_first, watched.threads_last, wall_s, window.received());
  window.context_switches(json);
  json.raw("streams", per_stream);
  print(json);
  return 0;
}

}  // namespace workloads
