//! The coalescing state of one entity (see "Coalescing" in the parent module): the
//! arrivals counted per part, and whether the entity sits in its Worker's mailbox.
//!
//! # Protocol
//!
//! - A notification adds its count to its part's `pending`, then swaps `queued` to true.
//!   The one caller that flips it from false queues the entity ([`Arrivals::add`] says
//!   so), so the mailbox holds an entity at most once.
//! - A drain first clears `queued`, then swaps every `pending` to zero
//!   ([`Arrivals::claim`]). A notification racing with it either adds to a count the
//!   swap still sees, or finds `queued` clear and queues the entity again: an arrival
//!   is never left counted with the entity out of the mailbox.
//! - A single pass defers: an entity it takes from the mailbox but does not run is
//!   released for re-queueing ([`Arrivals::defer_unclaimed`]), and arrivals it claimed
//!   but did not run go back into `pending` without touching `queued`
//!   ([`Arrivals::put_back`]). The Worker keeps the entity on its deferred list and
//!   queues it when the next pass begins, if anything is counted and nothing queued it
//!   meanwhile ([`Arrivals::requeue`]).
//!
//! The protocol lives apart from `Entity`, which also holds rcl handles, so that loom
//! can run it under every interleaving: `cargo test --features loom-model --lib
//! loom_models` swaps these atomics for loom's and runs the models at the end of this
//! file (`test/test_loom_models.py` runs them in `make test`).

#[cfg(feature = "loom-model")]
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(feature = "loom-model"))]
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The most parts an entity has: an action client's five.
pub(crate) const MAX_PARTS: usize = 5;

/// Arrivals a drain claimed, per part.
pub(crate) type Claims = [usize; MAX_PARTS];

/// Arrivals counted per part, and whether the entity is queued.
pub(crate) struct Arrivals {
    pending: [AtomicUsize; MAX_PARTS],
    queued: AtomicBool,
}

impl Arrivals {
    pub(crate) fn new() -> Self {
        Self {
            pending: std::array::from_fn(|_| AtomicUsize::new(0)),
            queued: AtomicBool::new(false),
        }
    }

    /// Count `count` arrivals of `part`. True if the caller must queue the entity (it
    /// was not queued, and is marked queued now).
    pub(crate) fn add(&self, part: usize, count: usize) -> bool {
        if count == 0 {
            return false;
        }
        self.pending[part].fetch_add(count, Ordering::AcqRel);
        !self.queued.swap(true, Ordering::AcqRel)
    }

    /// Whether the entity is queued (in its mailbox, or about to be sent there).
    pub(crate) fn is_queued(&self) -> bool {
        self.queued.load(Ordering::Acquire)
    }

    /// Begin a drain of an entity taken from the mailbox: allow re-queueing, then claim
    /// every arrival counted so far of the first `parts` parts.
    pub(crate) fn claim(&self, parts: usize) -> Claims {
        self.dequeue();
        let mut claims = Claims::default();
        for (claim, pending) in claims.iter_mut().zip(&self.pending[..parts]) {
            *claim = pending.swap(0, Ordering::SeqCst);
        }
        claims
    }

    /// Defer an entity taken from the mailbox without claiming: allow re-queueing (the
    /// caller keeps it for [`requeue`](Self::requeue)).
    pub(crate) fn defer_unclaimed(&self) {
        self.dequeue();
    }

    /// Put back the `unexecuted` arrivals a drain claimed, without queueing the entity:
    /// the caller keeps it for [`requeue`](Self::requeue). `queued` is left alone: the
    /// claim cleared it, and if a notification has set it since, the entity is in the
    /// mailbox again, where it must be only once.
    pub(crate) fn put_back(&self, unexecuted: &Claims) {
        for (pending, &count) in self.pending.iter().zip(unexecuted) {
            if count > 0 {
                pending.fetch_add(count, Ordering::SeqCst);
            }
        }
    }

    /// The entity left the mailbox: a notification may queue it again. A swap rather
    /// than a store: the same instruction on x86 (a sequentially consistent store is an
    /// `xchg`), and loom 0.7 lets another thread's swap read the value a plain store
    /// overwrote, a report the models would otherwise make that C++11 rules out.
    fn dequeue(&self) {
        self.queued.swap(false, Ordering::SeqCst);
    }

