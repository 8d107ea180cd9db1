//! The closures a fan-out callback may be: each gets the message as `Arc<T>` (kept
//! beyond the call for free) or as `&T` (for the call only), with the Worker's payload
//! first when it lives on a Worker.

use std::sync::Arc;

/// A callback as a group stores it: the Worker's payload and the shared message.
pub(crate) type BoxedFanoutCallback<T, P> = Box<dyn FnMut(&mut P, &Arc<T>) + Send>;

/// A node-level callback, before it is given the Worker it runs on.
pub(crate) type BoxedNodeFanoutCallback<T> = Box<dyn FnMut(&Arc<T>) + Send>;

/// A closure usable as a fan-out callback on a Worker with payload `P`: either
/// `FnMut(&mut P, Arc<T>)` or `FnMut(&mut P, &T)`.
///
/// `Args` only tells the two forms apart; it is inferred.
pub trait IntoWorkerFanoutCallback<T, P, Args>: Send + 'static {
    #[doc(hidden)]
    fn into_fanout_callback(self) -> BoxedFanoutCallback<T, P>;
}

impl<T, P, F> IntoWorkerFanoutCallback<T, P, (P, Arc<T>)> for F
where
    F: FnMut(&mut P, Arc<T>) + Send + 'static,
{
    fn into_fanout_callback(mut self) -> BoxedFanoutCallback<T, P> {
        Box::new(move |payload, message| self(payload, Arc::clone(message)))
    }
}

impl<T, P, F> IntoWorkerFanoutCallback<T, P, (P, &'static T)> for F
where
    F: FnMut(&mut P, &T) + Send + 'static,
    T: 'static,
{
    fn into_fanout_callback(mut self) -> BoxedFanoutCallback<T, P> {
        Box::new(move |payload, message| self(payload, message))
    }
}

/// A closure usable as a fan-out callback on the node: either `FnMut(Arc<T>)` or
/// `FnMut(&T)`.
///
/// `Args` only tells the two forms apart; it is inferred.
pub trait IntoNodeFanoutCallback<T, Args>: Send + 'static {
    #[doc(hidden)]
    fn into_node_fanout_callback(self) -> BoxedNodeFanoutCallback<T>;
}

impl<T, F> IntoNodeFanoutCallback<T, Arc<T>> for F
where
    F: FnMut(Arc<T>) + Send + 'static,
{
    fn into_node_fanout_callback(mut self) -> BoxedNodeFanoutCallback<T> {
        Box::new(move |message| self(Arc::clone(message)))
    }
}

impl<T, F> IntoNodeFanoutCallback<T, &'static T> for F
where
    F: FnMut(&T) + Send + 'static,
    T: 'static,
{
    fn into_node_fanout_callback(mut self) -> BoxedNodeFanoutCallback<T> {
        Box::new(move |message| self(message))
    }
}
