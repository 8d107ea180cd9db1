//! What wakes a Worker task whose mailbox is empty: an item, a control message, a new
//! pass of the spin gate (for entities a single pass deferred), or its own timers. Alone
//! on its pool thread, the task waits for it without returning to Tokio
//! ([`solo_park`](super::solo_park)).

use super::timer_wake::wait_for_timers;
use super::{solo_park, WorkerTask};
use crate::runtime::mailbox::MailItem;
use crate::runtime::workers::Control;
use std::pin::pin;
use std::time::Instant;

/// What woke an idle Worker task.
pub(super) enum Woken {
    /// An item from the mailbox (`None`: the mailbox closed).
    Item(Option<MailItem>),
    /// A control message (`None`: the channel closed).
    Control(Option<Control>),
    /// A new pass of the spin gate began.
    NewPass,
    /// The Worker's own timers need a look.
    Timers,
}

impl WorkerTask {
    /// Wait for what wakes the idle task. The mailbox first: a Worker woken for an item
    /// then takes it without polling its control channel too (the loop's top has just
    /// emptied that; what reaches it since waits one batch, as if sent a moment later).
    /// Alone on its pool thread, the task waits without returning to Tokio (see
    /// [`solo_park`]).
    pub(super) async fn next_wake(
        &mut self,
        pass: u64,
        waiting_for_pass: bool,
        look_again: Option<Instant>,
    ) -> Woken {
        let Self {
            shared,
            mailbox,
            control,
            timer_wake,
            home,
            ..
        } = self;
        let gate = &shared.gate;
        let mut wait = pin!(async {
            tokio::select! {
                biased;
                item = mailbox.recv() => Woken::Item(item),
                control = control.recv() => Woken::Control(control),
                // Deferred entities go back into the mailbox when a new pass begins.
                _ = gate.opened_after(pass), if waiting_for_pass => Woken::NewPass,
                _ = wait_for_timers(timer_wake.as_mut(), look_again) => Woken::Timers,
            }
        });
        let solo = home
            .as_ref()
            .and_then(|home| shared.threads.wake_of(home.index));
        if let Some(wake) = solo {
            if let Some(woken) = solo_park::wait(wake, wait.as_mut(), look_again) {
                return woken;
            }
        }
        wait.await
    }
}
