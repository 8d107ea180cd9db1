//! The waker an async task's future sees: one that lets go of the runtime once the task
//! is gone.
//!
//! # Why
//!
//! A future registers its waker wherever it waits, and some of those places outlive the
//! task. rclrs's own node task waits on a channel whose sender the node keeps, and a
//! user's future may wait on anything. A Tokio task's waker holds the runtime it runs on,
//! with its I/O driver's epoll descriptor and eventfd. So a node kept after its executor
//! was dropped would keep two descriptors open for every executor it had been spun by.
//!
//! # Protocol
//!
//! The task polls its future with a waker of its own [`WakerSlot`], after registering the
//! runtime's waker in the slot (every poll, as the runtime's waker may change). A wake
//! takes the runtime's waker out and wakes it: the runtime polls the task again, which
//! registers it again, so a second wake before that poll loses nothing. When the task
//! ends (its future finished, panicked, or the runtime dropped it), its
//! [`SlotRelease`] empties the slot: whatever still holds the slot's waker then holds
//! the slot alone.

use futures::task::{waker_ref, ArcWake, AtomicWaker};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Where a task's future finds the runtime's waker.
#[derive(Default)]
pub(crate) struct WakerSlot(AtomicWaker);

impl ArcWake for WakerSlot {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        arc_self.0.wake();
    }
}

impl WakerSlot {
    /// A new slot, and the guard that empties it when the task ends.
    pub(crate) fn new() -> (Arc<Self>, SlotRelease) {
        let slot = Arc::new(Self::default());
        let release = SlotRelease(Arc::clone(&slot));
        (slot, release)
    }

    /// Poll `poll` with this slot's waker, `cx`'s waker registered in it first.
    pub(crate) fn poll_through<T>(
        self: &Arc<Self>,
        cx: &Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        self.0.register(cx.waker());
        let waker = waker_ref(self);
        let waker: &Waker = &waker;
        poll(&mut Context::from_waker(waker))
    }
}

/// Empties its slot when dropped (the task ends).
pub(crate) struct SlotRelease(Arc<WakerSlot>);

impl Drop for SlotRelease {
    fn drop(&mut self) {
        drop(self.0 .0.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct CountingWake(AtomicUsize);

    impl ArcWake for CountingWake {
        fn wake_by_ref(arc_self: &Arc<Self>) {
            arc_self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_stored_waker_wakes_the_task_until_it_ends_and_then_holds_nothing() {
        let counting = Arc::new(CountingWake(AtomicUsize::new(0)));
        let runtime_waker = futures::task::waker(Arc::clone(&counting));
        let cx = Context::from_waker(&runtime_waker);
        let (slot, release) = WakerSlot::new();
        // The future keeps its waker, as a channel that outlives the task would.
        let kept = slot.poll_through(&cx, |cx| Poll::Ready(cx.waker().clone()));
        let Poll::Ready(kept) = kept else {
            unreachable!()
        };
        assert_eq!(
            Arc::strong_count(&counting),
            3,
            "the slot holds the runtime's waker"
        );
        kept.wake_by_ref();
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
        // A second wake before the next poll finds the slot empty: the task is woken.
        kept.wake_by_ref();
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
        let _ = slot.poll_through(&cx, |_| Poll::<()>::Pending);
        drop(release);
        kept.wake_by_ref();
        assert_eq!(
            counting.0.load(Ordering::SeqCst),
            1,
            "an ended task is not woken"
        );
        assert_eq!(
            Arc::strong_count(&counting),
            2,
            "the kept waker no longer holds the runtime's"
        );
    }
}
