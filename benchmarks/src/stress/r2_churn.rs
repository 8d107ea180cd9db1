//! R2, entity churn while spinning: subscriptions, services, clients, timers, and
//! action servers with a client and a goal in flight, are created and dropped (on the
//! node and on Workers) while the executor spins on another thread and a stream,
//! service calls and goals keep them busy (finished goals expire after 5 ms, so goal
//! expiry runs and re-arms throughout). Every hundredth
//! round adds the hard cases: an entity dropped from inside its own callback, one
//! dropped from another thread while its callback runs, and a Worker dropped while
//! its callbacks are queued. Passing means finishing: no crash, no hang, no panic.
//! A reduced count runs under valgrind (see `test/test_stress.py`), with `gentle` load
//! (a 100 Hz stream, 20 ms timers) so that the run is about memory safety, not about a
//! publisher that valgrind slows fifty-fold trying to keep a 2 kHz pace.

use super::common::{paced_publisher, unique, BoxError, CaseResult, ExecutorKind, Scale};
use rclrs::*;
use ros_env::rclrs_tokio_msgs::action::{BenchCount, BenchCount_Goal, BenchCount_Result};
use ros_env::std_msgs::msg::UInt64;
use ros_env::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex,
};
use std::time::{Duration, Instant};

/// Entities alive at once; the oldest is dropped when another is created.
const ALIVE: usize = 16;

fn answer(request: SetBool_Request) -> SetBool_Response {
    SetBool_Response {
        success: request.data,
        message: String::new(),
    }
}

struct Churn {
    node: Node,
    timer_period: Duration,
    topic: String,
    publisher: Publisher<UInt64>,
    callbacks: Arc<AtomicU64>,
    /// Goals that reached a server's goal callback.
    goals: Arc<AtomicU64>,
    /// The last action client made: it has had time to discover servers when the next
    /// action round sends a goal with it.
    action_client: Option<ActionClient<BenchCount>>,
    alive: VecDeque<Box<dyn Any + Send>>,
    created: u64,
}

impl Churn {
    fn keep(&mut self, entity: Box<dyn Any + Send>) {
        self.created += 1;
        self.alive.push_back(entity);
        if self.alive.len() > ALIVE {
            self.alive.pop_front();
        }
    }

    fn counter(&self) -> impl Fn() + Send + Sync + Clone + 'static {
        let callbacks = Arc::clone(&self.callbacks);
        move || {
            callbacks.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One ordinary round: one entity of the kind `round` picks.
    fn round(&mut self, round: u64) -> Result<(), RclrsError> {
        let count = self.counter();
        let service = format!("{}_srv_{}", self.topic, round % 8);
        let on_worker = (round / 4) % 2 == 1;
        let entity: Box<dyn Any + Send> = match (round % 5, on_worker) {
            (0, false) => Box::new(
                self.node
                    .create_subscription(self.topic.as_str(), move |_: UInt64| count())?,
            ),
            (0, true) => {
                let worker = self.node.create_worker::<u64>(0);
                let subscription = worker.create_subscription(
                    self.topic.as_str(),
                    move |seen: &mut u64, _: UInt64| {
                        *seen += 1;
                        count()
                    },
                )?;
                Box::new((subscription, worker))
            }
            (1, false) => Box::new(self.node.create_service::<SetBool, _>(
                service.as_str(),
                move |request: SetBool_Request| {
                    count();
                    answer(request)
                },
            )?),
            (1, true) => {
                let worker = self.node.create_worker::<()>(());
                let service = worker.create_service::<SetBool, _>(
                    service.as_str(),
                    move |_: &mut (), request: SetBool_Request| {
                        count();
                        answer(request)
                    },
                )?;
                Box::new((service, worker))
            }
            (2, _) => {
                let client = self.node.create_client::<SetBool>(service.as_str())?;
                let _ = client.call_then(
                    SetBool_Request { data: true },
                    move |_: SetBool_Response| count(),
                );
                Box::new(client)
            }
            (4, _) => {
                let name = format!("{}_action_{}", self.topic, round % 8);
                let goals = Arc::clone(&self.goals);
                let server =
                    self.node.create_action_server::<BenchCount, _>(
                        name.as_str()
                            .goal_expiration_timeout(Duration::from_millis(5)),
                        move |requested: RequestedGoal<BenchCount>| {
                            count();
                            goals.fetch_add(1, Ordering::Relaxed);
                            let target = requested.goal().target;
                            let executing = requested.accept().execute();
                            async move {
                                executing.succeeded_with(BenchCount_Result { reached: target })
                            }
                        },
                    )?;
                let client = self
                    .node
                    .create_action_client::<BenchCount>(name.as_str())?;
                let earlier = self.action_client.replace(client.clone());
                let goal = earlier.map(|c| c.request_goal(BenchCount_Goal { target: 1 }));
                Box::new((goal, client, server))
            }
            (_, false) => Box::new(self.node.create_timer_repeating(self.timer_period, count)?),
            (_, true) => {
                let worker = self.node.create_worker::<()>(());
                let timer =
                    worker.create_timer_repeating(self.timer_period, move |_: &mut ()| count())?;
                Box::new((timer, worker))
            }
        };
        self.keep(entity);
        Ok(())
    }

    /// A subscription and a timer that drop themselves from inside their callbacks.
    fn drop_from_own_callback(&mut self) -> Result<(), RclrsError> {
        let count = self.counter();
        let slot: Arc<Mutex<Option<Subscription<UInt64>>>> = Arc::default();
        let own = Arc::clone(&slot);
        let subscription =
            self.node
                .create_subscription(self.topic.as_str(), move |_: UInt64| {
                    count();
                    drop(own.lock().unwrap().take());
                })?;
        *slot.lock().unwrap() = Some(subscription);

        let count = self.counter();
        let slot: Arc<Mutex<Option<Timer>>> = Arc::default();
        let own = Arc::clone(&slot);
        let timer = self
            .node
            .create_timer_repeating(self.timer_period, move || {
                count();
                drop(own.lock().unwrap().take());
            })?;
        *slot.lock().unwrap() = Some(timer);
        self.created += 2;
        Ok(())
    }

    /// A subscription dropped here while its (slow) callback runs on the executor.
    fn drop_while_running(&mut self) -> Result<bool, RclrsError> {
        let count = self.counter();
        let running = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&running);
        let subscription =
            self.node
                .create_subscription(self.topic.as_str(), move |_: UInt64| {
                    flag.store(true, Ordering::SeqCst);
                    count();
                    std::thread::sleep(Duration::from_millis(5));
                })?;
        self.created += 1;
        let deadline = Instant::now() + Duration::from_secs(2);
        while !running.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        drop(subscription);
        Ok(running.load(Ordering::SeqCst))
    }

