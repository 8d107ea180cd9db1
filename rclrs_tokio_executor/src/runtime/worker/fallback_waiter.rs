//! The fallback waiter: an rcl wait set on its own thread for the primitives of one
//! Worker that have no push path (QoS events, the node's graph guard condition once
//! someone listens for graph changes, anything whose push registration failed), so that
//! no waitable is ever silently ignored. A Worker starts it with its first such
//! primitive; an ordinary process has none.
//!
//! # Protocol
//!
//! The waiter owns an rclrs `WaitSet` holding those primitives plus the Worker's rclrs
//! guard condition, which rclrs triggers whenever it adds an entity, sends a payload
//! task, or drops an entity. When `rcl_wait` returns:
//! - a ready guard condition sends a `Sweep` to the Worker's control channel (an entity
//!   may have been dropped) and makes the waiter pick up new primitives;
//! - a ready primitive needs the Worker's payload, which the Worker task owns. The
//!   waiter puts a loan request into the Worker's mailbox and blocks until the task,
//!   taking that request in mailbox order and only while the spin gate is open, lends
//!   the payload. The waiter runs the ready primitives with it and hands it back, and
//!   the task counts the whole loan as one callback in flight.
//!
//! A primitive whose callback panics is contained like a push-driven one: the panic is
//! counted in the executor's stats (the first one per waiter is logged) and the waiter
//! keeps waiting.
//!
//! So fallback primitives keep every guarantee of push-driven ones: FIFO with the
//! Worker's other callbacks, mutually exclusive with them, and only while spinning.
//! While the executor is not spinning the waiter blocks on the loan, not on a timer, so
//! it uses no CPU.

use crate::ffi;
use crate::runtime::{
    entity::rules_of,
    mailbox::{Control, LentPayload, MailItem, MailboxSender, PayloadLoan},
    panics::log_panic,
};
use crate::stats::ExecutorStats;
use rclrs::{
    log_error, Context, GuardCondition, RclPrimitive, RclrsError, ReadyKind, WaitSet, Waitable,
};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    mpsc, Arc,
};

pub(crate) struct FallbackWaiter {
    new_primitives: mpsc::Sender<Waitable>,
    stop: Arc<AtomicBool>,
    guard_condition: Arc<GuardCondition>,
}

impl FallbackWaiter {
    /// Start the waiter's thread, named `<executor thread name>-fallback`.
    pub(crate) fn start(
        executor_thread_name: &str,
        context: &Context,
        guard_condition: Arc<GuardCondition>,
        mailbox: MailboxSender,
        stats: ExecutorStats,
        initial: Vec<Waitable>,
    ) -> Result<(Self, std::thread::JoinHandle<()>), RclrsError> {
        let mut wait_set = WaitSet::new(context)?;
        wait_set.add(initial)?;
        let (new_primitives, incoming) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("{executor_thread_name}-fallback"))
            .spawn(move || {
                let waiter = Waiter {
                    incoming,
                    stop: thread_stop,
                    mailbox,
                    stats,
                    logged_a_panic: false,
                };
                waiter.run(wait_set)
            })
            .map_err(|err| {
                log_error!(
                    "rclrs_tokio_executor",
                    "cannot spawn the fallback waiter: {err}"
                );
                RclrsError::RclError {
                    code: rclrs::RclReturnCode::Error,
                    msg: None,
                }
            })?;
        let waiter = Self {
            new_primitives,
            stop,
            guard_condition,
        };
        Ok((waiter, thread))
    }

    pub(crate) fn add(&self, waitable: Waitable) {
        if self.new_primitives.send(waitable).is_ok() {
            let _ = self.guard_condition.trigger();
        }
    }
}

impl Drop for FallbackWaiter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.guard_condition.trigger();
    }
}

/// What the waiter's thread owns besides its wait set.
struct Waiter {
    incoming: mpsc::Receiver<Waitable>,
    stop: Arc<AtomicBool>,
    mailbox: MailboxSender,
    stats: ExecutorStats,
    logged_a_panic: bool,
}

impl Waiter {
    fn run(mut self, mut wait_set: WaitSet) {
        while !self.stop.load(Ordering::SeqCst) {
            let added: Vec<Waitable> = self.incoming.try_iter().collect();
            if !added.is_empty() {
                if let Err(err) = wait_set.add(added) {
                    log_error!("rclrs_tokio_executor", "fallback waiter cannot add: {err}");
                }
            }
            let mut loan: Option<LentPayload> = None;
            let mut gone = false;
            let result = wait_set.wait(None, |ready, primitive| {
                if rules_of(primitive.kind()).trigger {
                    // A Worker's guard condition (an entity may be gone) or rcl's graph
                    // guard condition (its rclrs callback wakes graph queries).
                    if let Err(err) = ffi::execute_guard_condition(primitive, ready) {
                        log_error!("rclrs_tokio_executor", "guard condition failed: {err}");
                    }
                    self.mailbox.send_control(Control::Sweep);
                    return Ok(());
                }
                if loan.is_none() && !gone {
                    loan = borrow_payload(&self.mailbox);
                    gone = loan.is_none();
                }
                if let Some(lent) = loan.as_mut() {
                    self.execute(primitive, ready, lent);
                }
                Ok(())
            });
            // Hand the payload back before waiting again.
            drop(loan);
            if let Err(err) = result {
                log_error!("rclrs_tokio_executor", "fallback wait failed: {err}");
                return;
            }
            if gone {
                // The Worker task is gone: the executor was dropped.
                return;
            }
        }
    }

    /// Run one ready primitive, containing a panic of its callback.
    fn execute(
        &mut self,
        primitive: &mut dyn RclPrimitive,
        ready: ReadyKind,
        lent: &mut LentPayload,
    ) {
        let kind = primitive.kind();
        let ran = catch_unwind(AssertUnwindSafe(|| {
            ffi::execute_primitive(primitive, ready, lent.payload_mut())
        }));
        match ran {
            Ok(Ok(())) => {}
            Ok(Err(err)) => log_error!("rclrs_tokio_executor", "fallback primitive failed: {err}"),
            Err(panic) => {
                let entity = rules_of(kind).log_name;
                self.stats.record_panic(entity);
                if !std::mem::replace(&mut self.logged_a_panic, true) {
                    log_panic(
                        &format!(
                            "the callback of {entity} (further panics on this Worker's \
                             fallback waiter are counted in ExecutorStats, not logged)"
                        ),
                        panic.as_ref(),
                    );
                }
            }
        }
    }
}

/// Ask the Worker for its payload; `None` if the Worker task is gone.
fn borrow_payload(mailbox: &MailboxSender) -> Option<LentPayload> {
    let (lend, lent) = mpsc::sync_channel(1);
    mailbox.send(MailItem::Loan(PayloadLoan { lend }));
    lent.recv().ok()
}