    /// For a deferred entity: true if it has arrivals counted and was not queued (the
    /// caller queues it; it is marked queued now).
    pub(crate) fn requeue(&self) -> bool {
        let counted = self.pending.iter().any(|p| p.load(Ordering::SeqCst) > 0);
        counted && !self.queued.swap(true, Ordering::AcqRel)
    }
}

/// The protocol under loom: a mailbox (a queue of "the entity"), push callbacks on
/// their own threads, a Worker that drains. Each model checks, under every
/// interleaving, that the mailbox never holds the entity twice and that every arrival
/// is claimed exactly once by the time the Worker is done with the mailbox.
#[cfg(all(test, feature = "loom-model"))]
mod loom_models {
    use super::{Arrivals, Claims};
    use loom::sync::{Arc, Mutex};
    use loom::thread;

    /// The entity and its Worker's mailbox (how many times the entity is in it).
    struct Model {
        arrivals: Arrivals,
        mailbox: Mutex<usize>,
    }

    impl Model {
        fn new() -> Arc<Self> {
            Arc::new(Self {
                arrivals: Arrivals::new(),
                mailbox: Mutex::new(0),
            })
        }

        /// A push callback.
        fn notify(&self, part: usize, count: usize) {
            if self.arrivals.add(part, count) {
                self.enqueue();
            }
        }

        fn enqueue(&self) {
            let mut queued = self.mailbox.lock().unwrap();
            *queued += 1;
            assert_eq!(*queued, 1, "the entity is in the mailbox twice");
        }

        /// The Worker takes the entity from the mailbox, if it is there.
        fn pop(&self) -> bool {
            let mut queued = self.mailbox.lock().unwrap();
            let popped = *queued > 0;
            *queued = queued.saturating_sub(1);
            popped
        }

        /// Drain until the mailbox is empty; what was claimed, per part.
        fn drain(&self, parts: usize) -> Claims {
            let mut total = Claims::default();
            while self.pop() {
                add(&mut total, self.arrivals.claim(parts));
            }
            total
        }
    }

    /// Add `from` to `into`, part by part.
    fn add(into: &mut Claims, from: Claims) {
        for (sum, claim) in into.iter_mut().zip(from) {
            *sum += claim;
        }
    }

    /// Push callbacks for `notifications` (part, count), each on a thread of its own,
    /// while the Worker drains an entity of `parts` parts; then, the callbacks done, one
    /// more drain (what arrived after the Worker's last look is queued). What the two
    /// drains claimed, with the model.
    fn drain_while_notified(
        notifications: &[(usize, usize)],
        parts: usize,
    ) -> (Claims, Arc<Model>) {
        let model = Model::new();
        let callbacks: Vec<_> = notifications
            .iter()
            .map(|&(part, count)| {
                let model = Arc::clone(&model);
                thread::spawn(move || model.notify(part, count))
            })
            .collect();
        let mut claimed = model.drain(parts);
        for callback in callbacks {
            callback.join().unwrap();
        }
        add(&mut claimed, model.drain(parts));
        (claimed, model)
    }

    #[test]
    fn every_arrival_is_claimed_once_and_queued_once_at_a_time() {
        loom::model(|| {
            let (claimed, model) = drain_while_notified(&[(0, 1), (0, 2)], 1);
            assert_eq!(claimed[0], 3);
            assert!(!model.arrivals.requeue(), "counted but not claimed");
        });
    }

    #[test]
    fn the_parts_of_an_action_entity_share_one_queue_slot() {
        loom::model(|| {
            let (claimed, _) = drain_while_notified(&[(0, 1), (4, 1)], 5);
            assert_eq!((claimed[0], claimed[4]), (1, 1));
        });
    }

    #[test]
    fn a_deferred_entity_keeps_its_arrivals_for_the_next_pass() {
        loom::model(|| {
            let model = Model::new();
            model.notify(0, 2);
            let callback = {
                let model = Arc::clone(&model);
                thread::spawn(move || model.notify(0, 1))
            };
            // A single pass: take the entity, run one arrival, defer the rest.
            let mut claimed = Claims::default();
            assert!(model.pop());
            let mut claims = model.arrivals.claim(1);
            claimed[0] += 1;
            claims[0] -= 1;
            model.arrivals.put_back(&claims);
            callback.join().unwrap();
            // The next pass: queue the deferred entity (unless a callback did), drain.
            if model.arrivals.requeue() {
                model.enqueue();
            }
            add(&mut claimed, model.drain(1));
            assert_eq!(claimed[0], 3);
        });
    }
}
