//! Fan-out subscriptions: one rcl subscription whose messages are taken once and
//! delivered, shared, to any number of callbacks on the Workers the user chooses.
//!
//! The user's side is [`FanoutSubscription`] (its documentation states the contract);
//! the hub is an rclrs Worker of its own whose subscription callback wraps each message
//! in an `Arc` and offers it to one group per Worker with callbacks.
//!
//! Parts: `router` (the hub's callback and the list of Worker groups), `worker_group`
//! (one Worker's callbacks, its queue and the drain protocol), `callback_fn` (which
//! closures are accepted).

mod callback_fn;
mod router;
mod worker_group;

pub use callback_fn::{IntoNodeFanoutCallback, IntoWorkerFanoutCallback};

use callback_fn::BoxedNodeFanoutCallback;
use rclrs::{Node, QoSHistoryPolicy, RclrsError, SubscriptionOptions, Worker};
use router::Router;
use std::any::Any;
use std::sync::{atomic::Ordering, Arc, OnceLock};
use worker_group::{GroupSink, TapCounts};

/// Create [`FanoutSubscription`]s on a node (taken by a hub Worker of their own) or on
/// a Worker (taken by that Worker, which runs its own callbacks of the fan-out inline).
pub trait CreateFanoutSubscription {
    /// A fan-out subscription to `options` (a topic and its QoS, as for
    /// `Node::create_subscription`), with no callback yet: add them with
    /// [`FanoutSubscription::add_callback`] and [`FanoutSubscription::add_node_callback`].
    /// Messages that arrive while it has no callback are taken and discarded.
    fn create_fanout_subscription<'a, T: rclrs::MessageIDL>(
        &self,
        options: impl Into<SubscriptionOptions<'a>>,
    ) -> Result<FanoutSubscription<T>, RclrsError>;
}

/// The payload of the hub Worker that takes the messages.
struct FanoutHub;

/// The payload of the Worker that runs a node's fan-out's node-level callbacks.
struct NodeCallbacks;

/// The router of a fan-out to `options`: each Worker group's queue is as long as the
/// subscription's history depth.
fn router_for<T: Send + Sync + 'static>(options: &SubscriptionOptions<'_>) -> Arc<Router<T>> {
    let capacity = match options.qos.history {
        QoSHistoryPolicy::KeepLast { depth } | QoSHistoryPolicy::SystemDefault { depth } => {
            (depth as usize).max(1)
        }
        QoSHistoryPolicy::KeepAll => usize::MAX,
    };
    Arc::new(Router::new(options.topic, capacity))
}

impl CreateFanoutSubscription for Node {
    fn create_fanout_subscription<'a, T: rclrs::MessageIDL>(
        &self,
        options: impl Into<SubscriptionOptions<'a>>,
    ) -> Result<FanoutSubscription<T>, RclrsError> {
        let options = options.into();
        let router = router_for(&options);
        let taking = Arc::clone(&router);
        let hub = self.create_worker(FanoutHub);
        let subscription = hub.create_subscription(options, move |_: &mut FanoutHub, m: T| {
            taking.deliver(m, |_| ())
        })?;
        let node_callbacks = NodeHost {
            node: Arc::clone(self),
            worker: OnceLock::new(),
        };
        Ok(FanoutSubscription::new(
            Box::new((subscription, hub)),
            router,
            Box::new(node_callbacks),
        ))
    }
}

impl<P: 'static + Send + Sync> CreateFanoutSubscription for Worker<P> {
    /// The fan-out takes on this Worker. Its callbacks on this Worker (and its
    /// node-level ones) run in the take itself, with no queue and no wake-up, once the
    /// message has been offered to the other Workers; while they run, nothing more is
    /// taken, so keep slow callbacks on other Workers.
    fn create_fanout_subscription<'a, T: rclrs::MessageIDL>(
        &self,
        options: impl Into<SubscriptionOptions<'a>>,
    ) -> Result<FanoutSubscription<T>, RclrsError> {
        let options = options.into();
        let router = router_for(&options);
        let (taking, own) = (Arc::clone(&router), router.inline_group(self));
        let subscription = self.create_subscription(options, move |payload: &mut P, m: T| {
            taking.deliver(m, |m| own.deliver_inline(payload, m))
        })?;
        // Node-level callbacks run on this Worker, inline like its own.
        let node_callbacks = Arc::clone(self);
        Ok(FanoutSubscription::new(
            Box::new(subscription),
            router,
            Box::new(node_callbacks),
        ))
    }
}

/// Where a fan-out's node-level callbacks run: a Worker of the fan-out's own, made on
/// first use, for a node's fan-out; the taking Worker for a Worker's.
trait NodeCallbackHost<T: rclrs::MessageIDL>: Send + Sync {
    fn add(
        &self,
        fanout: &FanoutSubscription<T>,
        callback: BoxedNodeFanoutCallback<T>,
    ) -> FanoutCallback<T>;
}

struct NodeHost {
    node: Node,
    worker: OnceLock<Worker<NodeCallbacks>>,
}

