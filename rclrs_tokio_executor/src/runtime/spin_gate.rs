//! The spin gate: callbacks run only while `spin()` is active, and `spin()` returns only
//! once the callbacks that were running have finished.
//!
//! # Protocol
//!
//! The gate is a flag (`open`) and a count of callbacks in flight. A worker task, or an
//! async task, that wants to run a callback calls [`SpinGate::try_enter`]: it first
//! increments `in_flight`, then reads `open`. `spin()` closes the gate by clearing
//! `open`, then waits until `in_flight` reaches zero. Both sides use sequentially
//! consistent operations, so either the entrant sees the gate closed (and backs out,
//! undoing its increment), or the closer sees the entrant's increment (and waits for
//! it). A callback can never start after `spin()` has observed zero in flight.
//!
//! Nothing here polls: tasks waiting for the gate to open await [`SpinGate::opened`],
//! `spin()` awaits [`SpinGate::drained`], and both notifications use the
//! enable-then-check pattern of `tokio::sync::Notify` so no wake-up is lost between
//! checking the condition and starting to wait.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use tokio::sync::Notify;

/// Opens while `spin()` runs; counts the callbacks in flight.
#[derive(Default)]
pub(crate) struct SpinGate {
    open: AtomicBool,
    in_flight: AtomicUsize,
    /// Units of work (a mailbox item, an async task poll) finished since creation.
    /// `spin_once` waits for it to move.
    work_done: AtomicU64,
    /// How many `worked_since` futures are waiting; work is announced only then, so the
    /// hot path takes no lock when nobody is spinning once.
    work_watchers: AtomicUsize,
    opened: Notify,
    drained: Notify,
    worked: Notify,
}

/// Proof that a callback may run; leaving the scope ends the callback's flight.
pub(crate) struct InFlight<'a> {
    gate: &'a SpinGate,
}

impl SpinGate {
    pub(crate) fn is_open(&self) -> bool {
        self.open.load(SeqCst)
    }

    /// Let callbacks run, and wake everything waiting for that.
    pub(crate) fn open(&self) {
        self.open.store(true, SeqCst);
        self.opened.notify_waiters();
    }

    /// Stop new callbacks from starting. Those in flight finish; await [`Self::drained`].
    pub(crate) fn close(&self) {
        self.open.store(false, SeqCst);
    }

    /// Start a callback if the gate is open.
    pub(crate) fn try_enter(&self) -> Option<InFlight<'_>> {
        self.in_flight.fetch_add(1, SeqCst);
        if self.open.load(SeqCst) {
            Some(InFlight { gate: self })
        } else {
            self.exit(false);
            None
        }
    }

    fn exit(&self, worked: bool) {
        if worked {
            self.work_done.fetch_add(1, SeqCst);
            if self.work_watchers.load(SeqCst) > 0 {
                self.worked.notify_waiters();
            }
        }
        if self.in_flight.fetch_sub(1, SeqCst) == 1 && !self.open.load(SeqCst) {
            self.drained.notify_waiters();
        }
    }

    /// Resolves once the gate is open.
    pub(crate) async fn opened(&self) {
        loop {
            let notified = self.opened.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_open() {
                return;
            }
            notified.await;
        }
    }

    /// Resolves once the gate is closed and no callback is in flight.
    pub(crate) async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.is_open() && self.in_flight.load(SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// How many units of work have finished so far.
    pub(crate) fn work_done(&self) -> u64 {
        self.work_done.load(SeqCst)
    }

    /// Resolves once more than `seen` units of work have finished.
    pub(crate) async fn worked_since(&self, seen: u64) {
        struct Watching<'a>(&'a AtomicUsize);
        impl Drop for Watching<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, SeqCst);
            }
        }
        // Registered before checking `work_done`: a worker that finishes after our check
        // sees the watcher and notifies (both sides are SeqCst).
        self.work_watchers.fetch_add(1, SeqCst);
        let _watching = Watching(&self.work_watchers);
        loop {
            let notified = self.worked.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.work_done() > seen {
                return;
            }
            notified.await;
        }
    }
}

impl InFlight<'_> {
    /// End the flight and count it as work done (a callback ran, a task made progress).
    pub(crate) fn finish_with_work(self) {
        let gate = self.gate;
        std::mem::forget(self);
        gate.exit(true);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.gate.exit(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn closed_gate_refuses_entry() {
        let gate = SpinGate::default();
        assert!(gate.try_enter().is_none());
        gate.open();
        let flight = gate.try_enter();
        assert!(flight.is_some());
        gate.close();
        assert!(gate.try_enter().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn drained_waits_for_the_flight_in_progress() {
        let gate = Arc::new(SpinGate::default());
        gate.open();
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let g = Arc::clone(&gate);
        let worker = std::thread::spawn(move || {
            let flight = g.try_enter().expect("gate is open");
            started_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            flight.finish_with_work();
        });
        started_rx.await.unwrap();
        gate.close();
        let before = std::time::Instant::now();
        gate.drained().await;
        // The flight was still running when the gate closed, so drained() had to wait.
        assert!(before.elapsed() >= Duration::from_millis(20));
        assert_eq!(gate.work_done(), 1);
        worker.join().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn opened_wakes_a_waiting_task() {
        let gate = Arc::new(SpinGate::default());
        let g = Arc::clone(&gate);
        let waiter = tokio::spawn(async move { g.opened().await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        gate.open();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("opened() must resolve after open()")
            .unwrap();
    }
}
