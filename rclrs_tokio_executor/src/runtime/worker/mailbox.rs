//! A Worker's mailbox: the queue of work its turns drain, in arrival order, and the
//! control queue beside it.
//!
//! Push callbacks send into it from middleware threads, so sending is lock-free and
//! never blocks (an unbounded `concurrent-queue`). It stays bounded in practice because
//! an entity is in it at most once (see `entity.rs`); payload tasks are the only items
//! that are not coalesced, exactly as many as the user sends. A push callback that runs
//! inside a publish on the same thread sends when the publish returns
//! ([`after_publish`]).
//!
//! # Waking the Worker
//!
//! 1. Every send (an item, a control message) and every *nudge* (the spin gate opened,
//!    a timer needs a look) ends with [`Mailbox::wake`]: it sets `scheduled` and, only
//!    if that flipped it, asks the Worker's driver to run a turn ([`Schedule`]). So a
//!    burst of sends costs one wake-up, and a send to a Worker that is already
//!    scheduled costs one atomic swap.
//! 2. A turn clears `scheduled` before it looks at anything ([`Mailbox::begin_turn`]).
//!    What is sent after that either is found by the turn, or schedules another: no
//!    wake-up is lost, and at worst a turn finds nothing ([`scheduled`], with a loom
//!    model).
//! 3. The mailbox holds its driver weakly: a Worker that ended is not kept by the
//!    senders that outlive it (its entities' push callbacks, a timer scheduler, rclrs's
//!    channel), and a wake then does nothing.
//!
//! # Counting
//!
//! Each mailbox counts the items sent into it and the items its Worker has finished
//! with (ran them, deferred them to a later pass, or dropped them at teardown), in the
//! Worker's [`WorkerCounters`]: `spin()` reads them to tell which work was already
//! waiting when it started, which a zero or short timeout must still process, and
//! users read them as the Worker's backlog.
//!
//! # Closing
//!
//! When the Worker ends it closes the mailbox and drops what is queued. A send that
//! raced with the close finds the mailbox closed after its push and drops what is
//! queued itself (the queue has several consumers), so nothing sent to a Worker that
//! ended stays queued, holding entities.

mod after_publish;
mod scheduled;

use crate::runtime::entity::{Entity, EntityQueue};
use crate::stats::worker_counters::WorkerCounters;
use concurrent_queue::ConcurrentQueue;
use rclrs::{PayloadTask, Waitable, WeakActivityListener};
use scheduled::Scheduled;
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Wake, Waker};
use tokio::sync::oneshot;

/// Bookkeeping for a Worker task, handled even while not spinning.
pub(crate) enum Control {
    Add(Waitable),
    Listen(WeakActivityListener),
    /// An rclrs guard condition fired where only the fallback waiter sees it: an entity
    /// may have been dropped.
    Sweep,
    /// The rclrs Worker's channel was dropped: end the task once no entity of it is
    /// still in use.
    WorkerDropped,
    /// The executor is being dropped: tear down and end the task.
    Shutdown,
}

/// One unit of work for a Worker. Entities and payload tasks are callbacks and wait for
/// the spin gate; a loan lends the payload to the fallback waiter.
pub(crate) enum MailItem {
    /// An entity with arrivals to drain.
    Entity(Arc<Entity>),
    /// A task to run on the Worker's payload.
    Payload(PayloadTask),
    /// The fallback waiter has ready primitives and needs the payload to run them.
    Loan(PayloadLoan),
}

/// A request from the fallback waiter for the Worker's payload.
pub(crate) struct PayloadLoan {
    /// Where the Worker sends its payload, with the way back.
    pub(crate) lend: std::sync::mpsc::SyncSender<LentPayload>,
}

/// The payload while the fallback waiter holds it. Dropping it sends the payload back,
/// so the Worker gets its payload back even if the fallback waiter unwinds.
pub(crate) struct LentPayload {
    payload: Option<Box<dyn Any + Send>>,
    give_back: Option<oneshot::Sender<Box<dyn Any + Send>>>,
}

