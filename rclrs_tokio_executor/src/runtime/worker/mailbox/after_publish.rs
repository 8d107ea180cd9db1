//! Notifications raised inside a publish wait for the publish to return.
//!
//! A publisher in the same process delivers inside `rcl_publish`, on its own thread,
//! and rmw calls the subscription's push callback there while it still holds the
//! reader's locks. Sending the entity into its Worker's mailbox at once wakes the
//! Worker's thread in the middle of that publish: often on the publisher's own core,
//! where it preempts the publisher and then blocks on the reader's lock the publisher
//! still holds, so the publisher has to be scheduled again to let it go (two more
//! context switches). And a publish that reaches several subscriptions of one Worker
//! (a fan-out of separate subscriptions) can wake that Worker once per subscription,
//! as the Worker finishes each message before the next delivery.
//!
//! So a push callback on a thread inside a publish (`rclrs::is_publishing`, patch 0016)
//! keeps the entity in a per-thread list, and the publish's end sends the whole list
//! (`rclrs::after_publish`): each Worker is woken once, after the locks are released.
//! The entity is already marked queued (`entity.rs`), so arrivals in between coalesce
//! into it as usual. Nothing changes for deliveries on the middleware's own threads
//! (another process) or anywhere outside a publish.

use super::{MailItem, MailboxSender};
use crate::runtime::entity::Entity;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// Entities notified inside the publish in progress on this thread.
    static HELD: RefCell<Vec<(MailboxSender, Arc<Entity>)>> = const { RefCell::new(Vec::new()) };
}

/// Send `entity` into `mailbox`: at once, or when the publish in progress on this thread
/// returns.
pub(crate) fn send_entity(mailbox: &MailboxSender, entity: Arc<Entity>) {
    if !rclrs::is_publishing() {
        mailbox.send(MailItem::Entity(entity));
        return;
    }
    let mut entity = Some(entity);
    let first = HELD.try_with(|held| {
        let mut held = held.borrow_mut();
        held.extend(entity.take().map(|entity| (mailbox.clone(), entity)));
        held.len() == 1
    });
    match first {
        Ok(true) => rclrs::after_publish(send_held),
        Ok(false) => {}
        // While the thread's locals are being destroyed there is no list: send at once.
        Err(_) => {
            if let Some(entity) = entity {
                mailbox.send(MailItem::Entity(entity));
            }
        }
    }
}

/// The publish returned: send what it held, in the order it was notified. The list is
/// taken out while sending (and its allocation put back after), so nothing a send does
/// can find it borrowed.
fn send_held() {
    let Ok(mut held) = HELD.try_with(|held| std::mem::take(&mut *held.borrow_mut())) else {
        return;
    };
    for (mailbox, entity) in held.drain(..) {
        mailbox.send(MailItem::Entity(entity));
    }
    let _ = HELD.try_with(|list| {
        let mut list = list.borrow_mut();
        if list.is_empty() {
            *list = held;
        }
    });
}
