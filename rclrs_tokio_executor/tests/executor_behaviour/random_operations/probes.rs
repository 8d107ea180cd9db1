//! What the sequences' callbacks share: the observer that records what they see, and the
//! probes of Workers and subscriptions.

use super::*;

/// What callbacks see and report, shared with all of them.
#[derive(Default)]
pub(super) struct Observer {
    pub(super) spinning: AtomicBool,
    /// Set by the sequence: the next subscription callback calls `halt_spinning`.
    pub(super) halt_next: AtomicBool,
    pub(super) commands: Mutex<Option<Arc<ExecutorCommands>>>,
    pub(super) violations: Mutex<Vec<String>>,
}

impl Observer {
    pub(super) fn violated(&self, what: String) {
        self.violations.lock().unwrap().push(what);
    }

    /// Every callback starts here: it must run inside a spin.
    pub(super) fn ran(&self, what: &str) {
        if !self.spinning.load(Ordering::SeqCst) {
            self.violated(format!("{what} ran outside a spin"));
        }
    }

    pub(super) fn halt_if_asked(&self) {
        if self.halt_next.swap(false, Ordering::SeqCst) {
            if let Some(commands) = self.commands.lock().unwrap().as_ref() {
                commands.halt_spinning();
            }
        }
    }
}

/// One callback at a time on a Worker: held while a callback of that Worker runs.
pub(super) struct Exclusive<'a>(&'a AtomicUsize);

impl<'a> Exclusive<'a> {
    pub(super) fn enter(busy: &'a AtomicUsize, observer: &Observer) -> Self {
        if busy.fetch_add(1, Ordering::SeqCst) != 0 {
            observer.violated("two callbacks of one Worker ran at once".into());
        }
        Exclusive(busy)
    }
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(super) struct ProbeWorker {
    pub(super) worker: Worker<()>,
    pub(super) busy: Arc<AtomicUsize>,
    /// Jobs sent with `Worker::run`, and jobs run (each checks its turn).
    pub(super) jobs_sent: usize,
    pub(super) jobs_run: Arc<AtomicUsize>,
}

pub(super) struct ProbeSubscription {
    pub(super) id: usize,
    pub(super) topic: usize,
    /// The last message heard (-1 before the first).
    pub(super) last: Arc<AtomicI64>,
    pub(super) dropped: Arc<AtomicBool>,
    /// Asks the next callback to drop the subscription's handle from inside.
    pub(super) drop_inside: Arc<AtomicBool>,
    pub(super) handle: Arc<Mutex<Option<Box<dyn Any + Send>>>>,
}

impl ProbeSubscription {
    pub(super) fn is_live(&self) -> bool {
        !self.dropped.load(Ordering::SeqCst)
    }
}
