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

mod end_checks;
mod operations;
mod probes;

use super::*;
use probes::{Observer, ProbeSubscription, ProbeWorker};
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
        let context = crate::support::isolated_context();
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
}
