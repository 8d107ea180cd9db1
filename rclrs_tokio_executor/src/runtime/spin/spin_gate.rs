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
//! # Passes
//!
//! Each opening starts a new *pass* (a number that only grows). A spin that asks for one
//! unit of work (`spin_once`, or a zero timeout) opens the gate in *single-pass* mode:
//! a Worker then executes each ready entity at most once in that pass and defers the
//! rest of its arrivals to the next pass, as the basic executor's single wait does.
//!
//! # Ending a spin from inside
//!
//! A spin can end because of something a callback did: it called `halt_spinning`, or it
//! resolved the promise the spin waits for. The spin future hears of it only once its
//! thread runs, and a Worker would go on starting queued callbacks meanwhile. So the
//! gate *admits* a callback only while it is open, rclrs's halt flag is clear, and the
//! current pass has not been ended ([`SpinGate::end_pass`], which the promise's waker
//! calls when the promise resolves). The entrant reads all three itself, and a Worker's
//! drain asks again after every callback ([`SpinGate::admits`]), so the callback that
//! halted or resolved is the last to start. A halt flag that is still set
//! when the next spin begins ends that spin too, as it does for the basic executor; an
//! ended pass never ends a later one.
//!
//! # Progress
//!
//! `spin()` decides when to stop from what the Workers did: callbacks run (`work_done`)
//! and mailbox items finished (counted per Worker, see `workers.rs`). Workers announce
//! both through one notification, but only while a spin watches ([`SpinGate::watch`]),
//! so the hot path pays one atomic load when nobody does.
//!
//! Nothing here polls: async tasks waiting for the gate to open await
//! [`SpinGate::opened`], Workers leave a waker ([`SpinGate::wake_when_open`], checked
//! again after it is left), `spin()` awaits [`SpinGate::drained`], and every
//! notification uses the enable-then-check pattern of `tokio::sync::Notify` so no
//! wake-up is lost between checking the condition and starting to wait.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Waker;
use tokio::sync::{futures::Notified, Notify};

/// Opens while `spin()` runs; counts the callbacks in flight.
#[derive(Default)]
pub(crate) struct SpinGate {
    open: AtomicBool,
    /// Incremented by every [`SpinGate::open`].
    pass: AtomicU64,
    single_pass: AtomicBool,
    /// rclrs's halt flag (the same for every spin of an executor), once a spin gave it.
    halt: OnceLock<Arc<AtomicBool>>,
    /// The last pass ended from inside (see the module docs); 0 for none.
    ended_pass: AtomicU64,
    in_flight: AtomicUsize,
    /// Units of work (a callback, an async task poll that finished) done since creation.
    work_done: AtomicU64,
    /// How many spins watch for progress; progress is announced only then.
    watchers: AtomicUsize,
    opened: Notify,
    /// Workers to wake at the next opening.
    waiting: Mutex<Vec<Waker>>,
    drained: Notify,
    progress: Notify,
}

/// Proof that a callback may run; leaving the scope ends the callback's flight.
pub(crate) struct InFlight<'a> {
    gate: &'a SpinGate,
}

/// A callback's flight held across a Worker's turns (a payload lent to the fallback
/// waiter): ended only by [`SpinGate::finish_detached`].
#[must_use]
pub(crate) struct DetachedFlight(());

/// A spin's registration for progress notifications; see [`SpinGate::watch`].
pub(crate) struct Watching<'a> {
    gate: &'a SpinGate,
}

impl SpinGate {
    pub(crate) fn is_open(&self) -> bool {
        self.open.load(SeqCst)
    }

    /// The current pass (see the module docs).
    pub(crate) fn pass(&self) -> u64 {
        self.pass.load(SeqCst)
    }

    /// Whether the current pass runs each ready entity at most once.
    pub(crate) fn is_single_pass(&self) -> bool {
        self.single_pass.load(SeqCst)
    }

    /// Whether a callback may start now: open, not halted, and the pass not ended.
    pub(crate) fn admits(&self) -> bool {
        self.open.load(SeqCst)
            && !self.halt.get().is_some_and(|halt| halt.load(SeqCst))
            && self.ended_pass.load(SeqCst) != self.pass.load(SeqCst)
    }

