//! Fan-out subscriptions, against the rclrs basic executor and the Tokio executor (in
//! both Worker modes): one rcl subscription, taken once, feeding callbacks on several
//! Workers.

#[path = "../support/mod.rs"]
mod support;

mod delivery;
mod handles;

use delivery::*;
use handles::*;

use rclrs::*;
use rclrs_tokio_executor::{
    CreateFanoutSubscription, CreateTokioExecutor, FanoutCallback, FanoutSubscription,
};
use ros_env::std_msgs::msg::Int32;
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};
use support::{publish_to, run_to_end, spin_until, unique, PATIENCE};

type MakeExecutor = fn(&Context) -> Executor;

/// A fresh executor with a node named after `name`, and a topic name of its own.
fn executor_with_node(make: MakeExecutor, name: &str) -> (Executor, Node, String) {
    let context = crate::support::isolated_context();
    let executor = make(&context);
    let node = executor.create_node(unique(name).as_str()).unwrap();
    (executor, node, unique(&format!("{name}_topic")))
}

/// A fresh executor with a node, and a fan-out subscription of `Int32` on a topic of its
/// own (reliable, keep last `depth`): the executor, the node, the topic and the fan-out.
fn fixture(
    make: MakeExecutor,
    name: &str,
    depth: u32,
) -> (Executor, Node, String, FanoutSubscription<Int32>) {
    let (executor, node, topic) = executor_with_node(make, name);
    let fanout = node
        .create_fanout_subscription::<Int32>(topic.as_str().keep_last(depth).reliable())
        .unwrap();
    (executor, node, topic, fanout)
}

/// A reliable publisher on `topic`.
fn fixture_publisher(node: &Node, topic: &str) -> Publisher<Int32> {
    node.create_publisher::<Int32>(topic.keep_last(1000).reliable())
        .unwrap()
}

/// What one callback saw: the data, and the address of each shared message.
type Seen = Arc<Mutex<Vec<(i32, usize)>>>;

/// Log `m` with the address of its allocation (the same for every callback of a
/// message: nothing is copied per callback).
fn log_message(log: &Seen, m: &Arc<Int32>) {
    log.lock().unwrap().push((m.data, Arc::as_ptr(m) as usize));
}

/// `count` callbacks of `fanout`, on `workers` in turn, each doing `on_payload` with its
/// Worker's payload and logging every message: their logs and handles.
fn logging_callbacks<P: 'static + Send + Sync>(
    fanout: &FanoutSubscription<Int32>,
    workers: &[Worker<P>],
    count: usize,
    on_payload: fn(&mut P, &Int32),
) -> (Vec<Seen>, Vec<FanoutCallback<Int32>>) {
    (0..count)
        .map(|i| {
            let log: Seen = Arc::default();
            let logged = Arc::clone(&log);
            let handle = fanout.add_callback(
                &workers[i % workers.len()],
                move |payload: &mut P, m: Arc<Int32>| {
                    on_payload(payload, &m);
                    log_message(&logged, &m);
                },
            );
            (log, handle)
        })
        .unzip()
}

/// Every log holds `expected`, in order, and the same allocation for each message as the
/// first log: nothing was copied per callback.
fn assert_every_log_saw_the_same_messages(seen: &[Seen], expected: &[i32]) {
    let first: Vec<usize> = seen[0].lock().unwrap().iter().map(|s| s.1).collect();
    for (i, log) in seen.iter().enumerate() {
        let log = log.lock().unwrap();
        let data: Vec<i32> = log.iter().map(|s| s.0).collect();
        assert_eq!(data, expected, "callback {i} saw messages out of order");
        let addresses: Vec<usize> = log.iter().map(|s| s.1).collect();
        assert_eq!(addresses, first, "callback {i} got a different copy");
    }
}

macro_rules! suite {
    ($module:ident, $make:expr, [$($extra:ident),*]) => {
        mod $module {
            use super::*;
            const MAKE: MakeExecutor = $make;

            #[test]
            fn every_callback_sees_every_message_once_taken_in_order() {
                super::every_callback_sees_every_message_once_taken_in_order(MAKE)
            }
            #[test]
            fn callbacks_run_only_while_spinning_and_a_burst_keeps_the_depth() {
                super::callbacks_run_only_while_spinning_and_a_burst_keeps_the_depth(MAKE)
            }
            #[test]
            fn a_panicking_callback_is_contained_and_the_others_go_on() {
                super::a_panicking_callback_is_contained_and_the_others_go_on(MAKE)
            }
            #[test]
            fn callbacks_added_and_dropped_from_another_thread_under_a_stream() {
                super::callbacks_added_and_dropped_from_another_thread_under_a_stream(MAKE)
            }
            #[test]
            fn a_fanout_taken_on_a_worker_calls_its_callbacks_there_and_queues_the_others() {
                super::a_fanout_taken_on_a_worker_calls_its_callbacks_there_and_queues_the_others(MAKE)
            }
            #[test]
            fn the_last_callback_dropped_inside_the_take_drops_a_worker_fanout() {
                super::the_last_callback_dropped_inside_the_take_drops_a_worker_fanout(MAKE)
            }
            #[test]
            fn an_invalid_topic_is_an_error_on_a_node_and_on_a_worker() {
                super::an_invalid_topic_is_an_error_on_a_node_and_on_a_worker(MAKE)
            }
            #[test]
            fn dropping_callbacks_removes_each_alone_and_the_last_drops_the_subscription() {
                super::dropping_callbacks_removes_each_alone_and_the_last_drops_the_subscription(MAKE)
            }
            $(
                #[test]
                fn $extra() {
                    super::$extra(MAKE)
                }
            )*
        }
    };
}

suite!(basic, |context| context.create_basic_executor(), []);
suite!(
    tokio,
    |context| context.create_tokio_executor(),
    [
        a_slow_worker_drops_its_oldest_and_does_not_hold_back_the_others,
        a_fanout_callback_that_halts_is_the_last_to_start,
        calls_from_a_burst_of_fanout_callbacks_are_all_answered,
        handing_over_leaves_every_pool_thread_under_its_policy
    ]
);
// Worker tasks moving between two pool threads as their load says. Not the slow-Worker
// case: with `follow_load` the idle Workers gather while the test waits for matching,
// and the slow one's first 20 ms callback holds the fast one on their shared thread long
// enough to overflow its queue of 20 (the option's documented price; from then on the
// slow Worker keeps a thread of its own, see `follow_load.rs`).
// The default executor on a one-CPU machine: a slow Worker still holds back no other.
suite!(
    tokio_one_cpu,
    support::one_cpu_executor,
    [
        a_slow_worker_drops_its_oldest_and_does_not_hold_back_the_others,
        a_fanout_callback_that_halts_is_the_last_to_start,
        calls_from_a_burst_of_fanout_callbacks_are_all_answered
    ]
);
suite!(
    tokio_follow_load,
    |context| support::follow_load_executor(context, "rclrs-tokio"),
    [
        a_fanout_callback_that_halts_is_the_last_to_start,
        calls_from_a_burst_of_fanout_callbacks_are_all_answered
    ]
);
suite!(
    tokio_dedicated,
    support::dedicated_executor,
    [
        a_slow_worker_drops_its_oldest_and_does_not_hold_back_the_others,
        a_fanout_callback_that_halts_is_the_last_to_start,
        calls_from_a_burst_of_fanout_callbacks_are_all_answered
    ]
);