impl<T: rclrs::MessageIDL> NodeCallbackHost<T> for NodeHost {
    fn add(
        &self,
        fanout: &FanoutSubscription<T>,
        callback: BoxedNodeFanoutCallback<T>,
    ) -> FanoutCallback<T> {
        let worker = self
            .worker
            .get_or_init(|| self.node.create_worker(NodeCallbacks));
        fanout.add_boxed(worker, on_any_payload(callback))
    }
}

impl<T: rclrs::MessageIDL, P: 'static + Send + Sync> NodeCallbackHost<T> for Worker<P> {
    fn add(
        &self,
        fanout: &FanoutSubscription<T>,
        callback: BoxedNodeFanoutCallback<T>,
    ) -> FanoutCallback<T> {
        fanout.add_boxed(self, on_any_payload(callback))
    }
}

fn on_any_payload<T: 'static, P>(
    mut callback: BoxedNodeFanoutCallback<T>,
) -> callback_fn::BoxedFanoutCallback<T, P> {
    Box::new(move |_: &mut P, message: &Arc<T>| callback(message))
}

/// What a fan-out subscription and all its callbacks share.
struct Shared<T: rclrs::MessageIDL> {
    // Fields drop in order: the rcl subscription first (with the hub Worker, for a
    // node's fan-out), so nothing is taken any more.
    _taking: Box<dyn Any + Send + Sync>,
    router: Arc<Router<T>>,
    node_callbacks: Box<dyn NodeCallbackHost<T>>,
}

/// One rcl subscription feeding any number of callbacks on any Workers.
///
/// Several components of one process often subscribe to the same topic (`/tf`,
/// odometry, a camera). With one subscription each, every message is delivered into N
/// middleware queues, taken N times and converted N times. A fan-out subscription takes
/// it once, wraps it in an `Arc`, and hands the same allocation to every callback.
///
/// ```no_run
/// use rclrs::*;
/// use rclrs_tokio_executor::{CreateFanoutSubscription, CreateTokioExecutor};
/// use std::sync::Arc;
/// # use ros_env::std_msgs::msg::Int32;
///
/// let context = Context::default_from_env()?;
/// let mut executor = context.create_tokio_executor();
/// let node = executor.create_node("fusion")?;
/// let odometry = node.create_fanout_subscription::<Int32>("odom".keep_last(100).reliable())?;
///
/// // Two components, each with its own Worker (their callbacks run in parallel).
/// let planner = node.create_worker(0_i64);
/// let logger = node.create_worker(Vec::new());
/// let _planning = odometry.add_callback(&planner, |last: &mut i64, msg: Arc<Int32>| {
///     *last = msg.data.into();
/// });
/// let _logging = odometry.add_callback(&logger, |log: &mut Vec<Arc<Int32>>, msg: Arc<Int32>| {
///     log.push(msg); // keeping the message costs no copy
/// });
/// // A callback on the node, borrowing the message for the call only.
/// let _printing = odometry.add_node_callback(|msg: &Int32| println!("{}", msg.data));
/// drop(odometry); // the callbacks keep the subscription alive
///
/// executor.spin(SpinOptions::default());
/// # Ok::<(), RclrsError>(())
/// ```
///
/// # Contract
///
/// - **Taken once.** The rcl subscription is served by a Worker of its own (the hub),
///   whose callback moves each message into an `Arc` and offers it to every Worker that
///   has callbacks. Nothing is copied per callback.
/// - **Taken on a Worker.** Created with `worker.create_fanout_subscription(..)`, the
///   fan-out takes on that Worker instead of a hub, and runs that Worker's callbacks
///   (and the node-level ones) in the take, after offering the message to the other
///   Workers: no queue and no wake-up for them, which saves a thread wake-up per message
///   at low rates. While they run nothing more is taken, so they must be short; the
///   other Workers keep the guarantees below.
/// - **Per Worker, as any callback.** A Worker runs its fan-out callbacks one at a time,
///   in arrival order, and for one message in the order the callbacks were added; only
///   while the executor spins; mutually exclusive with the Worker's other callbacks,
///   with `&mut` access to its payload. Different Workers run in parallel.
/// - **Backpressure per Worker.** Each Worker has its own queue of messages waiting for
///   its callbacks, as long as the subscription's history depth (`keep_last(n)`: `n`;
///   keep-all: unbounded). A Worker that falls behind loses its oldest waiting messages
///   (keep-last), which [`FanoutCallback::dropped`] counts for each of its callbacks;
///   it never holds back the hub or the other Workers.
/// - **Panics are contained per callback.** A panicking callback is counted
///   ([`FanoutCallback::panics`]), its first panic is logged with the topic, and the
///   other callbacks still get the message.
/// - **Lifetime.** The rcl subscription lives as long as the [`FanoutSubscription`] or
///   any [`FanoutCallback`] of it. Dropping a callback's handle removes that callback
///   alone, from any thread, including from inside the callback itself: once the drop
///   returns no call of it starts, and a call its Worker had already started finishes
///   (the drop does not wait for it). Dropping the last handle drops the
///   subscription, which the executor then deregisters and finalizes like any other.
/// - **Memory.** A message is freed on the hub's thread, where its take allocated it
///   (the last Worker done with it hands it back); the newest one handed back is kept
///   until the next message arrives.
///
/// Fan-out subscriptions are built only on rclrs's public Worker API, so they work with
/// any rclrs executor; with the basic executor, every Worker runs on the spinning thread.
///
/// Cloning gives another handle to the same subscription.
pub struct FanoutSubscription<T: rclrs::MessageIDL> {
    shared: Arc<Shared<T>>,
}

