//! The fence between a look's sends and a spin's pass (see "A spin's pass sees every
//! tick recorded before it" in the parent module).
//!
//! # Protocol
//!
//! A look records its ticks under the scheduler's state lock and sends them after
//! releasing it. It takes the fence ([`SendFence::sending`]) *before* it releases the
//! state lock and drops it once the ticks are sent. A spin's pass takes the state lock,
//! looks, releases it, then waits at the fence ([`SendFence::wait_for_sends`]). Since
//! the pass got the state lock after the look released it, and the look held the fence
//! by then, the pass's wait ends after the look's sends: a tick the pass found recorded
//! is in its Worker's mailbox when the pass reads its backlog. Lock order: state, then
//! the fence; nothing takes them the other way round.
//!
//! Under the `loom-model` feature the fence's lock is loom's, and the model at the end
//! of this file checks that protocol under every interleaving (`cargo test --features
//! loom-model --lib loom_models`).

#[cfg(feature = "loom-model")]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(feature = "loom-model"))]
use std::sync::{Mutex, MutexGuard};

/// Held while a look's ticks are on their way to the mailboxes.
#[derive(Default)]
pub(super) struct SendFence(Mutex<()>);

/// A look's sends in progress; drop it once they are sent.
pub(super) type Sending<'a> = MutexGuard<'a, ()>;

impl SendFence {
    /// A look's sends begin: call with the state lock still held.
    pub(super) fn sending(&self) -> Sending<'_> {
        self.0.lock().unwrap()
    }

    /// Return once every send begun before this call has ended. Call without the state
    /// lock.
    pub(super) fn wait_for_sends(&self) {
        drop(self.0.lock().unwrap());
    }
}

/// The protocol under loom: a look that records a tick and sends it after the state
/// lock, and a spin's pass that finds the tick recorded; the pass must then find it in
/// the mailbox.
#[cfg(all(test, feature = "loom-model"))]
mod loom_models {
    use super::SendFence;
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::{Arc, Mutex};
    use loom::thread;

    #[derive(Default)]
    struct Scheduler {
        /// The state lock, holding whether a tick is recorded.
        recorded: Mutex<bool>,
        fence: SendFence,
        /// The Worker's mailbox: whether the tick is in it.
        mailbox: AtomicBool,
    }

    #[test]
    fn a_pass_that_finds_a_tick_recorded_finds_it_sent() {
        loom::model(|| {
            let scheduler = Arc::new(Scheduler::default());
            let look = {
                let scheduler = Arc::clone(&scheduler);
                thread::spawn(move || {
                    let mut recorded = scheduler.recorded.lock().unwrap();
                    *recorded = true;
                    let sending = scheduler.fence.sending();
                    drop(recorded);
                    scheduler.mailbox.store(true, Ordering::Release);
                    drop(sending);
                })
            };
            let found_recorded = *scheduler.recorded.lock().unwrap();
            scheduler.fence.wait_for_sends();
            if found_recorded {
                assert!(
                    scheduler.mailbox.load(Ordering::Acquire),
                    "the pass found the tick recorded but not in the mailbox"
                );
            }
            look.join().unwrap();
        });
    }
}
