//! The control channel's side of a Worker task: what it asks for (new entities,
//! activity listeners, sweeps of dropped entities, the end of the rclrs Worker or of the
//! executor), and when the task is done.

use super::WorkerTask;
use crate::runtime::mailbox::Control;
use std::sync::Arc;

impl WorkerTask {
    /// Returns true when the task must end.
    pub(super) fn handle_control(&mut self, control: Control) -> bool {
        match control {
            Control::Add(waitable) => self.add(waitable),
            Control::Listen(listener) => self.listeners.push(listener),
            Control::Sweep => self.sweep(),
            Control::WorkerDropped => {
                self.orphaned = true;
                self.sweep();
            }
            Control::Shutdown => return true,
        }
        self.is_done()
    }

    /// The rclrs Worker is gone, nothing of it is in use any more (its own guard
    /// condition aside, which this task itself holds) and nothing it was sent waits.
    pub(super) fn is_done(&self) -> bool {
        self.orphaned
            && self.stash.is_none()
            && self.mailbox.is_empty()
            && self.entities.iter().all(|e| e.rules.trigger)
    }

    /// Tear down every entity the user has dropped.
    pub(super) fn sweep(&mut self) {
        let mut dead = Vec::new();
        self.entities.retain(|entity| {
            let alive = entity.in_use();
            if !alive {
                dead.push(Arc::clone(entity));
            }
            alive
        });
        for entity in dead {
            entity.teardown();
        }
        self.list_entities();
    }

    /// Tell users which entities this Worker serves.
    pub(super) fn list_entities(&self) {
        let names = self
            .entities
            .iter()
            .filter(|e| !e.rules.trigger)
            .map(|e| e.name.clone())
            .collect();
        self.counters.set_entities(names);
    }
}
