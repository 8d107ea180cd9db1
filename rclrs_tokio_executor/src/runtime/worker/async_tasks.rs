//! Async tasks rclrs hands to the executor (`ExecutorCommands::run`/`query`, and the
//! futures node-level callbacks return), gated by the spin gate.
//!
//! A task is polled only while the gate is open, and each poll counts as a callback in
//! flight, so `spin()` never returns while a task is being polled.
//!
//! Node-level subscription and service callbacks reach us as one future per message.
//! Spawning a Tokio task for each would cost an allocation and a scheduler round trip
//! per message, so while a Worker runs a primitive, futures added on that thread are
//! collected instead ([`InlineScope`]) and polled once right after the primitive
//! returns, in order, on the Worker's task. Most finish in that first poll (the
//! callback body is synchronous); only those still pending become Tokio tasks.
//!
//! [`TaskCounters`](crate::runtime::task_counters::TaskCounters) count the tasks spawned and those polled once: a spin's backlog
//! includes the tasks spawned before it began, so a `spin_once` polls every one of
//! them, as the basic executor runs its ready tasks before it waits. A task is not the
//! unit of work a `spin_once` ends on, though: the basic executor runs tasks beside its
//! wait set, and only what the wait set finds ready ends a `spin_once` (with nothing
//! else ready, it waits out its timeout and reports it).
//!
//! A spawned task polls its future through a [`waker_slot`], so that a waker the future
//! left where it waited cannot keep the runtime (and its descriptors) alive after the
//! task is gone.

mod waker_slot;

use crate::runtime::task_counters::{Alive, Unpolled};
use crate::runtime::{entity::Entity, panics::log_panic, shared::ExecutorShared};
use futures::future::BoxFuture;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context, Poll};
use waker_slot::WakerSlot;

/// The futures added on a thread inside its open inline scopes, oldest first. A scope
/// owns the suffix that was added after it began (scopes nest: a future's first poll
/// may run a primitive).
#[derive(Default)]
struct Inline {
    scopes: Cell<usize>,
    collected: RefCell<Vec<BoxFuture<'static, ()>>>,
}

thread_local! {
    static INLINE: Inline = const {
        Inline {
            scopes: Cell::new(0),
            collected: RefCell::new(Vec::new()),
        }
    };
}

/// Spawn `task` on the executor's runtime, polled only while spinning; or, inside an
/// [`InlineScope`] on this thread, queue it for an inline first poll.
pub(crate) fn add_async_task(shared: &Arc<ExecutorShared>, task: BoxFuture<'static, ()>) {
    let task = INLINE.with(|inline| {
        if inline.scopes.get() == 0 {
            return Some(task);
        }
        inline.collected.borrow_mut().push(task);
        None
    });
    if let Some(task) = task {
        spawn_gated(shared, task);
    }
}

/// Run `task` on the runtime, polling it only while the spin gate is open.
pub(crate) fn spawn_gated(shared: &Arc<ExecutorShared>, mut task: BoxFuture<'static, ()>) {
    let gated_shared = Arc::clone(shared);
    let mut unpolled = Some(Unpolled::new(&shared.tasks));
    let alive = Alive(Arc::clone(&shared.tasks));
    shared.threads.spawn(async move {
        let _alive = alive;
        let shared = gated_shared;
        let (slot, _release) = WakerSlot::new();
        loop {
            shared.gate.opened().await;
            let finished = std::future::poll_fn(|cx| {
                match shared.gate.try_enter() {
                    // The gate closed since we woke: wait for it to open again.
                    None => Poll::Ready(false),
                    Some(flight) => {
                        let poll = slot
                            .poll_through(cx, |cx| poll_contained(&mut task, cx, &shared, None));
                        // Counted before the flight ends, which tells a waiting spin.
                        let first_poll = unpolled.take().is_some();
                        // Not the unit of work a `spin_once` waits for: the basic
                        // executor runs its tasks beside its wait set, which alone ends
                        // the spin. Progress on the backlog is still announced.
                        drop(flight);
                        if first_poll || poll.is_ready() {
                            shared.gate.progressed();
                        }
                        poll.map(|_| true)
                    }
                }
            })
            .await;
            if finished {
                return;
            }
        }
    });
}

/// Poll a task, containing a panic: a panicking task is counted (for `entity`, when it
/// is a callback's future) and logged, and counts as finished (`Ready(true)`).
fn poll_contained(
    task: &mut BoxFuture<'static, ()>,
    cx: &mut Context<'_>,
    shared: &ExecutorShared,
    entity: Option<&Entity>,
) -> Poll<bool> {
    match catch_unwind(AssertUnwindSafe(|| task.as_mut().poll(cx))) {
        Ok(poll) => poll.map(|()| false),
        Err(panic) => {
            match entity {
                Some(entity) => entity.contain_panic(&shared.stats, &*panic),
                None => {
                    shared.stats.record_panic("an async task");
                    log_panic("an async task", &*panic);
                }
            }
            Poll::Ready(true)
        }
    }
}

/// Collects the futures added on this thread while a primitive runs.
pub(crate) struct InlineScope {
    /// Where this scope's futures begin in the thread's list.
    mark: usize,
    active: bool,
}

impl InlineScope {
    pub(crate) fn begin() -> Self {
        let mark = INLINE.with(|inline| {
            inline.scopes.set(inline.scopes.get() + 1);
            inline.collected.borrow().len()
        });
        Self { mark, active: true }
    }

    /// Poll each collected future once; spawn those still pending. The caller holds an
    /// in-flight token of the spin gate, so these polls are inside the gate too. A panic
    /// in a first poll is `entity`'s (the futures are its callback's). Returns how many
    /// first polls panicked.
    pub(crate) fn finish(mut self, shared: &Arc<ExecutorShared>, entity: Option<&Entity>) -> u64 {
        self.active = false;
        let mark = self.mark;
        // Nearly always nothing was added (a Worker's callback) or one future (a
        // node-level callback's). Each is taken out before it is polled, so a poll may
        // add more (they are polled too, in order).
        let next = || {
            INLINE.with(|inline| {
                let mut list = inline.collected.borrow_mut();
                (list.len() > mark).then(|| list.remove(mark))
            })
        };
        let first = INLINE.with(|inline| {
            inline.scopes.set(inline.scopes.get() - 1);
            inline.collected.borrow().len() > mark
        });
        if !first {
            return 0;
        }
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut panics = 0;
        while let Some(mut task) = next() {
            match poll_contained(&mut task, &mut cx, shared, entity) {
                Poll::Ready(panicked) => panics += u64::from(panicked),
                // The spawned task polls it again right away with a real waker, so a
                // wake-up registered with the no-op waker cannot be lost.
                Poll::Pending => spawn_gated(shared, task),
            }
        }
        panics
    }
}

impl Drop for InlineScope {
    fn drop(&mut self) {
        // Active only if `finish` was skipped (a panic unwound through the scope): the
        // collected futures are dropped unpolled.
        if self.active {
            let mark = self.mark;
            let dropped = INLINE.with(|inline| {
                inline.scopes.set(inline.scopes.get() - 1);
                let mut list = inline.collected.borrow_mut();
                let keep = list.len().min(mark);
                list.split_off(keep)
            });
            drop(dropped);
        }
    }
}
