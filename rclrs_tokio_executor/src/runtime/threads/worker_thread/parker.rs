//! How a Worker thread sleeps between turns, and how an enqueue wakes it.
//!
//! # Protocol
//!
//! [`Parker::unpark`] sets `notified` and unparks the thread only if the flag was clear,
//! so a burst of enqueues costs one unpark. [`Parker::park`] clears the flag and parks
//! only if it was clear: an enqueue since the thread last looked at its run queue left
//! it set, and the thread looks again at once. An enqueue after the clear unparks the
//! thread, and an unpark that comes before the park makes the park return at once
//! (park's token), so no wake-up is lost. The run queue is pushed before `unpark` and
//! popped after `park` returns.
//!
//! Under the `loom-model` feature the flag, the thread handle and park are loom's, and
//! the model at the end of this file checks the protocol under every interleaving
//! (`cargo test --features loom-model --lib loom_models`).

#[cfg(feature = "loom-model")]
use loom::{
    sync::atomic::{AtomicBool, Ordering},
    thread::{current, park, Thread},
};
#[cfg(not(feature = "loom-model"))]
use std::{
    sync::atomic::{AtomicBool, Ordering},
    thread::{current, park, Thread},
};

use std::sync::OnceLock;
use std::time::Instant;

#[cfg(not(feature = "loom-model"))]
fn park_until(deadline: Instant) {
    std::thread::park_timeout(deadline.saturating_duration_since(Instant::now()));
}

/// loom has no timed park; the models never ask for one.
#[cfg(feature = "loom-model")]
fn park_until(_deadline: Instant) {
    park();
}

/// A thread's sleep, woken at most once per park.
#[derive(Default)]
pub(crate) struct Parker {
    /// The parking thread, once it runs.
    thread: OnceLock<Thread>,
    notified: AtomicBool,
}

impl Parker {
    /// On the thread that parks, before it first looks at its run queue.
    pub(crate) fn bind(&self) {
        let _ = self.thread.set(current());
    }

    /// Something was queued: make sure the thread looks.
    pub(crate) fn unpark(&self) {
        if !self.notified.swap(true, Ordering::SeqCst) {
            // Before `bind` nobody parks yet: the thread looks at its queue first.
            if let Some(thread) = self.thread.get() {
                thread.unpark();
            }
        }
    }

    /// The run queue was found empty: sleep until unparked or `until`, unless something
    /// was queued since (then return at once).
    pub(crate) fn park(&self, until: Option<Instant>) {
        if self.notified.swap(false, Ordering::SeqCst) {
            return;
        }
        match until {
            Some(deadline) => park_until(deadline),
            None => park(),
        }
    }
}

/// The protocol under loom: a consumer that parks when its queue is empty, and
/// producers that push then unpark. loom fails a model in which every thread is
/// blocked, so a lost wake-up shows as a deadlock.
#[cfg(all(test, feature = "loom-model"))]
mod loom_models {
    use super::Parker;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::sync::Arc;

    #[test]
    fn an_enqueue_from_another_thread_is_never_missed() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let parker = Arc::new(Parker::default());
            let queued = Arc::new(AtomicUsize::new(0));
            parker.bind();
            for _ in 0..2 {
                let (parker, queued) = (Arc::clone(&parker), Arc::clone(&queued));
                loom::thread::spawn(move || {
                    queued.fetch_add(1, Ordering::SeqCst);
                    parker.unpark();
                });
            }
            // The thread's loop: look at the queue, park when it is empty.
            let mut taken = 0;
            while taken < 2 {
                let now = queued.load(Ordering::SeqCst);
                if now > taken {
                    taken = now;
                    continue;
                }
                parker.park(None);
            }
        });
    }
}
