//! The rclrs-facing handles: `ExecutorChannel` (create Workers, wake spinning) and
//! `WorkerChannel` (what rclrs sends to one Worker). Both only send into channels; the
//! Worker task does the work. Neither holds entities, so nothing rclrs keeps alive
//! (entities hold their Worker's channel) can keep the entities themselves alive.

use crate::runtime::{
    async_tasks,
    mailbox::{self, MailItem, MailboxSender},
    shared::ExecutorShared,
    worker_task::{Control, WorkerTask},
};
use futures::future::BoxFuture;
use rclrs::{
    ExecutorChannel, ExecutorWorkerOptions, PayloadTask, Waitable, WeakActivityListener,
    WorkerChannel,
};
use std::sync::Arc;
use tokio::sync::mpsc;

pub(crate) struct TokioExecutorChannel {
    pub(crate) shared: Arc<ExecutorShared>,
}

impl ExecutorChannel for TokioExecutorChannel {
    fn create_worker(&self, options: ExecutorWorkerOptions) -> Arc<dyn WorkerChannel> {
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let (mailbox_tx, mailbox_rx) = mailbox::mailbox(Arc::clone(&self.shared.queued));
        let task = WorkerTask::new(
            Arc::clone(&self.shared),
            options.context,
            Some(options.guard_condition),
            options.payload,
            control_rx,
            control_tx.clone(),
            mailbox_rx,
            mailbox_tx.clone(),
        );
        self.shared.add_worker(control_tx.clone());
        self.shared.threads.spawn_worker(task.run());
        Arc::new(TokioWorkerChannel {
            shared: Arc::clone(&self.shared),
            control: control_tx,
            mailbox: mailbox_tx,
        })
    }

    fn wake_all_wait_sets(&self) {
        self.shared.wake_spin.notify_waiters();
    }
}

struct TokioWorkerChannel {
    shared: Arc<ExecutorShared>,
    control: mpsc::UnboundedSender<Control>,
    mailbox: MailboxSender,
}

impl WorkerChannel for TokioWorkerChannel {
    fn add_async_task(&self, f: BoxFuture<'static, ()>) {
        async_tasks::add_async_task(&self.shared, f);
    }

    fn add_to_wait_set(&self, new_entity: Waitable) {
        // Fails only after the executor was dropped; the entity is dropped with it.
        let _ = self.control.send(Control::Add(new_entity));
    }

    fn send_payload_task(&self, f: PayloadTask) {
        self.mailbox.send(MailItem::Payload(f));
    }

    fn add_activity_listener(&self, listener: WeakActivityListener) {
        let _ = self.control.send(Control::Listen(listener));
    }
}