impl LentPayload {
    pub(crate) fn new(
        payload: Box<dyn Any + Send>,
        give_back: oneshot::Sender<Box<dyn Any + Send>>,
    ) -> Self {
        Self {
            payload: Some(payload),
            give_back: Some(give_back),
        }
    }

    pub(crate) fn payload_mut(&mut self) -> &mut dyn Any {
        &mut **self
            .payload
            .as_mut()
            .expect("a loan holds its payload until dropped")
    }

    /// Undo a loan that never reached the fallback waiter.
    pub(crate) fn into_payload(mut self) -> Option<Box<dyn Any + Send>> {
        self.give_back = None;
        self.payload.take()
    }
}

impl Drop for LentPayload {
    fn drop(&mut self) {
        if let (Some(payload), Some(give_back)) = (self.payload.take(), self.give_back.take()) {
            // The Worker may be gone (executor dropped); then the payload drops here.
            let _ = give_back.send(payload);
        }
    }
}

/// What runs a Worker's turns when its mailbox wakes it: a Worker thread's run queue, or
/// a Tokio task's waker.
pub(crate) trait Schedule: Send + Sync {
    /// Run a turn of the Worker soon (it was not scheduled).
    fn schedule(self: Arc<Self>);
}

/// A Worker's two queues, shared by its senders and the Worker.
pub(crate) struct Mailbox {
    items: ConcurrentQueue<MailItem>,
    control: ConcurrentQueue<Control>,
    /// Set by every control send, after its push: a turn looks at `control` only then.
    any_control: AtomicBool,
    closed: AtomicBool,
    /// Set from the first wake until the Worker's next turn begins.
    scheduled: Scheduled,
    /// Who runs the Worker's turns (set once, when the Worker is placed).
    driver: OnceLock<Weak<dyn Schedule>>,
    counters: Arc<WorkerCounters>,
}

/// Sending side of a mailbox; cheap to clone into push callbacks.
#[derive(Clone)]
pub(crate) struct MailboxSender {
    mailbox: Arc<Mailbox>,
}

impl Mailbox {
    /// A new mailbox, counted in `counters`, with no driver yet.
    pub(crate) fn new(counters: &Arc<WorkerCounters>) -> Arc<Self> {
        Arc::new(Self {
            items: ConcurrentQueue::unbounded(),
            control: ConcurrentQueue::unbounded(),
            any_control: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            scheduled: Scheduled::default(),
            driver: OnceLock::new(),
            counters: Arc::clone(counters),
        })
    }

    /// The sending side.
    pub(crate) fn sender(self: &Arc<Self>) -> MailboxSender {
        MailboxSender {
            mailbox: Arc::clone(self),
        }
    }

    /// Let `driver` run the Worker's turns from now on, and run one now if something
    /// was sent before it was set.
    pub(crate) fn set_driver(&self, driver: Weak<dyn Schedule>) {
        if self.driver.set(driver).is_ok() && self.scheduled.take_early() {
            self.wake();
        }
    }

    /// Make sure the Worker runs a turn after this call (see the module's protocol).
    pub(crate) fn wake(&self) {
        if !self.scheduled.wake() {
            return;
        }
        // No driver yet: `set_driver` finds the flag set. Or the Worker ended.
        if let Some(driver) = self.driver.get().and_then(Weak::upgrade) {
            driver.schedule();
        }
    }

    /// A turn begins: wakes from now on schedule another one.
    pub(crate) fn begin_turn(&self) {
        self.scheduled.begin_turn();
    }

    /// The pool thread the Worker is placed on, if any.
    pub(crate) fn home_thread(&self) -> Option<usize> {
        self.counters.home_thread()
    }

    /// Whether the Worker is scheduled for a turn (a wake since the last one began).
    pub(crate) fn is_scheduled(&self) -> bool {
        self.scheduled.is_set()
    }

