//! How a Worker task takes in a new Waitable: push registration for subscriptions,
//! services, clients, guard conditions and the parts of action servers and clients;
//! the timer scheduler for timers and for action servers' goal expiry; the clock task
//! for rclrs's `/clock` subscriptions; the fallback waiter for the rest (QoS events).

use super::WorkerTask;
use crate::ffi::RclTimer;
use crate::runtime::{
    entity::{rules_of, Entity, Ticks, TimerParts, TimerWatch},
    fallback_waiter::FallbackWaiter,
    mailbox::{Control, MailboxSender},
    threads,
    timer_scheduler::{self, Slack},
};
use rclrs::{
    log_error, ClockChange, ClockJump, ClockType, JumpThreshold, RclPrimitiveKind, Waitable,
};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

impl WorkerTask {
    /// Register a new entity for push, or hand it to the fallback waiter.
    pub(super) fn add(&mut self, waitable: Waitable) {
        crate::ros2_tracing::registered(waitable.primitive());
        let kind = waitable.primitive().kind();
        let rules = rules_of(kind);
        if rules.ticks == Ticks::OwnTimer {
            self.add_timer(waitable);
            return;
        }
        // Once a fallback waiter exists, guard conditions wake it instead, so it sees
        // new entities and dropped ones.
        let to_fallback = !rules.push_path || (rules.trigger && self.fallback.is_some());
        if to_fallback {
            self.hand_to_fallback(waitable);
            return;
        }
        let entity = Entity::new(waitable);
        if kind == RclPrimitiveKind::Subscription && entity.name == "/clock" && self.gated {
            // rclrs's time source subscribes to /clock on the node Worker (payload `()`).
            // Serve it on the clock task instead, so a Worker blocked in a long callback
            // cannot stop ROS time for everyone else.
            let unit_payload = self.payload.as_ref().is_some_and(|p| (**p).is::<()>());
            if unit_payload {
                if let Some(waitable) = entity.take_waitable() {
                    self.clock_task().send_control(Control::Add(waitable));
                }
                return;
            }
        }
        // Listed before registering: rcl reports the backlog from inside registration.
        self.entities.push(Arc::clone(&entity));
        let pushed = match entity.register(&self.mailbox_tx) {
            Ok(pushed) => pushed,
            Err(err) => {
                log_error!(
                    "rclrs_tokio_executor",
                    "push registration of {} failed ({err}); using the fallback waiter",
                    entity.name
                );
                false
            }
        };
        if pushed && rules.trigger {
            entity.quiet_registration_report();
        }
        // An action server's finished goals expire on a timer inside it (patch 0011).
        let expiry = pushed && rules.ticks == Ticks::GoalExpiry;
        let expiry_scheduled = !expiry || self.schedule_timer(&entity);
        if !expiry_scheduled {
            log_error!(
                "rclrs_tokio_executor",
                "rcl did not give the goal-expiry timer of action server {}; it is served \
                 by the fallback waiter",
                entity.name
            );
        }
        if !pushed || !expiry_scheduled {
            self.entities.retain(|e| !Arc::ptr_eq(e, &entity));
            if let Some(waitable) = entity.take_waitable() {
                self.hand_to_fallback(waitable);
            }
        }
        self.list_entities();
    }

    /// Hand a timer to the timer scheduler: it delivers ticks into this mailbox.
    fn add_timer(&mut self, waitable: Waitable) {
        let entity = Entity::new(waitable);
        if !self.schedule_timer(&entity) {
            if let Some(waitable) = entity.take_waitable() {
                self.hand_to_fallback(waitable);
            }
            return;
        }
        self.entities.push(Arc::clone(&entity));
        self.list_entities();
    }

