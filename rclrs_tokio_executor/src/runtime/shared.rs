//! State every part of one executor shares: the spin gate, the runtime handle, and the
//! signals `spin()` and the Worker tasks wait on.

use crate::runtime::spin_gate::SpinGate;
use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};
use tokio::{runtime::Handle, sync::Notify};

pub(crate) struct ExecutorShared {
    pub(crate) gate: SpinGate,
    /// Where Worker tasks, async tasks and the spin future run.
    pub(crate) handle: Handle,
    /// Mailbox items waiting in all Workers' mailboxes.
    pub(crate) queued: Arc<AtomicUsize>,
    /// `halt_spinning` and context checks: wakes the spin future.
    pub(crate) wake_spin: Notify,
    shutdown: AtomicBool,
    shutdown_notify: Notify,
}

impl ExecutorShared {
    pub(crate) fn new(handle: Handle) -> Arc<Self> {
        Arc::new(Self {
            gate: SpinGate::default(),
            handle,
            queued: Arc::default(),
            wake_spin: Notify::new(),
            shutdown: AtomicBool::new(false),
            shutdown_notify: Notify::new(),
        })
    }

    /// Tell the Worker tasks to tear down (the executor is being dropped).
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.shutdown_notify.notify_waiters();
        // A spin in progress on another task stops too.
        self.wake_spin.notify_waiters();
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Resolves once [`Self::shut_down`] was called.
    pub(crate) async fn shutdown_requested(&self) {
        loop {
            let notified = self.shutdown_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_shut_down() {
                return;
            }
            notified.await;
        }
    }
}