    /// A waker that nudges the Worker (a turn with nothing new sent), for what it waits
    /// on outside the mailbox: the spin gate, a loan's return, its timers.
    pub(crate) fn nudger(self: &Arc<Self>) -> Waker {
        Waker::from(Arc::new(Nudge(Arc::downgrade(self))))
    }

    fn push(&self, item: MailItem) {
        // Counted before it can be received, so `finished` never passes `sent`.
        self.counters.sent_one();
        if self.closed.load(Ordering::SeqCst) || self.items.push(item).is_err() {
            self.counters.finished_one();
            return;
        }
        if self.closed.load(Ordering::SeqCst) {
            // The Worker closed the mailbox after we looked: drop what it left.
            self.drain();
            return;
        }
        self.wake();
    }

    /// The next item, if any.
    pub(crate) fn recv(&self) -> Option<MailItem> {
        // Nothing counted beyond what the Worker finished: the queue is empty, and the
        // queue need not be looked at (after most batches, and while lingering).
        if self.counters.unfinished() == 0 {
            return None;
        }
        self.items.pop().ok()
    }

    /// The next control message, if any. A turn calls this until it returns `None`.
    pub(crate) fn recv_control(&self) -> Option<Control> {
        // Cleared before popping: a send after the pop sets it again for the next turn.
        if !self.any_control.load(Ordering::SeqCst) {
            return None;
        }
        match self.control.pop() {
            Ok(control) => Some(control),
            Err(_) => {
                self.any_control.store(false, Ordering::SeqCst);
                // A push between the failed pop and the clear: take it now.
                self.control.pop().ok().inspect(|_| {
                    self.any_control.store(true, Ordering::SeqCst);
                })
            }
        }
    }

    /// Whether no item is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The Worker is done with one received item.
    pub(crate) fn finished_one(&self) {
        self.counters.finished_one();
    }

    /// Close the mailbox and drop everything still queued (teardown), so queued entities
    /// are released before the Worker tears its entities down. Sends from now on drop
    /// their item.
    pub(crate) fn close_and_drain(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.drain();
        while self.control.pop().is_ok() {}
    }

    fn drain(&self) {
        while let Ok(item) = self.items.pop() {
            drop(item);
            self.counters.finished_one();
        }
    }
}

/// Wakes a Worker without sending it anything.
struct Nudge(Weak<Mailbox>);

impl Wake for Nudge {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(mailbox) = self.0.upgrade() {
            mailbox.wake();
        }
    }
}

impl EntityQueue for MailboxSender {
    fn enqueue(&self, entity: Arc<Entity>) {
        after_publish::send_entity(self, entity);
    }

    fn tracing(&self) -> bool {
        MailboxSender::tracing(self)
    }
}

impl MailboxSender {
    /// Whether the executor traces stages (the push callback then stamps its item).
    pub(crate) fn tracing(&self) -> bool {
        self.mailbox.counters.tracing()
    }

    /// The pool thread the receiving Worker is placed on, if any.
    pub(crate) fn home_thread(&self) -> Option<usize> {
        self.mailbox.counters.home_thread()
    }

    /// Non-blocking. Once the Worker has ended the item is dropped: there is nobody left
    /// to run it.
    pub(crate) fn send(&self, item: MailItem) {
        self.mailbox.push(item);
    }

    /// Queue a control message (handled whether or not the executor spins). Dropped once
    /// the Worker has ended.
    pub(crate) fn send_control(&self, control: Control) {
        if self.mailbox.closed.load(Ordering::SeqCst) || self.mailbox.control.push(control).is_err()
        {
            return;
        }
        self.mailbox.any_control.store(true, Ordering::SeqCst);
        if self.mailbox.closed.load(Ordering::SeqCst) {
            while self.mailbox.control.pop().is_ok() {}
            return;
        }
        self.mailbox.wake();
    }

    /// Run a turn of the Worker soon, with nothing sent (a timer needs a look).
    pub(crate) fn nudge(&self) {
        self.mailbox.wake();
    }
}
