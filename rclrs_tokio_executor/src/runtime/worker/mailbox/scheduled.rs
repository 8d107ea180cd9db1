//! The flag that makes a burst of sends cost one wake-up of a Worker ("Waking the
//! Worker" in `mailbox.rs`), apart from the queues, so that loom can run the protocol
//! under every interleaving: `cargo test --features loom-model --lib loom_models` swaps
//! the atomic for loom's and runs the model at the end of this file.
//!
//! # Protocol
//!
//! 1. A sender pushes its item, then calls [`Scheduled::wake`]: only the call that sets
//!    the flag schedules a turn.
//! 2. A turn calls [`Scheduled::begin_turn`], which clears the flag, before it looks at
//!    the queues. An item pushed before the clear is found by the turn; one pushed
//!    after it sets the flag again and schedules the next turn. Either way no item
//!    waits without a turn to come.

#[cfg(feature = "loom-model")]
use loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(feature = "loom-model"))]
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a turn of the Worker is to come.
#[derive(Default)]
pub(crate) struct Scheduled(AtomicBool);

impl Scheduled {
    /// Something was sent: true if the caller must schedule a turn (none was to come).
    pub(crate) fn wake(&self) -> bool {
        !self.0.swap(true, Ordering::SeqCst)
    }

    /// A turn begins: from now on a wake schedules another.
    pub(crate) fn begin_turn(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    /// Whether a turn is to come (a wake since the last turn began).
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The Worker's driver was just set: whether a wake came before it, which then
    /// scheduled nothing (cleared, so that waking again schedules the turn).
    pub(crate) fn take_early(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// The protocol under loom: two senders push and wake while the Worker runs turns.
/// Every item pushed must be found by a turn that runs or is scheduled after the push.
#[cfg(all(test, feature = "loom-model"))]
mod loom_models {
    use super::Scheduled;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::sync::Arc;

    #[derive(Default)]
    struct Worker {
        scheduled: Scheduled,
        /// The mailbox, as a count of items.
        items: AtomicUsize,
        /// Turns scheduled and not run yet (its thread's run queue).
        turns: AtomicUsize,
    }

    impl Worker {
        fn send(&self) {
            self.items.fetch_add(1, Ordering::SeqCst);
            if self.scheduled.wake() {
                self.turns.fetch_add(1, Ordering::SeqCst);
            }
        }

        /// Run a queued turn if there is one: what it found.
        fn turn(&self) -> Option<usize> {
            self.turns
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .ok()?;
            self.scheduled.begin_turn();
            Some(self.items.swap(0, Ordering::SeqCst))
        }
    }

    #[test]
    fn no_item_waits_without_a_turn_to_come() {
        loom::model(|| {
            let worker = Arc::new(Worker::default());
            let senders: Vec<_> = (0..2)
                .map(|_| {
                    let worker = Arc::clone(&worker);
                    loom::thread::spawn(move || worker.send())
                })
                .collect();
            // A turn while the senders run, then every turn that is left.
            let mut found = worker.turn().unwrap_or(0);
            for sender in senders {
                sender.join().unwrap();
            }
            while let Some(items) = worker.turn() {
                found += items;
            }
            assert_eq!(found, 2, "an item was left without a turn");
        });
    }
}