impl<T: rclrs::MessageIDL> std::fmt::Debug for FanoutSubscription<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanoutSubscription")
            .field("topic", &self.topic())
            .field("taken", &self.taken())
            .finish_non_exhaustive()
    }
}

impl<T: rclrs::MessageIDL> Clone for FanoutSubscription<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: rclrs::MessageIDL> FanoutSubscription<T> {
    fn new(
        taking: Box<dyn Any + Send + Sync>,
        router: Arc<Router<T>>,
        node_callbacks: Box<dyn NodeCallbackHost<T>>,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                _taking: taking,
                router,
                node_callbacks,
            }),
        }
    }

    /// Call `callback` on `worker` with every message from now on. The callback gets the
    /// Worker's payload and the message, as `Arc<T>` or `&T`.
    ///
    /// The returned handle keeps the callback (and the subscription) alive.
    pub fn add_callback<P, Args>(
        &self,
        worker: &Worker<P>,
        callback: impl IntoWorkerFanoutCallback<T, P, Args>,
    ) -> FanoutCallback<T>
    where
        P: 'static + Send + Sync,
    {
        self.add_boxed(worker, callback.into_fanout_callback())
    }

    /// Call `callback` with every message from now on, one at a time, in arrival
    /// order: on a Worker of this fan-out that serves its node-level callbacks, or, for
    /// a fan-out created on a Worker, on that Worker. The callback gets the message as
    /// `Arc<T>` or `&T`.
    pub fn add_node_callback<Args>(
        &self,
        callback: impl IntoNodeFanoutCallback<T, Args>,
    ) -> FanoutCallback<T> {
        self.shared
            .node_callbacks
            .add(self, callback.into_node_fanout_callback())
    }

    fn add_boxed<P: 'static + Send + Sync>(
        &self,
        worker: &Worker<P>,
        callback: callback_fn::BoxedFanoutCallback<T, P>,
    ) -> FanoutCallback<T> {
        let router = &self.shared.router;
        let (group, tap) =
            router.with_group(worker, |group| (Arc::clone(group), group.add(callback)));
        let counts = Arc::clone(&tap.counts);
        let remover: Box<dyn FnOnce() + Send + Sync> = {
            let router = Arc::clone(router);
            let group = Arc::clone(&group);
            Box::new(move || router.update_group(&group, || group.remove(&tap)))
        };
        FanoutCallback {
            counts,
            group,
            remover: Some(remover),
            _shared: Arc::clone(&self.shared),
        }
    }

    /// The topic, as given.
    pub fn topic(&self) -> &str {
        &self.shared.router.topic
    }

    /// Messages taken from the rcl subscription so far.
    pub fn taken(&self) -> u64 {
        self.shared.router.taken()
    }
}

/// One callback of a [`FanoutSubscription`]. Dropping it removes the callback; the
/// last handle of a fan-out drops its rcl subscription.
pub struct FanoutCallback<T: rclrs::MessageIDL> {
    counts: Arc<TapCounts>,
    group: Arc<dyn GroupSink<T>>,
    remover: Option<Box<dyn FnOnce() + Send + Sync>>,
    // Last: the subscription goes after the callback is removed.
    _shared: Arc<Shared<T>>,
}

impl<T: rclrs::MessageIDL> std::fmt::Debug for FanoutCallback<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanoutCallback")
            .field("delivered", &self.delivered())
            .field("dropped", &self.dropped())
            .field("panics", &self.panics())
            .finish_non_exhaustive()
    }
}

impl<T: rclrs::MessageIDL> FanoutCallback<T> {
    /// Messages this callback has run with (without panicking).
    pub fn delivered(&self) -> u64 {
        self.counts.delivered.load(Ordering::Relaxed)
    }

    /// Messages this callback lost because its Worker fell further behind than the
    /// subscription's depth (the oldest waiting ones are dropped, keep-last).
    pub fn dropped(&self) -> u64 {
        self.group
            .dropped()
            .saturating_sub(self.counts.dropped_before.load(Ordering::Relaxed))
    }

    /// Times this callback panicked (each contained; the first is logged).
    pub fn panics(&self) -> u64 {
        self.counts.panics.load(Ordering::Relaxed)
    }
}

impl<T: rclrs::MessageIDL> Drop for FanoutCallback<T> {
    fn drop(&mut self) {
        if let Some(remove) = self.remover.take() {
            remove();
        }
    }
}
