//! Driving a future on the current thread, parked between wake-ups ([`block_on`]).
//!
//! # Protocol
//!
//! The waker sets `notified` and unparks the thread only if the flag was clear, so a
//! burst of wakes costs one unpark. After a poll returns pending, the thread clears the
//! flag and parks only if it was clear: a wake that came during the poll left it set, and
//! the future is polled again at once. A wake after the flag was cleared unparks the
//! thread, and an unpark that comes before the park makes the park return at once
//! (park's token), so no wake-up is lost.
//!
//! Before each park the thread calls `before_park`, which may wake the future (the
//! timer ticks of a dedicated Worker's own scheduler go into its mailbox there) and
//! says until when the thread may sleep: `park_timeout` until then, or `park`.
//!
//! Under the `loom-model` feature the flag, the thread handle and park are loom's, and
//! the model at the end of this file checks that protocol under every interleaving
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

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
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

/// Wakes a parked thread, at most once per park.
struct ThreadWaker {
    thread: Thread,
    notified: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // The flag first: only the wake that sets it pays for the unpark.
        if !self.notified.swap(true, Ordering::AcqRel) {
            self.thread.unpark();
        }
    }
}

/// Poll `future` to completion on this thread, parking while it is pending, at most
/// until the instant `before_park` returns.
pub(crate) fn block_on<F: Future>(
    future: F,
    mut before_park: impl FnMut() -> Option<Instant>,
) -> F::Output {
    let mut future = pin!(future);
    let state = Arc::new(ThreadWaker {
        thread: current(),
        notified: AtomicBool::new(false),
    });
    let waker = Waker::from(Arc::clone(&state));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        // A wake during the poll left the flag set: poll again without parking.
        while !state.notified.swap(false, Ordering::AcqRel) {
            match before_park() {
                Some(deadline) => park_until(deadline),
                None => park(),
            }
        }
    }
}

/// The protocol under loom: a future that another thread makes ready and then wakes
/// (as a push callback's send into the mailbox does). loom fails a model in which every
/// thread is blocked, so a lost wake-up shows as a deadlock.
#[cfg(all(test, feature = "loom-model"))]
mod loom_models {
    use super::block_on;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};

    /// Values sent by other threads, and the waker of whoever waits for them.
    #[derive(Default)]
    struct Channel {
        sent: AtomicUsize,
        waiting: Mutex<Option<Waker>>,
    }

    impl Channel {
        fn send(&self) {
            self.sent.fetch_add(1, Ordering::AcqRel);
            if let Some(waker) = self.waiting.lock().unwrap().take() {
                waker.wake();
            }
        }

        /// Ready once `count` values were sent.
        async fn received(&self, count: usize) {
            std::future::poll_fn(|cx| {
                if self.sent.load(Ordering::Acquire) >= count {
                    return Poll::Ready(());
                }
                *self.waiting.lock().unwrap() = Some(cx.waker().clone());
                // Checked again after registering: a send in between found no waker.
                if self.sent.load(Ordering::Acquire) >= count {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await
        }
    }

    #[test]
    fn a_wake_from_another_thread_is_never_lost() {
        // Three preemptions cover the interleavings of two wakes with a poll and a park
        // (unbounded, the model takes a minute).
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let channel = Arc::new(Channel::default());
            for _ in 0..2 {
                let channel = Arc::clone(&channel);
                loom::thread::spawn(move || channel.send());
            }
            block_on(channel.received(2), || None);
            // Not joined: loom 0.7 aborts a model in which a thread blocked in `join` is
            // unparked (tokio-rs/loom#249), as a sender's late wake may do here. The
            // model still runs every thread to its end.
        });
    }
}