    /// A Worker and its subscription dropped right after a burst queued callbacks.
    fn drop_worker_with_queued_work(&mut self) -> Result<(), RclrsError> {
        let count = self.counter();
        let worker = self.node.create_worker::<()>(());
        let subscription = worker.create_subscription(
            self.topic.as_str().keep_last(100),
            move |_: &mut (), _: UInt64| {
                count();
                std::thread::sleep(Duration::from_micros(500));
            },
        )?;
        self.created += 1;
        std::thread::sleep(Duration::from_millis(2));
        for data in 0..50 {
            let _ = self.publisher.publish(UInt64 { data });
        }
        drop(subscription);
        drop(worker);
        Ok(())
    }
}

/// Run R2 against `kind`: `rounds` creations (default by scale); `gentle` for valgrind.
pub fn run(
    kind: ExecutorKind,
    scale: Scale,
    rounds: Option<u64>,
    gentle: bool,
) -> Result<CaseResult, BoxError> {
    let mut result = CaseResult::new("r2_churn", kind, scale);
    let rounds = rounds.unwrap_or(scale.pick(2_000, 10_000));
    let (stream_hz, timer_period) = if gentle {
        (100.0, Duration::from_millis(20))
    } else {
        (2_000.0, Duration::from_millis(1))
    };
    // Every hundredth round is a hard one; at least three in a short run.
    let hard_every = (rounds / 3).clamp(1, 100);
    let context = Context::default_from_env()?;
    let (mut executor, stats) = kind.create(&context)?;
    let node = executor.create_node(unique("r2").as_str())?;
    let topic = unique("r2_stream");
    let publisher = node.create_publisher::<UInt64>(topic.as_str())?;
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = paced_publisher(publisher.clone(), stream_hz, Arc::clone(&stop), |n| {
        UInt64 { data: n }
    });

    let commands = Arc::clone(executor.commands());
    let spinning = std::thread::spawn(move || {
        let errors = executor.spin(SpinOptions::default());
        (executor, errors)
    });

    let mut churn = Churn {
        node,
        timer_period,
        topic,
        publisher,
        callbacks: Arc::default(),
        goals: Arc::default(),
        action_client: None,
        alive: VecDeque::new(),
        created: 0,
    };
    let (mut hard_rounds, mut caught_running) = (0u64, 0u64);
    let mut failed = None;
    for round in 0..rounds {
        let step = if round % hard_every == hard_every - 1 {
            hard_rounds += 1;
            churn
                .drop_from_own_callback()
                .and_then(|()| churn.drop_while_running())
                .map(|caught| caught_running += u64::from(caught))
                .and_then(|()| churn.drop_worker_with_queued_work())
        } else {
            churn.round(round)
        };
        if let Err(err) = step {
            failed = Some(format!("round {round}: {err}"));
            break;
        }
    }
    churn.alive.clear();
    churn.action_client = None;
    stop.store(true, Ordering::Relaxed);
    let _ = publishing.join();
    // Let the last drops and calls settle while still spinning.
    std::thread::sleep(Duration::from_millis(200));
    commands.halt_spinning();
    let spun = spinning.join();

    result.figure("rounds", rounds);
    result.figure("gentle", gentle);
    result.figure("entities_created", churn.created);
    result.figure("hard_rounds", hard_rounds);
    result.figure("dropped_while_callback_ran", caught_running);
    result.figure("callbacks", churn.callbacks.load(Ordering::Relaxed));
    result.figure("goals", churn.goals.load(Ordering::Relaxed));
    result.check(failed.is_none(), || failed.clone().unwrap_or_default());
    match spun {
        Ok((_executor, errors)) => result.check(errors.is_empty(), || {
            format!("the spin ended with {errors:?}")
        }),
        Err(_) => result.check(false, || "the spinning thread panicked".into()),
    }
    if let Some(stats) = stats {
        let panics = stats.callback_panics();
        result.figure("contained_panics", panics);
        result.check(panics == 0, || {
            format!(
                "{panics} callbacks panicked: {:?}",
                stats.panics_by_entity()
            )
        });
    }
    result.check(churn.callbacks.load(Ordering::Relaxed) > 0, || {
        "no callback ran at all".into()
    });
    Ok(result)
}
