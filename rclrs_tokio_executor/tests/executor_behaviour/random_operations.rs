//! Random sequences of operations on one executor, each checked against the contract
//! every executor keeps. A seeded generator picks, step by step: creating and dropping
//! subscriptions and fan-out subscriptions' callbacks (on the node or on a Worker),
//! Workers, repeating and one-shot timers;
//! publishing bursts; calling a service; sending work to a Worker and async tasks to
//! the executor; asking the next callback to halt; and spinning in every way (once,
//! timed, zero timeouts, until a response, halted from another thread).
//!
//! What must hold throughout:
//! - each subscription hears its topic in order and without a gap (reliable, depth
//!   1000), from its first message on, and at the end has heard the last one published;
//! - no callback, Worker job or async task runs outside a spin;
//! - no subscription or timer callback runs after its handle was dropped between spins;
//! - a Worker runs one callback at a time, and its jobs in the order they were sent;
//! - every request is answered, every one-shot timer fires exactly once, every async
//!   task runs, and a subscription created inside a callback serves;
//! - every timed spin returns, and its deadline holds (within [`OVERRUN`]).
//!
//! The stricter variant (the Tokio executor's alone) also drops subscriptions and
//! fan-out callbacks from inside their own callbacks: none runs again after that (the basic executor runs
//! the ones it has already taken; see `stricter_than_basic`).
//!
//! A failure prints its seed and the last operations. `RCLRS_TOKIO_RANDOM_SEED=<n>`
//! runs that seed instead of the fixed ones.

use super::*;
use rclrs_tokio_executor::{CreateFanoutSubscription, FanoutSubscription};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicI64};

/// The sequences each executor runs (set `RCLRS_TOKIO_RANDOM_SEED` for another one).
const SEEDS: [u64; 2] = [101, 4];
const STEPS: usize = 300;
const TOPICS: usize = 3;
/// How far past its deadline a spin may return: room for a slow machine, none for a
/// hang.
const OVERRUN: Duration = Duration::from_secs(1);

pub(crate) fn random_operations_keep_the_shared_contract(make: MakeExecutor) {
    for seed in seeds() {
        Sequence::new(make, seed, false).run();
    }
}

pub(crate) fn random_operations_with_drops_from_inside_keep_the_contract(make: MakeExecutor) {
    for seed in seeds() {
        Sequence::new(make, seed, true).run();
    }
}

fn seeds() -> Vec<u64> {
    match std::env::var("RCLRS_TOKIO_RANDOM_SEED") {
        Ok(seed) => vec![seed.parse().expect("RCLRS_TOKIO_RANDOM_SEED is a number")],
        Err(_) => SEEDS.to_vec(),
    }
}

/// What callbacks see and report, shared with all of them.
#[derive(Default)]
struct Observer {
    spinning: AtomicBool,
    /// Set by the sequence: the next subscription callback calls `halt_spinning`.
    halt_next: AtomicBool,
    commands: Mutex<Option<Arc<ExecutorCommands>>>,
    violations: Mutex<Vec<String>>,
}

impl Observer {
    fn violated(&self, what: String) {
        self.violations.lock().unwrap().push(what);
    }

    /// Every callback starts here: it must run inside a spin.
    fn ran(&self, what: &str) {
        if !self.spinning.load(Ordering::SeqCst) {
            self.violated(format!("{what} ran outside a spin"));
        }
    }

    fn halt_if_asked(&self) {
        if self.halt_next.swap(false, Ordering::SeqCst) {
            if let Some(commands) = self.commands.lock().unwrap().as_ref() {
                commands.halt_spinning();
            }
        }
    }
}

/// One callback at a time on a Worker: held while a callback of that Worker runs.
struct Exclusive<'a>(&'a AtomicUsize);