    /// Read rclrs's halt flag from now on (only the first flag given counts: an
    /// executor has one).
    pub(crate) fn watch_halt(&self, halt: &Arc<AtomicBool>) {
        let _ = self.halt.set(Arc::clone(halt));
    }

    /// End `pass` from inside: no callback starts in it any more.
    pub(crate) fn end_pass(&self, pass: u64) {
        self.ended_pass.store(pass, SeqCst);
    }

    /// Start a pass and let callbacks run; wake everything waiting for that. Returns
    /// the new pass.
    pub(crate) fn open(&self, single_pass: bool) -> u64 {
        self.single_pass.store(single_pass, SeqCst);
        let pass = self.pass.fetch_add(1, SeqCst) + 1;
        self.open.store(true, SeqCst);
        self.opened.notify_waiters();
        let waiting = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
        waiting.into_iter().for_each(Waker::wake);
        pass
    }

    /// Wake `waker` at the next opening of the gate. A Worker that found the gate not
    /// admitting leaves its waker, then checks again: an opening in between either
    /// finds the waker or is seen by the check.
    pub(crate) fn wake_when_open(&self, waker: &Waker) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if !waiting.iter().any(|w| w.will_wake(waker)) {
            waiting.push(waker.clone());
        }
    }

    /// Stop new callbacks from starting. Those in flight finish; await [`Self::drained`].
    pub(crate) fn close(&self) {
        self.open.store(false, SeqCst);
        // Nothing may be in flight: then nobody else will announce the drain.
        if self.in_flight.load(SeqCst) == 0 {
            self.drained.notify_waiters();
        }
    }

    /// Start a callback if the gate admits one.
    pub(crate) fn try_enter(&self) -> Option<InFlight<'_>> {
        self.in_flight.fetch_add(1, SeqCst);
        if self.admits() {
            Some(InFlight { gate: self })
        } else {
            self.exit(false);
            None
        }
    }

    fn exit(&self, worked: bool) {
        if worked {
            self.work_done.fetch_add(1, SeqCst);
            self.progressed();
        }
        if self.in_flight.fetch_sub(1, SeqCst) == 1 && !self.open.load(SeqCst) {
            self.drained.notify_waiters();
        }
    }

    /// Keep `flight` beyond the scope that entered it.
    pub(crate) fn detach(&self, flight: InFlight<'_>) -> DetachedFlight {
        std::mem::forget(flight);
        DetachedFlight(())
    }

    /// End a detached flight, as work done if `worked`.
    pub(crate) fn finish_detached(&self, flight: DetachedFlight, worked: bool) {
        let DetachedFlight(()) = flight;
        self.exit(worked);
        if !worked {
            self.progressed();
        }
    }

    /// Announce progress (work done, a mailbox item finished) to watching spins.
    pub(crate) fn progressed(&self) {
        if self.watchers.load(SeqCst) > 0 {
            self.progress.notify_waiters();
        }
    }

    /// Resolves once the gate admits callbacks.
    pub(crate) async fn opened(&self) {
        loop {
            let notified = self.opened.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.admits() {
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

    /// Whether no callback is in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.in_flight.load(SeqCst) == 0
    }

    /// How many units of work have finished so far.
    pub(crate) fn work_done(&self) -> u64 {
        self.work_done.load(SeqCst)
    }

    /// Start receiving progress notifications. Register *before* checking the state
    /// you wait on: progress made after this call is announced (both sides are SeqCst).
    pub(crate) fn watch(&self) -> Watching<'_> {
        self.watchers.fetch_add(1, SeqCst);
        Watching { gate: self }
    }
}

impl<'a> Watching<'a> {
    /// The next progress notification; `enable` it before checking the state.
    pub(crate) fn next(&self) -> Notified<'a> {
        self.gate.progress.notified()
    }
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        self.gate.watchers.fetch_sub(1, SeqCst);
    }
}

impl InFlight<'_> {
    /// End the flight and count it as work done (a callback ran; an async task never
    /// counts, see `async_tasks`).
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
        gate.open(false);
        let flight = gate.try_enter();
        assert!(flight.is_some());
        gate.close();
        assert!(gate.try_enter().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn drained_waits_for_the_flight_in_progress() {
        let gate = Arc::new(SpinGate::default());
        gate.open(false);
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
        gate.open(false);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("opened() must resolve after open()")
            .unwrap();
    }
}
