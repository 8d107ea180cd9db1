//! The operations a sequence picks from, one method each.

use super::probes::Exclusive;
use super::*;

impl Sequence {
    /// A subscription, or a callback of a fan-out subscription, on the node or on a
    /// Worker.
    pub(super) fn subscribe(&mut self) -> String {
        let topic = self.rng.usize(0..TOPICS);
        let probe = ProbeSubscription {
            id: self.next_id,
            topic,
            last: Arc::new(AtomicI64::new(-1)),
            dropped: Arc::default(),
            drop_inside: Arc::default(),
            handle: Arc::default(),
        };
        self.next_id += 1;
        let heard = {
            let (id, observer) = (probe.id, Arc::clone(&self.observer));
            let (last, dropped) = (Arc::clone(&probe.last), Arc::clone(&probe.dropped));
            let (drop_inside, handle) = (Arc::clone(&probe.drop_inside), Arc::clone(&probe.handle));
            move |data: i32| {
                observer.ran(&format!("subscription {id}"));
                if dropped.load(Ordering::SeqCst) {
                    observer.violated(format!("subscription {id} ran after its drop"));
                }
                let previous = last.swap(data.into(), Ordering::SeqCst);
                if previous >= 0 && i64::from(data) != previous + 1 {
                    observer.violated(format!(
                        "subscription {id} (topic {topic}) heard {data} after {previous}"
                    ));
                }
                observer.halt_if_asked();
                if drop_inside.load(Ordering::SeqCst) {
                    let own = handle.lock().unwrap().take();
                    dropped.store(true, Ordering::SeqCst);
                    drop(own);
                }
            }
        };
        let fanout = self.rng.u32(0..3) == 0;
        let wants_worker = self.rng.u32(0..3) != 0;
        let worker = self.some_worker(wants_worker);
        let place = if worker.is_some() {
            "a Worker"
        } else {
            "the node"
        };
        let handle: Box<dyn Any + Send> = if fanout {
            let subscription = self.fanout_to(topic);
            match worker {
                Some((worker, busy, observer)) => Box::new(subscription.add_callback(
                    &worker,
                    move |_: &mut (), m: &Int32| {
                        let _one = Exclusive::enter(&busy, &observer);
                        heard(m.data)
                    },
                )),
                None => Box::new(subscription.add_node_callback(move |m: &Int32| heard(m.data))),
            }
        } else {
            let options = self.topic_names[topic].as_str().keep_last(1000).reliable();
            match worker {
                Some((worker, busy, observer)) => Box::new(
                    worker
                        .create_subscription(options, move |_: &mut (), m: Int32| {
                            let _one = Exclusive::enter(&busy, &observer);
                            heard(m.data)
                        })
                        .unwrap(),
                ),
                None => Box::new(
                    self.node
                        .create_subscription(options, move |m: Int32| heard(m.data))
                        .unwrap(),
                ),
            }
        };
        *probe.handle.lock().unwrap() = Some(handle);
        let kind = if fanout {
            "fan-out callback"
        } else {
            "subscription"
        };
        let what = format!("{kind} {} to topic {topic} on {place}", probe.id);
        self.subscriptions.push(probe);
        what
    }

    /// A fan-out subscription to `topic`: the one made before, or (at random, or if
    /// there is none) a new one, taken on the node or on a Worker. Each is kept to the
    /// end of the sequence.
    pub(super) fn fanout_to(&mut self, topic: usize) -> FanoutSubscription<Int32> {
        if let Some(existing) = &self.fanouts[topic] {
            if self.rng.bool() {
                return existing.clone();
            }
        }
        let wants_worker = self.rng.bool();
        let worker = self.some_worker(wants_worker);
        let options = self.topic_names[topic].as_str().keep_last(1000).reliable();
        let subscription = match worker {
            Some((worker, _, _)) => worker.create_fanout_subscription(options),
            None => self.node.create_fanout_subscription(options),
        }
        .unwrap();
        self.fanouts[topic] = Some(subscription.clone());
        subscription
    }

