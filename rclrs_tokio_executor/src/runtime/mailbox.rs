//! A Worker's mailbox: the queue of work its task drains, in arrival order.
//!
//! Push callbacks send into it from middleware threads, so sending is lock-free and
//! never blocks (a tokio unbounded channel). It stays bounded in practice because an
//! entity is in it at most once (see `entity.rs`); payload tasks are the only items
//! that are not coalesced, exactly as many as the user sends. A push callback that runs
//! inside a publish on the same thread sends when the publish returns
//! ([`after_publish`]).
//!
//! Each mailbox counts the items sent into it and the items its Worker has finished
//! with (ran them, deferred them to a later pass, or dropped them at teardown), in the
//! Worker's [`WorkerCounters`]: `spin()` reads them to tell which work was already
//! waiting when it started, which a zero or short timeout must still process, and
//! users read them as the Worker's backlog.

mod after_publish;

use crate::runtime::entity::{Entity, EntityQueue};
use crate::stats::worker_counters::WorkerCounters;
use rclrs::PayloadTask;
use std::any::Any;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// One unit of work for a Worker's task. Entities and payload tasks are callbacks and
/// wait for the spin gate; a loan lends the payload to the fallback waiter.
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

/// Sending side of a mailbox; cheap to clone into push callbacks.
#[derive(Clone)]
pub(crate) struct MailboxSender {
    tx: mpsc::UnboundedSender<MailItem>,
    counters: Arc<WorkerCounters>,
}

/// Receiving side, owned by the Worker's task.
pub(crate) struct MailboxReceiver {
    rx: mpsc::UnboundedReceiver<MailItem>,
    counters: Arc<WorkerCounters>,
}

/// A new mailbox, counted in `counters`.
pub(crate) fn mailbox(counters: &Arc<WorkerCounters>) -> (MailboxSender, MailboxReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        MailboxSender {
            tx,
            counters: Arc::clone(counters),
        },
        MailboxReceiver {
            rx,
            counters: Arc::clone(counters),
        },
    )
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
        self.counters.tracing()
    }

    /// The pool thread the receiving Worker task is placed on, if any.
    pub(crate) fn home_thread(&self) -> Option<usize> {
        self.counters.home_thread()
    }

    /// Non-blocking. Fails only when the Worker's task is gone (executor dropped), in
    /// which case there is nobody left to run the item.
    pub(crate) fn send(&self, item: MailItem) {
        // Counted before it can be received, so `finished` never passes `sent`.
        self.counters.sent_one();
        if self.tx.send(item).is_err() {
            self.counters.finished_one();
        }
    }
}

impl MailboxReceiver {
    pub(crate) async fn recv(&mut self) -> Option<MailItem> {
        self.rx.recv().await
    }

    pub(crate) fn try_recv(&mut self) -> Option<MailItem> {
        // Nothing counted beyond what the Worker finished: the queue is empty, and the
        // channel need not be looked at (after most batches, and while lingering).
        if self.counters.unfinished() == 0 {
            return None;
        }
        self.rx.try_recv().ok()
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// The Worker is done with one received item.
    pub(crate) fn finished_one(&self) {
        self.counters.finished_one();
    }

    /// Drop everything still queued (teardown), so queued entities are released
    /// before the Worker tears its entities down.
    pub(crate) fn close_and_drain(&mut self) {
        self.rx.close();
        while self.try_recv().is_some() {
            self.finished_one();
        }
    }
}
