//! What an executor leaves behind once dropped, while the user keeps the handles it
//! served: a node, a Worker, their entities.
//!
//! Each pool thread runs a Tokio runtime whose I/O driver holds an epoll descriptor and
//! an eventfd. Those must close with the executor, even though the user's handles still
//! reach its shared state, and rclrs's node task (which waits on a channel the node
//! keeps) ran on it. Before the fix, every executor dropped this way left one to two
//! pairs open for as long as its node lived.
//!
//! One test in its own binary, so that no other test opens or closes descriptors while
//! it counts them.

mod support;

use rclrs::*;
use rclrs_tokio_executor::CreateTokioExecutor;
use ros_env::std_msgs::msg::Int32;
use std::time::Duration;
use support::{dedicated_executor, unique};

/// The process's open epoll descriptors.
fn epoll_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd lists the descriptors")
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy() == "anon_inode:[eventpoll]")
        .count()
}

/// How a test makes an executor.
type MakeExecutor = fn(&Context) -> Executor;

/// What a user keeps of one executor's work.
type Kept = (Node, Worker<usize>, Subscription<Int32>, WorkerTimer<usize>);

/// Serve a node and a Worker on an executor made by `make`, spin it, drop it, and
/// return what the user keeps.
fn serve_and_drop(context: &Context, make: MakeExecutor) -> Kept {
    let mut executor = make(context);
    let node = executor.create_node(unique("lifetime").as_str()).unwrap();
    let worker = node.create_worker(0usize);
    let topic = unique("lifetime_topic");
    let subscription = node
        .create_subscription(topic.as_str(), |_: Int32| {})
        .unwrap();
    let timer = worker
        .create_timer_repeating(Duration::from_millis(2), |ticks: &mut usize| *ticks += 1)
        .unwrap();
    executor.spin(SpinOptions::default().timeout(Duration::from_millis(30)));
    drop(executor);
    (node, worker, subscription, timer)
}

#[test]
fn handles_kept_after_the_executor_hold_none_of_its_descriptors() {
    let context = support::isolated_context();
    let makers: [(&str, MakeExecutor); 2] = [
        ("the pool", |context| context.create_tokio_executor()),
        ("dedicated Workers", dedicated_executor),
    ];
    for (mode, make) in makers {
        let mut kept = vec![serve_and_drop(&context, make)];
        // The first executor may leave what the process keeps once (the middleware's).
        let before = epoll_descriptors();
        for _ in 0..5 {
            kept.push(serve_and_drop(&context, make));
        }
        assert_eq!(
            epoll_descriptors(),
            before,
            "{mode}: five executors dropped while their nodes and Workers were kept"
        );
        // The handles still work as handles: the timers can be read and dropped.
        for (_, worker, _, _) in &kept {
            let mut ticks = worker.run(|ticks: &mut usize| *ticks);
            assert!(
                ticks.try_recv().ok().flatten().is_none(),
                "{mode}: nothing runs on a Worker whose executor is gone"
            );
        }
    }
}