    /// Let the timer scheduler tick `entity`'s timer (a timer's own, or an action
    /// server's goal expiry) into this mailbox, following the timer's clock. False if
    /// the primitive has no timer rcl lets us read.
    fn schedule_timer(&mut self, entity: &Arc<Entity>) -> bool {
        let (timer, clock) = {
            let waitable = entity.waitable.lock().unwrap();
            let Some(primitive) = waitable.as_ref().map(|w| w.primitive()) else {
                return false;
            };
            let Some(timer) = RclTimer::of(primitive) else {
                return false;
            };
            (timer, primitive.timer_clock())
        };
        let slack = match entity.rules.ticks {
            Ticks::GoalExpiry => Slack::GOAL_EXPIRY,
            Ticks::OwnTimer | Ticks::None => Slack::NONE,
        };
        let scheduler = Arc::clone(&self.timers);
        let key = timer_scheduler::key(entity);
        let sim_time = Arc::new(AtomicBool::new(
            clock
                .as_ref()
                .is_some_and(|c| c.is_ros_time_override_enabled()),
        ));
        // ROS time moves when /clock says so: rcl calls this on every change (and when
        // sim time is switched on or off), after adjusting the timer itself.
        let jump = clock
            .as_ref()
            .filter(|c| matches!(c.clock_type(), ClockType::RosTime))
            .and_then(|clock| {
                let scheduler = Arc::clone(&scheduler);
                let sim_time = Arc::clone(&sim_time);
                let on_jump = Arc::new(move |jump: &ClockJump| {
                    match jump.clock_change {
                        ClockChange::RosTimeActivated => sim_time.store(true, Ordering::Release),
                        ClockChange::RosTimeDeactivated => sim_time.store(false, Ordering::Release),
                        _ => {}
                    }
                    if !jump.before_jump {
                        scheduler.look_at(key);
                    }
                });
                clock
                    .add_jump_callback(JumpThreshold::any_change(), on_jump)
                    .map_err(|err| {
                        log_error!(
                            "rclrs_tokio_executor",
                            "cannot follow the ROS time of a timer ({err}); it will only \
                             be re-evaluated when other timers or resets wake the scheduler"
                        )
                    })
                    .ok()
            });
        let reset = {
            let scheduler = Arc::clone(&scheduler);
            let sim_time = Arc::clone(&sim_time);
            let waitable = entity.waitable.lock().unwrap();
            waitable.as_ref().and_then(|w| {
                RclTimer::set_on_reset(
                    w.primitive(),
                    Box::new(move || {
                        scheduler.rearmed(key, timer, sim_time.load(Ordering::Acquire), slack)
                    }),
                )
            })
        };
        entity.set_timer_parts(TimerParts {
            scheduler: Arc::clone(&scheduler) as Arc<dyn TimerWatch>,
            reset,
            jump,
        });
        scheduler.add(entity, timer, self.mailbox_tx.clone(), sim_time, slack);
        true
    }

    fn hand_to_fallback(&mut self, waitable: Waitable) {
        if let Some(fallback) = &self.fallback {
            fallback.add(waitable);
            return;
        }
        // First fallback primitive of this Worker: its guard conditions move into the
        // fallback wait set (deregistering their push callbacks first).
        let mut initial = vec![waitable];
        let mut kept = Vec::with_capacity(self.entities.len());
        for entity in self.entities.drain(..) {
            if entity.rules.trigger {
                initial.extend(entity.take_waitable());
            } else {
                kept.push(entity);
            }
        }
        self.entities = kept;
        let Some(guard_condition) = self.guard_condition.clone() else {
            log_error!(
                "rclrs_tokio_executor",
                "the clock task got a primitive without a push path; it is dropped"
            );
            return;
        };
        match FallbackWaiter::start(
            &self.shared.thread_name,
            &self.context,
            guard_condition,
            self.mailbox_tx.clone(),
            self.shared.stats.clone(),
            initial,
        ) {
            Ok((fallback, thread)) => {
                self.fallback = Some(fallback);
                // The thread drops its wait set, and so its primitives, as it ends: the
                // executor's drop waits for that.
                threads::keep_for_join(&self.shared.fallback_threads, thread);
            }
            Err(err) => log_error!(
                "rclrs_tokio_executor",
                "could not start the fallback waiter ({err}); primitives without a push \
                 path (timers, events, actions) will not run on this Worker"
            ),
        }
    }

    /// The clock task: a Worker task of its own, with the `()` payload of node-level
    /// primitives, that serves rclrs's `/clock` subscriptions whether or not the
    /// executor is spinning (like rclcpp's dedicated clock thread), so ROS time never
    /// waits for a busy Worker. Started by the first `/clock` subscription.
    fn clock_task(&self) -> MailboxSender {
        self.shared
            .clock_task
            .get_or_init(|| {
                WorkerTask::spawn(
                    Arc::clone(&self.shared),
                    self.context.clone(),
                    None,
                    Box::new(()),
                )
            })
            .clone()
    }
}
