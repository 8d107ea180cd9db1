//! The rclrs-facing handles: `ExecutorChannel` (create Workers, wake spinning) and
//! `WorkerChannel` (what rclrs sends to one Worker). Both only send into the Worker's
//! mailbox and control queue; the Worker task does the work. Neither holds entities, so nothing rclrs keeps alive
//! (entities hold their Worker's channel) can keep the entities themselves alive.

use crate::runtime::{
    async_tasks,
    entity::rules_of,
    mailbox::{Control, MailItem, MailboxSender},
    shared::ExecutorShared,
    worker_task::WorkerTask,
};
use futures::future::BoxFuture;
use rclrs::{
    ExecutorChannel, ExecutorWorkerOptions, PayloadTask, Waitable, WeakActivityListener,
    WorkerChannel,
};
use std::sync::Arc;

pub(crate) struct TokioExecutorChannel {
    pub(crate) shared: Arc<ExecutorShared>,
}

impl ExecutorChannel for TokioExecutorChannel {
    fn create_worker(&self, options: ExecutorWorkerOptions) -> Arc<dyn WorkerChannel> {
        // The basic executor wakes the wait sets of the Workers that have spun, which
        // ends a `spin_once`; a fresh executor's first Worker wakes nothing.
        if self.shared.gate.pass() > 0 {
            self.shared.note_entities_changed();
        }
        let mailbox = WorkerTask::spawn(
            Arc::clone(&self.shared),
            options.context,
            Some(options.guard_condition),
            options.payload,
        );
        Arc::new(TokioWorkerChannel {
            shared: Arc::clone(&self.shared),
            mailbox,
        })
    }

    /// rclrs calls this from `halt_spinning`, after setting the halt flag, which the
    /// spin gate reads itself (no callback starts after it); this wakes the spin future
    /// to return.
    fn wake_all_wait_sets(&self) {
        self.shared.wake_spin.notify_waiters();
    }
}

struct TokioWorkerChannel {
    shared: Arc<ExecutorShared>,
    mailbox: MailboxSender,
}

impl WorkerChannel for TokioWorkerChannel {
    fn add_async_task(&self, f: BoxFuture<'static, ()>) {
        async_tasks::add_async_task(&self.shared, f);
    }

    fn add_to_wait_set(&self, new_entity: Waitable) {
        // A Worker's own guard condition comes without a trigger, and is no work for the
        // basic executor; every other entity triggers it (a unit of work).
        let triggers = !rules_of(new_entity.primitive().kind()).trigger;
        // Dropped once the Worker has ended (the executor was dropped), with the entity.
        self.mailbox.send_control(Control::Add(new_entity));
        if triggers {
            self.shared.note_entities_changed();
        }
    }

    fn send_payload_task(&self, f: PayloadTask) {
        if let Some(index) = self.mailbox.home_thread() {
            self.shared.threads.before_waking(index);
        }
        self.mailbox.send(MailItem::Payload(f));
    }

    /// The send above wakes the Worker task, so rclrs need not also trigger the
    /// Worker's guard condition (patch 0013): that would queue a second item, and often
    /// wake the Worker's thread a second time, for every `Worker::run`.
    fn payload_task_wakes_worker(&self) -> bool {
        true
    }

    /// A node-level callback's future would be polled right after its take, on this
    /// thread, anyway (`async_tasks::InlineScope`): a synchronous one may as well run
    /// there directly, without the task (patch 0022).
    fn runs_node_callbacks_inline(&self) -> bool {
        true
    }

    fn add_activity_listener(&self, listener: WeakActivityListener) {
        self.mailbox.send_control(Control::Listen(listener));
    }
}

impl Drop for TokioWorkerChannel {
    fn drop(&mut self) {
        // rclrs dropped the Worker and everything that held its channel: the task ends
        // once none of its entities is in use (see `worker_task.rs`).
        self.mailbox.send_control(Control::WorkerDropped);
    }
}
