//! The end of a sequence: spin until everything sent was served, then check it.

use super::*;

impl Sequence {
    /// Spin until everything sent has been served, then check what must have happened.
    pub(super) fn finish(&mut self) {
        let deadline = Instant::now() + PATIENCE;
        let served = loop {
            self.spin(
                SpinOptions::default().timeout(Duration::from_millis(50)),
                None,
            );
            let pending = self.pending();
            if pending.is_empty() {
                break true;
            }
            if Instant::now() > deadline {
                self.observer
                    .violated(format!("still pending after {PATIENCE:?}: {pending:?}"));
                break false;
            }
        };
        for (_, fired) in &self.oneshots {
            let fired = fired.load(Ordering::SeqCst);
            if fired != 1 {
                self.observer
                    .violated(format!("a one-shot timer fired {fired} times"));
            }
        }
        if !served {
            return;
        }
        // The subscriptions made inside callbacks hear a message on each topic.
        let made = self.made_inside.lock().unwrap().len();
        let before = self.heard_inside.load(Ordering::SeqCst);
        for topic in 0..TOPICS {
            self.publish_to(topic);
        }
        let heard = Arc::clone(&self.heard_inside);
        let start = Instant::now();
        while heard.load(Ordering::SeqCst) - before < made && start.elapsed() < PATIENCE {
            self.spin(
                SpinOptions::default().timeout(Duration::from_millis(20)),
                None,
            );
        }
        let heard = heard.load(Ordering::SeqCst) - before;
        if heard < made {
            self.observer.violated(format!(
                "{heard} of {made} subscriptions made inside callbacks heard a message"
            ));
        }
    }

    /// What has not been served yet.
    pub(super) fn pending(&self) -> Vec<String> {
        let mut pending: Vec<_> = self
            .subscriptions
            .iter()
            .filter(|s| s.is_live() && self.published[s.topic] > 0)
            .filter_map(|s| {
                // A subscription that has heard nothing yet may have matched after
                // the last message of its topic.
                let last = s.last.load(Ordering::SeqCst);
                let expected = self.published[s.topic] - 1;
                (last >= 0 && last != expected)
                    .then(|| format!("subscription {} heard up to {last} of {expected}", s.id))
            })
            .collect();
        let answered = self.answered.load(Ordering::SeqCst);
        if answered != self.calls {
            pending.push(format!("{answered} of {} calls answered", self.calls));
        }
        let tasks_run = self.tasks_run.load(Ordering::SeqCst);
        if tasks_run != self.tasks {
            pending.push(format!("{tasks_run} of {} async tasks run", self.tasks));
        }
        let due = self
            .oneshots
            .iter()
            .filter(|(_, f)| f.load(Ordering::SeqCst) == 0);
        if due.clone().count() > 0 {
            pending.push(format!("{} one-shot timers not fired", due.count()));
        }
        for worker in &self.workers {
            let run = worker.jobs_run.load(Ordering::SeqCst);
            if run != worker.jobs_sent {
                pending.push(format!(
                    "{run} of {} jobs of a Worker run",
                    worker.jobs_sent
                ));
            }
        }
        let made = self.made_inside.lock().unwrap().len();
        if made != self.makers.len() {
            pending.push(format!(
                "{made} of {} subscriptions made inside",
                self.makers.len()
            ));
        }
        pending
    }
}
