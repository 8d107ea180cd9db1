//! The executor's list of its Worker tasks, and what it can tell them.
//!
//! Every Worker task (one per rclrs Worker, plus the ungated clock task) has an entry
//! here while it runs: its mailbox, so the executor can shut it down, and its mailbox
//! counters, so `spin()` can take a [`Backlog`] snapshot, the items that were already
//! waiting when it started. The entry owns the task's cell, so an idle Worker lives
//! here. A task removes its own entry when it ends (its rclrs Worker and every entity
//! on it are gone, or the executor shut down), so the list does not grow with Workers
//! that come and go.
//!
//! Once the executor shuts down, the list is closed: a Worker created after that (on a
//! node kept by another thread while the executor drops) is told to shut down as it is
//! added, so its task ends at once instead of running, on a thread of its own in the
//! dedicated mode, with nobody left to stop it.

use crate::runtime::mailbox::{Control, MailboxSender};
use crate::runtime::task_counters::TaskCounters;
use crate::stats::worker_counters::WorkerCounters;
use rclrs::RclrsError;
use std::sync::{Arc, Mutex};

/// One Worker task, as the executor sees it.
pub(crate) struct WorkerEntry {
    /// Its callbacks wait for the spin gate (false only for the clock task).
    pub(crate) gated: bool,
    pub(crate) mailbox: MailboxSender,
    pub(crate) counters: Arc<WorkerCounters>,
    /// The task's cell, owned here while the task runs (only held, never read).
    #[allow(dead_code)]
    pub(crate) cell: Arc<dyn Send + Sync>,
}

#[derive(Default)]
pub(crate) struct WorkerList {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    running: Vec<Arc<WorkerEntry>>,
    /// The executor shut down: no Worker task joins any more.
    closed: bool,
}

/// The gated Workers' mailbox positions when a spin started, and the async tasks
/// spawned by then: the spin's backlog is processed once every Worker has finished
/// every item sent before that moment and every entity deferred to this pass, and
/// every one of those tasks has been polled.
pub(crate) struct Backlog {
    mailboxes: Vec<(Arc<WorkerCounters>, u64)>,
    tasks: Option<(Arc<TaskCounters>, u64)>,
}

impl WorkerList {
    /// List a new Worker task, or tell it to shut down if the executor did already.
    pub(crate) fn add(&self, entry: Arc<WorkerEntry>) {
        let mut entries = self.entries.lock().unwrap();
        if entries.closed {
            entry.mailbox.send_control(Control::Shutdown);
        } else {
            entries.running.push(entry);
        }
    }

    pub(crate) fn remove(&self, entry: &Arc<WorkerEntry>) {
        self.entries
            .lock()
            .unwrap()
            .running
            .retain(|e| !Arc::ptr_eq(e, entry));
    }

    /// `read` of each gated Worker's counters, under the list's lock.
    fn read_gated<T>(&self, read: impl FnMut(&Arc<WorkerCounters>) -> T) -> Vec<T> {
        let entries = self.entries.lock().unwrap();
        let gated = entries.running.iter().filter(|e| e.gated);
        gated.map(|e| &e.counters).map(read).collect()
    }

    /// How many callbacks each gated Worker has run so far.
    pub(crate) fn callback_marks(&self) -> CallbackMarks {
        CallbackMarks(self.read_gated(|m| (Arc::clone(m), m.callbacks_run())))
    }

    /// The errors of a spin that timed out: one `Timeout` per gated Worker (at least
    /// one), as the basic executor reports one per wait-set runner, each telling whether
    /// that Worker ran a callback after `marks` (see `error::timed_out`). With `marks`
    /// `None` every Worker counts as busy.
    pub(crate) fn timeouts(&self, marks: Option<&CallbackMarks>) -> Vec<RclrsError> {
        let mut errors = self.read_gated(|mailbox| {
            let ran = mailbox.callbacks_run();
            let idle = marks.is_some_and(|marks| {
                marks
                    .0
                    .iter()
                    .find(|(counters, _)| Arc::ptr_eq(counters, mailbox))
                    .is_none_or(|(_, mark)| ran == *mark)
            });
            crate::error::timed_out(idle)
        });
        if errors.is_empty() {
            errors.push(crate::error::timed_out(marks.is_some()));
        }
        errors
    }

    /// What is waiting for the gated Workers right now (in their mailboxes, or deferred
    /// by the last single pass to the next one), and the `tasks` not polled yet.
    pub(crate) fn backlog(&self, tasks: &Arc<TaskCounters>) -> Backlog {
        let targets = self.read_gated(|m| Some((Arc::clone(m), m.backlog_target()?)));
        let mailboxes = targets.into_iter().flatten().collect();
        let tasks = tasks
            .backlog_target()
            .map(|spawned| (Arc::clone(tasks), spawned));
        Backlog { mailboxes, tasks }
    }

    /// Tell every Worker task to tear down, and forget them; close the list.
    pub(crate) fn shut_down_all(&self) {
        let mut entries = self.entries.lock().unwrap();
        entries.closed = true;
        let running = std::mem::take(&mut entries.running);
        drop(entries);
        // Each is queued for its shutdown turn before its entry (its cell's owner) goes.
        for entry in &running {
            entry.mailbox.send_control(Control::Shutdown);
        }
        drop(running);
    }
}

/// How many callbacks each gated Worker had run at one moment of a spin.
pub(crate) struct CallbackMarks(Vec<(Arc<WorkerCounters>, u64)>);

impl Backlog {
    /// Every item of the snapshot is finished.
    pub(crate) fn is_processed(&self) -> bool {
        self.mailboxes
            .iter()
            .all(|(mailbox, sent)| mailbox.finished() >= *sent)
            && self
                .tasks
                .as_ref()
                .is_none_or(|(tasks, spawned)| tasks.first_polled() >= *spawned)
    }

    /// Items finished and tasks polled so far, summed over the snapshot (to see
    /// progress).
    pub(crate) fn finished(&self) -> u64 {
        let mailboxes: u64 = self.mailboxes.iter().map(|(m, _)| m.finished()).sum();
        mailboxes
            + self
                .tasks
                .as_ref()
                .map_or(0, |(tasks, _)| tasks.first_polled())
    }
}