    /// If `wanted` and there is one, a random Worker, with what its callbacks need to
    /// check that they run one at a time.
    pub(super) fn some_worker(
        &mut self,
        wanted: bool,
    ) -> Option<(Worker<()>, Arc<AtomicUsize>, Arc<Observer>)> {
        if !wanted || self.workers.is_empty() {
            return None;
        }
        let worker = &self.workers[self.rng.usize(0..self.workers.len())];
        Some((
            worker.worker.clone(),
            Arc::clone(&worker.busy),
            Arc::clone(&self.observer),
        ))
    }

    pub(super) fn drop_a_subscription(&mut self) -> String {
        if self.subscriptions.is_empty() {
            return "no subscription to drop".into();
        }
        let probe = self
            .subscriptions
            .swap_remove(self.rng.usize(0..self.subscriptions.len()));
        if self.drops_from_inside && self.rng.bool() {
            probe.drop_inside.store(true, Ordering::SeqCst);
            format!(
                "subscription {} drops itself in its next callback",
                probe.id
            )
        } else {
            let handle = probe.handle.lock().unwrap().take();
            probe.dropped.store(true, Ordering::SeqCst);
            drop(handle);
            format!("subscription {} dropped", probe.id)
        }
    }

    pub(super) fn add_worker(&mut self) -> String {
        if self.workers.len() >= 4 {
            return "no more Workers".into();
        }
        self.workers.push(ProbeWorker {
            worker: self.node.create_worker(()),
            busy: Arc::default(),
            jobs_sent: 0,
            jobs_run: Arc::default(),
        });
        "a Worker".into()
    }

    pub(super) fn drop_a_worker(&mut self) -> String {
        if self.workers.is_empty() {
            return "no Worker to drop".into();
        }
        self.workers
            .swap_remove(self.rng.usize(0..self.workers.len()));
        "a Worker dropped (its entities keep it)".into()
    }

    pub(super) fn publish_a_burst(&mut self) -> String {
        let topic = self.rng.usize(0..TOPICS);
        let count = if self.rng.u32(0..5) == 0 {
            self.rng.usize(1..300)
        } else {
            self.rng.usize(1..6)
        };
        for _ in 0..count {
            self.publish_to(topic);
        }
        format!("{count} messages to topic {topic}")
    }

    pub(super) fn send_a_job(&mut self) -> String {
        if self.workers.is_empty() {
            return "no Worker for a job".into();
        }
        let index = self.rng.usize(0..self.workers.len());
        let worker = &mut self.workers[index];
        let turn = worker.jobs_sent;
        worker.jobs_sent += 1;
        let (busy, run) = (Arc::clone(&worker.busy), Arc::clone(&worker.jobs_run));
        let observer = Arc::clone(&self.observer);
        // `Worker::run` runs the job whether or not its promise is kept.
        drop(worker.worker.run(move |_: &mut ()| {
            let _one = Exclusive::enter(&busy, &observer);
            observer.ran("a Worker's job");
            let ran = run.fetch_add(1, Ordering::SeqCst);
            if ran != turn {
                observer.violated(format!("job {turn} of a Worker ran as job {ran}"));
            }
        }));
        format!("job {turn} to Worker {index}")
    }

    pub(super) fn add_timer(&mut self) -> String {
        let period = Duration::from_millis(self.rng.u64(1..6));
        let dropped = Arc::new(AtomicBool::new(false));
        let fired = {
            let (dropped, observer) = (Arc::clone(&dropped), Arc::clone(&self.observer));
            move || {
                observer.ran("a timer");
                if dropped.load(Ordering::SeqCst) {
                    observer.violated("a timer fired after its drop".into());
                }
            }
        };
        let on_worker = self.rng.bool();
        let timer: Box<dyn Any + Send> = match self.some_worker(on_worker) {
            Some((worker, busy, observer)) => Box::new(
                worker
                    .create_timer_repeating(period, move |_: &mut ()| {
                        let _one = Exclusive::enter(&busy, &observer);
                        fired()
                    })
                    .unwrap(),
            ),
            None => Box::new(self.node.create_timer_repeating(period, fired).unwrap()),
        };
        self.timers.push((timer, dropped));
        format!("a {period:?} timer")
    }

    pub(super) fn drop_a_timer(&mut self) -> String {
        if self.timers.is_empty() {
            return "no timer to drop".into();
        }
        let (timer, dropped) = self
            .timers
            .swap_remove(self.rng.usize(0..self.timers.len()));
        dropped.store(true, Ordering::SeqCst);
        drop(timer);
        "a timer dropped".into()
    }

