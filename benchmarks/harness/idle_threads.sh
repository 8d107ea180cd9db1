#!/usr/bin/env bash
# Per-thread CPU of a benchmark node while its action server and client sit idle: runs
# `<bench_node> --executor <executor> --workload action --seconds 10` (whose first
# phase is the idle window of `action_idle`), samples /proc/<pid>/task/*/schedstat 3.5 s
# in and again 5 s later, and prints each thread that ran meanwhile: its name, CPU time
# and how many times it was scheduled in. The node's JSON goes to <out>.json and the
# table to <out>.txt.
#
# usage: idle_threads.sh <bench_node or bench_node_cpp> <executor> <out>
# (with the environment the harness uses: .ros/env.sh, install/setup.sh, and the rclcpp
# prefix for bench_node_cpp)
set -euo pipefail
node="$1" executor="$2" out="$3"

"$node" --executor "$executor" --workload action --seconds 10 > "$out.json" &
pid=$!
snapshot() {
  for task in /proc/"$pid"/task/*; do
    echo "$(basename "$task") $(tr ' ' '_' < "$task/comm") $(cat "$task/schedstat")"
  done | sort
}
sleep 3.5
before=$(snapshot)
sleep 5
after=$(snapshot)
wait "$pid"
# schedstat: CPU time (ns), time waiting to run (ns), times scheduled in.
join <(echo "$before") <(echo "$after") |
  awk '{ ms = ($7 - $3) / 1e6; runs = $9 - $5;
         if (runs > 0) printf "%-16s %8.3f ms %6d runs\n", $2, ms, runs }' > "$out.txt"
cat "$out.txt"
