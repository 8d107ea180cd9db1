//! Handing work to another pool thread when this one goes idle.
//!
//! # Why
//!
//! The work a Worker's turn defers to its end (`turn::at_turn_end`: a fan-out's messages
//! for the Workers of other threads) wakes those threads. Woken while the waking thread
//! still runs, a thread often lands on that thread's core and preempts it at once; the
//! waking thread is switched back in later only to park. On a 2-core KVM host, in the
//! fan-out at 1 kHz (one message a millisecond for 8 callbacks over 2 Workers), the hub's
//! thread was preempted so for every other message, and the two threads spent about ten
//! microseconds more CPU per message than when the woken thread waited for the waking
//! one to park (`docs/performance-notes.md`, "Fan-out").
//!
//! # Protocol
//!
//! On a pool thread, the end of a turn puts its deferred work in a per-thread list
//! ([`later`]) instead of running it. The list runs at the first of:
//! - **the thread's park** (the Worker thread calls [`ThreadWake::parking`] once its run
//!   queue is empty): the thread goes idle, so the threads its work wakes need not
//!   preempt it. Before each
//!   send into the mailbox of a Worker placed on another pool thread that is parked,
//!   that thread is switched to SCHED_BATCH ([`ThreadWake::quiet`]), a policy whose
//!   wake-ups do not preempt a running task; it switches itself back to SCHED_OTHER as it
//!   unparks ([`ThreadWake::unparked`]), before it runs anything. So it starts when the
//!   waking thread parks, a few microseconds later, or on another core if one is free;
//! - **anything else running on the thread first**, the next Worker's turn ([`flush`]):
//!   the list then runs with plain wake-ups, so work handed over never waits for a busy
//!   thread.
//!
//! Off the pool threads (dedicated Worker threads, a runtime the user passed in) the
//! deferred work runs at the turn's end with plain wake-ups, as does work handed over
//! to a Worker on the same thread or on a dedicated thread.
//!
//! Only threads that started under SCHED_OTHER are ever switched (never one the user put
//! under a real-time policy), only on Linux, and a refused switch is ignored: the
//! wake-up is then a plain one. Two threads switch one thread under its `switching`
//! lock, so a thread that unparks while another quiets it is switched back at the
//! latest when it next unparks.

use crate::ffi;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

type Work = Box<dyn FnOnce()>;

thread_local! {
    /// The pool thread this is (`None` on any other thread).
    static POOL_INDEX: Cell<Option<usize>> = const { Cell::new(None) };
    /// Work deferred by turns that ended on this pool thread, not yet run.
    static PENDING: RefCell<Vec<Work>> = const { RefCell::new(Vec::new()) };
    /// Whether `PENDING` may hold something (read before every turn).
    static ANY_PENDING: Cell<bool> = const { Cell::new(false) };
    /// True while this thread runs its pending work from its park hook.
    static PARKING: Cell<bool> = const { Cell::new(false) };
}

/// Run `work` when this pool thread parks or runs something else; at once on any other
/// thread.
pub(crate) fn later(work: Work) {
    if POOL_INDEX.with(Cell::get).is_none() {
        work();
    } else {
        PENDING.with(|pending| pending.borrow_mut().push(work));
        ANY_PENDING.with(|any| any.set(true));
    }
}

/// Whether a Worker placed on pool thread `index` should be woken quietly from here:
/// this thread is parking, and `index` is another pool thread.
pub(crate) fn wakes_quietly(index: usize) -> bool {
    PARKING.with(Cell::get) && POOL_INDEX.with(Cell::get).is_some_and(|own| own != index)
}

/// Run the pending work now: with plain wake-ups when something else runs on this
/// thread, quietly from its park hook.
#[inline]
pub(crate) fn flush() {
    if ANY_PENDING.with(|any| any.replace(false)) {
        run_pending();
    }
}

#[inline(never)]
fn run_pending() {
    // Work may defer more work (it then runs at once: it runs outside any turn).
    for work in PENDING.with(take_queued).into_iter().flatten() {
        work();
    }
}

/// What a queue of work holds, taken out of it; `None` when it is empty (most calls, once
/// a message), which leaves the empty queue where it is.
pub(crate) fn take_queued(queue: &RefCell<Vec<Work>>) -> Option<Vec<Work>> {
    let mut queue = queue.borrow_mut();
    (!queue.is_empty()).then(|| std::mem::take(&mut *queue))
}

/// One pool thread's sleep, as the other pool threads see it.
#[derive(Default)]
pub(crate) struct ThreadWake {
    /// The thread's kernel id once it runs; 0 if it started under another policy than
    /// SCHED_OTHER (it is then never switched).
    tid: AtomicI32,
    parked: AtomicBool,
    /// The thread is under SCHED_BATCH for a quiet wake-up (changed under `switching`).
    quieted: AtomicBool,
    switching: Mutex<()>,
}

impl ThreadWake {
    /// On the pool thread `index`, as it starts.
    pub(crate) fn started(&self, index: usize) {
        POOL_INDEX.with(|own| own.set(Some(index)));
        if let Some(tid) = ffi::normal_thread_id() {
            self.tid.store(tid, Ordering::Relaxed);
        }
    }

    /// On the pool thread, once it stopped (the executor is being dropped): the work
    /// still pending is dropped here, and what is deferred from now on runs at once; the
    /// thread's id is forgotten, so a later thread with the same id is never switched.
    pub(crate) fn stopped(&self) {
        self.tid.store(0, Ordering::Relaxed);
        POOL_INDEX.with(|own| own.set(None));
        drop(PENDING.with(|pending| std::mem::take(&mut *pending.borrow_mut())));
    }

    /// The thread is about to park (unless the work run here gives it a turn).
    pub(crate) fn parking(&self) {
        self.parked.store(true, Ordering::SeqCst);
        PARKING.with(|parking| parking.set(true));
        flush();
        PARKING.with(|parking| parking.set(false));
    }

    /// The thread unparked, before it runs anything.
    pub(crate) fn unparked(&self) {
        self.parked.store(false, Ordering::SeqCst);
        if self.quieted.load(Ordering::SeqCst) {
            let _switching = self.switching.lock().unwrap_or_else(|e| e.into_inner());
            if self.quieted.swap(false, Ordering::SeqCst) {
                ffi::set_quiet(self.tid.load(Ordering::Relaxed), false);
            }
        }
    }

    /// About to wake this thread from another one that is parking: if it is parked, let
    /// its wake-up wait for the waking thread instead of preempting it.
    pub(crate) fn quiet(&self) {
        let tid = self.tid.load(Ordering::Relaxed);
        if tid == 0 || !self.parked.load(Ordering::SeqCst) || self.quieted.load(Ordering::SeqCst) {
            return;
        }
        let _switching = self.switching.lock().unwrap_or_else(|e| e.into_inner());
        if self.parked.load(Ordering::SeqCst)
            && !self.quieted.load(Ordering::SeqCst)
            && ffi::set_quiet(tid, true)
        {
            self.quieted.store(true, Ordering::SeqCst);
        }
    }
}