    pub(super) fn call(&mut self) -> String {
        self.calls += 1;
        let (answered, observer) = (Arc::clone(&self.answered), Arc::clone(&self.observer));
        // The response callback runs whether or not its promise is kept.
        drop(
            self.client
                .call_then(
                    SetBool_Request { data: true },
                    move |_: SetBool_Response| {
                        observer.ran("a response");
                        answered.fetch_add(1, Ordering::SeqCst);
                    },
                )
                .unwrap(),
        );
        "a call".into()
    }

    pub(super) fn spin_until_a_response(&mut self) -> String {
        let (sender, promise) = oneshot::channel();
        // The response callback runs whether or not its promise is kept.
        drop(
            self.client
                .call_then(
                    SetBool_Request { data: false },
                    move |_: SetBool_Response| {
                        let _ = sender.send(());
                    },
                )
                .unwrap(),
        );
        let start = Instant::now();
        let options = SpinOptions::default()
            .until_promise_resolved(promise)
            .timeout(PATIENCE);
        if !self.spin(options, None).is_empty() {
            self.observer
                .violated(format!("no response after {:?}", start.elapsed()));
        }
        "spin until a response".into()
    }

    pub(super) fn add_oneshot(&mut self) -> String {
        let fired = Arc::new(AtomicUsize::new(0));
        let delay = Duration::from_millis(self.rng.u64(0..4));
        let (count, observer) = (Arc::clone(&fired), Arc::clone(&self.observer));
        let timer = self
            .node
            .create_timer_oneshot(delay, move || {
                observer.ran("a one-shot timer");
                count.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        self.oneshots.push((timer, fired));
        format!("a one-shot timer in {delay:?}")
    }

    pub(super) fn send_a_task(&mut self) -> String {
        self.tasks += 1;
        let (run, observer) = (Arc::clone(&self.tasks_run), Arc::clone(&self.observer));
        // `run` (unlike `query`) runs the task whether or not its promise is kept.
        drop(self.executor.commands().run(async move {
            observer.ran("an async task");
            run.fetch_add(1, Ordering::SeqCst);
        }));
        "an async task".into()
    }

    /// A timer whose first callback creates a subscription (kept to the end).
    pub(super) fn subscribe_from_inside(&mut self) -> String {
        let topic = self.rng.usize(0..TOPICS);
        let name = self.topic_names[topic].clone();
        let node = self.node.clone();
        let (made, heard) = (
            Arc::clone(&self.made_inside),
            Arc::clone(&self.heard_inside),
        );
        let observer = Arc::clone(&self.observer);
        let once = AtomicBool::new(false);
        let maker = self
            .node
            .create_timer_repeating(Duration::from_millis(2), move || {
                if once.swap(true, Ordering::SeqCst) {
                    return;
                }
                let (heard, observer) = (Arc::clone(&heard), Arc::clone(&observer));
                let subscription = node
                    .create_subscription(
                        name.as_str().keep_last(1000).reliable(),
                        move |_: Int32| {
                            observer.ran("a subscription made inside a callback");
                            heard.fetch_add(1, Ordering::SeqCst);
                        },
                    )
                    .unwrap();
                made.lock().unwrap().push(subscription);
            })
            .unwrap();
        self.makers.push(maker);
        format!("a timer that subscribes to topic {topic} from inside")
    }

    pub(super) fn halt_from_another_thread(&mut self) -> String {
        let start = Instant::now();
        let halter = Halter::start(&self.executor, Duration::from_millis(3));
        let errors = self.spin(SpinOptions::default().timeout(PATIENCE), None);
        halter.spin_returned();
        if !errors.is_empty() || start.elapsed() > OVERRUN {
            self.observer.violated(format!(
                "a halted spin returned {errors:?} after {:?}",
                start.elapsed()
            ));
        }
        "a spin halted from another thread".into()
    }

    pub(super) fn publish_to(&mut self, topic: usize) {
        let data = self.published[topic] as i32;
        self.publishers[topic].publish(Int32 { data }).unwrap();
        self.published[topic] += 1;
    }
}