impl<'a> Exclusive<'a> {
    fn enter(busy: &'a AtomicUsize, observer: &Observer) -> Self {
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

struct ProbeWorker {
    worker: Worker<()>,
    busy: Arc<AtomicUsize>,
    /// Jobs sent with `Worker::run`, and jobs run (each checks its turn).
    jobs_sent: usize,
    jobs_run: Arc<AtomicUsize>,
}

struct ProbeSubscription {
    id: usize,
    topic: usize,
    /// The last message heard (-1 before the first).
    last: Arc<AtomicI64>,
    dropped: Arc<AtomicBool>,
    /// Asks the next callback to drop the subscription's handle from inside.
    drop_inside: Arc<AtomicBool>,
    handle: Arc<Mutex<Option<Box<dyn Any + Send>>>>,
}

impl ProbeSubscription {
    fn is_live(&self) -> bool {
        !self.dropped.load(Ordering::SeqCst)
    }
}

struct Sequence {
    executor: Executor,
    node: Node,
    observer: Arc<Observer>,
    rng: fastrand::Rng,
    seed: u64,
    drops_from_inside: bool,
    log: Vec<String>,
    publishers: Vec<Publisher<Int32>>,
    published: [i64; TOPICS],
    topic_names: Vec<String>,
    subscriptions: Vec<ProbeSubscription>,
    fanouts: [Option<FanoutSubscription<Int32>>; TOPICS],
    workers: Vec<ProbeWorker>,
    timers: Vec<(Box<dyn Any + Send>, Arc<AtomicBool>)>,
    oneshots: Vec<(Timer, Arc<AtomicUsize>)>,
    makers: Vec<Timer>,
    made_inside: Arc<Mutex<Vec<Subscription<Int32>>>>,
    heard_inside: Arc<AtomicUsize>,
    _service: Service<SetBool>,
    client: Client<SetBool>,
    calls: usize,
    answered: Arc<AtomicUsize>,
    tasks: usize,
    tasks_run: Arc<AtomicUsize>,
    next_id: usize,
}

impl Sequence {
    fn new(make: MakeExecutor, seed: u64, drops_from_inside: bool) -> Self {
        let context = Context::default_from_env().unwrap();
        let executor = make(&context);
        let node = executor
            .create_node(unique(&format!("random_{seed}")).as_str())
            .unwrap();
        let observer = Arc::new(Observer::default());
        *observer.commands.lock().unwrap() = Some(Arc::clone(executor.commands()));
        let topic_names: Vec<_> = (0..TOPICS)
            .map(|t| unique(&format!("random_{seed}_{t}")))
            .collect();
        let publishers = topic_names
            .iter()
            .map(|name| {
                node.create_publisher::<Int32>(name.as_str().keep_last(1000).reliable())
                    .unwrap()
            })
            .collect();
        let (service, client) = support::echo_service(&node, &unique("random_service"));
        Sequence {
            executor,
            node,
            observer,
            rng: fastrand::Rng::with_seed(seed),
            seed,
            drops_from_inside,
            log: Vec::new(),
            publishers,
            published: [0; TOPICS],
            topic_names,
            subscriptions: Vec::new(),
            fanouts: Default::default(),
            workers: Vec::new(),
            timers: Vec::new(),
            oneshots: Vec::new(),
            makers: Vec::new(),
            made_inside: Arc::default(),
            heard_inside: Arc::default(),
            _service: service,
            client,
            calls: 0,
            answered: Arc::default(),
            tasks: 0,
            tasks_run: Arc::default(),
            next_id: 0,
        }
    }

    fn run(mut self) {
        for step in 0..STEPS {
            let what = self.step();
            self.log.push(format!("{step}: {what}"));
            self.fail_on_violations();
        }
        self.finish();
        self.fail_on_violations();
        // The callbacks hold the observer, which holds the executor's commands: let
        // go of those, so the executor and its threads end with the sequence.
        self.observer.commands.lock().unwrap().take();
    }

    fn fail_on_violations(&self) {
        let violations = self.observer.violations.lock().unwrap();
        if !violations.is_empty() {
            let recent = &self.log[self.log.len().saturating_sub(20)..];
            panic!(
                "seed {}: {violations:#?}\nthe last operations:\n{}",
                self.seed,
                recent.join("\n")
            );
        }
    }

    /// One random operation; returns what it did.
    fn step(&mut self) -> String {
        match self.rng.u32(0..115) {
            0..=11 => self.subscribe(),
            12..=17 => self.drop_a_subscription(),
            18..=22 => self.add_worker(),
            23..=24 => self.drop_a_worker(),
            25..=40 => self.publish_a_burst(),
            41..=42 => {
                self.observer.halt_next.store(true, Ordering::SeqCst);
                "the next subscription callback halts".into()
            }
            43..=44 => self.send_a_job(),
            45..=54 => {
                let timeout = Duration::from_millis([0, 1, 5][self.rng.usize(0..3)]);
                self.spin(SpinOptions::spin_once().timeout(timeout), Some(timeout));
                format!("spin_once, timeout {timeout:?}")
            }
            55..=69 => {
                let timeout = Duration::from_millis([0, 2, 10, 30][self.rng.usize(0..4)]);
                self.spin(SpinOptions::default().timeout(timeout), Some(timeout));
                format!("spin, timeout {timeout:?}")
            }
            70..=76 => self.add_timer(),
            77..=81 => self.drop_a_timer(),
            82..=89 => self.call(),
            90..=94 => self.spin_until_a_response(),
            95..=99 => self.add_oneshot(),
            100..=104 => self.send_a_task(),
            105..=109 => self.subscribe_from_inside(),
            _ => self.halt_from_another_thread(),
        }
    }

    fn spin(&mut self, options: SpinOptions, timeout: Option<Duration>) -> Vec<RclrsError> {
        let start = Instant::now();
        self.observer.spinning.store(true, Ordering::SeqCst);
        let errors = self.executor.spin(options);
        self.observer.spinning.store(false, Ordering::SeqCst);
        if let Some(timeout) = timeout {
            let over = start.elapsed().saturating_sub(timeout);
            if over > OVERRUN {
                self.observer
                    .violated(format!("a spin of {timeout:?} returned {over:?} late"));
            }
        }
        for error in &errors {
            if !matches!(
                error,
                RclrsError::RclError {
                    code: RclReturnCode::Timeout,
                    ..
                }
            ) {
                self.observer.violated(format!("a spin reported {error:?}"));
            }
        }
        errors
    }

    /// A subscription, or a callback of a fan-out subscription, on the node or on a
    /// Worker.
    fn subscribe(&mut self) -> String {
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
    fn fanout_to(&mut self, topic: usize) -> FanoutSubscription<Int32> {
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
    fn some_worker(
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

    fn drop_a_subscription(&mut self) -> String {
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

    fn add_worker(&mut self) -> String {
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

    fn drop_a_worker(&mut self) -> String {
        if self.workers.is_empty() {
            return "no Worker to drop".into();
        }
        self.workers
            .swap_remove(self.rng.usize(0..self.workers.len()));
        "a Worker dropped (its entities keep it)".into()
    }

    fn publish_a_burst(&mut self) -> String {
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

    fn send_a_job(&mut self) -> String {
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

    fn add_timer(&mut self) -> String {
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

    fn drop_a_timer(&mut self) -> String {
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

    fn call(&mut self) -> String {
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

    fn spin_until_a_response(&mut self) -> String {
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

    fn add_oneshot(&mut self) -> String {
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

    fn send_a_task(&mut self) -> String {
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
    fn subscribe_from_inside(&mut self) -> String {
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

    fn halt_from_another_thread(&mut self) -> String {
        let commands = Arc::clone(self.executor.commands());
        let halter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(3));
            commands.halt_spinning();
        });
        let start = Instant::now();
        let errors = self.spin(SpinOptions::default().timeout(PATIENCE), None);
        halter.join().unwrap();
        if !errors.is_empty() || start.elapsed() > OVERRUN {
            self.observer.violated(format!(
                "a halted spin returned {errors:?} after {:?}",
                start.elapsed()
            ));
        }
        "a spin halted from another thread".into()
    }

    /// Spin until everything sent has been served, then check what must have happened.
    fn finish(&mut self) {
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

    fn publish_to(&mut self, topic: usize) {
        let data = self.published[topic] as i32;
        self.publishers[topic].publish(Int32 { data }).unwrap();
        self.published[topic] += 1;
    }

    /// What has not been served yet.
    fn pending(&self) -> Vec<String> {
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
