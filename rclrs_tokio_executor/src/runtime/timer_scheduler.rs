//! The timer scheduler: rcl has no push callback for timer expiry, so a scheduler
//! watches the deadlines of timers and delivers a tick into the owning Worker's mailbox
//! when one is due. Every Worker on the executor's threads drives a scheduler of its
//! own (see "Workers drive their own" below); the executor's scheduler, with a thread of
//! its own, keeps the timers of Workers on a runtime the user passed in, and the spins'
//! deadlines. An action server's goal expiry is such a timer too
//! (inside the server, see patch 0011): rcl_action re-arms it with a reset whenever a
//! goal finishes, and cancels it when no finished goal is left, so an idle server costs
//! nothing; its tick makes the Worker execute the server with `goal_expired`.
//!
//! # Protocol
//!
//! - **Deadlines come from rcl.** When the thread looks at a timer it asks rcl how long
//!   until the next call (`rcl_timer_get_time_until_next_call`), on the timer's own
//!   clock, and queues the wall-clock instant at which to look again ([`plan`]). It
//!   sleeps until the earliest instant with `park_timeout` and a 1 ns timer slack, so
//!   precision is the kernel's, not Tokio's 1 ms timer wheel.
//! - **A wake-up looks only where it must**: at the timers whose instant has come, and
//!   at those it was asked about ([`TimerScheduler::look_at`]: added, run by their
//!   Worker, moved by a clock jump; or reset). So its cost follows the ticks it
//!   delivers, not how many timers exist.
//! - **ROS time.** A timer whose clock is ROS time with an active override (sim time)
//!   has no wall-clock deadline: the thread never sleeps on it. rcl calls a jump
//!   callback on that clock whenever `/clock` moves it (forwards, backwards, or on/off),
//!   which asks the thread to look at the timer; paused time therefore costs nothing.
//! - **A tick is a mailbox item.** When a timer is due, the thread notifies its entity,
//!   which coalesces like any push notification, and remembers the call time it ticked
//!   for: at most one tick is pending per timer, so a callback that overruns its period
//!   causes no burst. The notifications go out after the thread has released its lock:
//!   a woken Worker often preempts the thread on its core, runs the tick and reports it
//!   ([`TimerScheduler::ran_tick`]) under that lock; finding the lock still held, it
//!   had to sleep until the thread ran again to release it.
//! - **A spin's pass sees every tick recorded before it.** Between the look that
//!   records a tick (under the lock) and its send (after the lock), the tick looks
//!   pending to anyone else. A spin's single pass ([`TimerScheduler::tick_due_now`])
//!   is such a look, and the moment a look releases the lock is when the kernel wakes
//!   the spin's thread waiting for it, which on a busy core then runs while the look
//!   waits to send: on a loaded machine every zero-timeout spin in a row missed a
//!   timer due throughout, its tick pending but not yet in the mailbox for the
//!   spin's backlog to count. So a look holds a fence ([`send_fence`]) from before it
//!   releases the state lock until its ticks are sent, and the spin's pass waits at
//!   the fence after its own look: by then every tick recorded before its pass is in
//!   a mailbox. A Worker reporting a tick ([`TimerScheduler::ran_tick`]) takes only
//!   the state lock, so it never waits for a send.
//! - **Firing is rclrs's.** The Worker executes the timer primitive, which checks that
//!   the timer is still ready, calls `rcl_timer_call` (which advances the next call time
//!   and skips missed periods, as rcl specifies) and runs the callback.
//! - **Re-arming costs no extra wake-up.** After a tick the thread plans to look again
//!   one period later. By then the Worker has normally run the tick (the next call time
//!   moved on), so the thread simply ticks again. Only if the tick is still pending
//!   then (the Worker is busy or not spinning) does the timer wait for the Worker, which
//!   asks the thread to look at it after running it.
//! - **A stale tick is forgotten.** The clock can move between a tick and its run:
//!   `/clock` jumps back, or `use_sim_time` switches the clock source, which makes rcl
//!   move the next call time. The timer is then not ready when the Worker runs the tick,
//!   rcl does not call it, and its next call time may be the one the tick was for. An
//!   unchanged next call time would look like a tick still pending, and the timer would
//!   never tick again; so [`TimerScheduler::ran_tick`] forgets the tick in that case and
//!   asks the thread to look again.
//! - **Reset and cancel.** A cancelled timer reports so and stays disarmed; rcl's
//!   reset callback (`rcl_timer_set_on_reset_callback`) asks the thread to look at it.
//!   A reset wakes the thread only if the timer is now due before the thread's own
//!   planned wake-up (an action server resets its expiry timer with every finished
//!   goal, usually to a deadline far off); otherwise the request waits for that
//!   wake-up. Every request marks the scheduler dirty, then compares with the planned
//!   time or wakes the thread; the thread publishes its plan, then checks the mark
//!   before it parks, so one of the two always sees the other.
//! - **Teardown.** A Worker removes a timer here (under the scheduler's lock, so the
//!   thread is done with its `rcl_timer_t`) before it clears the reset callback and
//!   drops the primitive.
//!
//! The same thread keeps the executor's [`alarms`]: deadlines of
//! timed spins, which need the same sub-millisecond precision.
//!
//! **Workers drive their own.** Every Worker on the executor's own threads (the pool,
//! or a dedicated thread) gets a scheduler of its own for its timers, with no thread:
//! the Worker drives it ([`TimerScheduler::drive_from`]) at one named step of each of
//! its turns (`worker_task`, step 5), looking at its timers if one is due or something
//! changed ([`TimerScheduler::look_if_due`]), delivering their ticks into its own
//! mailbox, and ending the turn idle until the next deadline, which its thread parks
//! for. A request (a reset from another thread, a clock jump, an added timer) nudges
//! the Worker: its mailbox schedules a turn, which looks. So a tick wakes one thread,
//! the one that runs the callback (at its real-time priority if it has one), where a
//! tick through a scheduler thread wakes two. The protocol is the same, only the loop
//! differs: one [`Looker`] does every look. The executor's own scheduler thread keeps
//! the timers of Workers on a runtime the user passed in, and the executor's alarms.
//!
//! A Worker does not go idle while it always has work (a stream it cannot keep up
//! with), and nobody else looks at its timers. So its turn also looks between mailbox
//! items when one is due ([`TimerScheduler::is_due`], a query), and a drain counts a
//! due timer among the items that wait (`turn::items_waiting`), so it yields after its
//! fair share: a timer that fell due during a burst is delivered behind what waits, and
//! runs after a fair share of the burst, as a scheduler thread would deliver it at its
//! deadline. That check costs a clock read while one of the Worker's timers has a
//! deadline, and nothing for a Worker without timers.
//!
//! Wake-ups use `thread::unpark`, which is sticky: a wake that lands while the thread is
//! evaluating is not lost. Nothing here takes rclrs's clock lock, so the jump callback
//! (which runs with that lock held) can never deadlock with the thread; and the lock of
//! the timers asked about, which the reset and jump callbacks take, is held only to
//! insert a key or to swap the set out, never while anything else is taken.

use crate::ffi::{RclTimer, TimerDue};
pub(crate) mod alarms;
mod looker;
mod plan;
mod send_fence;

use crate::runtime::{
    entity::{Entity, TimerWatch},
    mailbox::MailboxSender,
    threads::{join_listed, keep_for_join, JoinList},
};
use alarms::{Alarm, AlarmList};
use looker::{Look, Looker};
use plan::{Plan, ScheduledTimer};
use send_fence::SendFence;
use std::collections::HashSet;
use std::sync::{
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    Arc, Mutex, OnceLock, Weak,
};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Who drives a scheduler, and how a request wakes it.
enum Driver {
    /// Its own thread: unparked.
    Thread(Thread),
    /// The Worker whose timers these are: its mailbox nudged (a turn, which looks).
    Worker(MailboxSender),
}

/// Identifies a timer: the address of its entity.
pub(crate) type TimerKey = usize;

/// The key of a timer entity.
pub(crate) fn key(entity: &Entity) -> TimerKey {
    entity as *const Entity as usize
}

/// How late the thread may deliver a timer's tick. Timers get none. An action server's
/// goal expiry gets [`Slack::GOAL_EXPIRY`]: rcl_action re-arms that timer for the
/// oldest finished goal, so under a stream of goals it falls due once per goal, and
/// serving it at most a millisecond late lets one tick expire every goal due by then
/// (rcl expires them all at once) instead of waking the thread and the Worker per goal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slack(pub(crate) Duration);

impl Slack {
    /// Exact: an rcl timer's callback.
    pub(crate) const NONE: Slack = Slack(Duration::ZERO);
    /// A finished goal's result is dropped up to 1 ms after its timeout.
    pub(crate) const GOAL_EXPIRY: Slack = Slack(Duration::from_millis(1));

    fn ns(self) -> i64 {
        self.0.as_nanos() as i64
    }
}

#[derive(Default)]
struct State {
    plan: Plan,
    stop: bool,
}

/// Deadlines of spins; a lock of its own, so filing one never waits for the thread to
/// finish evaluating timers.
#[derive(Default)]
struct Alarms(Mutex<AlarmList>);

/// Shared with the scheduler thread and with every callback that wakes it.
pub(crate) struct TimerScheduler {
    state: Mutex<State>,
    /// Held by a look from before it releases `state` until its ticks are sent.
    sends: SendFence,
    /// Timers the thread is asked to look at, each once however often it was asked (a
    /// lock of its own, held only to insert or to swap the set out, so callbacks never
    /// wait for an evaluation).
    asked: Mutex<HashSet<TimerKey>>,
    alarms: Alarms,
    driver: OnceLock<Driver>,
    /// The scratch of its looks, whoever drives it (only the driver looks).
    looker: Mutex<Looker>,
    /// Timers scheduled now.
    timer_count: AtomicUsize,
    /// Held while the thread is started, so two Workers adding their first timers at
    /// once start one thread, not two.
    starting: Mutex<()>,
    /// The thread's name: the executor's thread name, then `-timers`.
    thread_name: String,
    /// The thread itself, joined when the executor is dropped.
    running: JoinList,
    /// Set by anyone who changed something; the thread re-evaluates when it is set.
    dirty: AtomicBool,
    /// When the thread will wake by itself, in nanoseconds since `epoch` (`u64::MAX`:
    /// not until woken). 0 while it evaluates.
    planned_ns: AtomicU64,
    epoch: Instant,
}

impl TimerScheduler {
    /// A scheduler whose thread (started with the first timer or alarm) is named after
    /// the executor's threads.
    pub(crate) fn new(executor_thread_name: &str) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            sends: SendFence::default(),
            asked: Mutex::default(),
            alarms: Alarms::default(),
            driver: OnceLock::new(),
            looker: Mutex::default(),
            timer_count: AtomicUsize::new(0),
            starting: Mutex::default(),
            thread_name: format!("{executor_thread_name}-timers"),
            running: JoinList::default(),
            dirty: AtomicBool::new(false),
            // Nothing planned until a first look (or the thread's first loop).
            planned_ns: AtomicU64::new(u64::MAX),
            epoch: Instant::now(),
        })
    }

    /// rcl reset the timer `key` (it may be due earlier than before): ask the thread to
    /// look at it, and wake the thread unless its planned wake-up comes first anyway
    /// (within the timer's slack). Called from inside `rcl_timer_reset`, which has set
    /// the new deadline already; takes only the `asked` lock.
    pub(crate) fn rearmed(&self, key: TimerKey, timer: RclTimer, sim_time: bool, slack: Slack) {
        self.asked.lock().unwrap().insert(key);
        self.dirty.store(true, Ordering::SeqCst);
        if !sim_time {
            if let TimerDue::In(ns) = timer.due() {
                let late = (ns.max(0) + slack.ns()) as u64;
                let due = self.since_epoch(Instant::now()) + late;
                if due >= self.planned_ns.load(Ordering::SeqCst) {
                    return;
                }
            }
        }
        self.unpark();
    }

    fn since_epoch(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    /// Ask the thread to look at the timer `key` (added, run by its Worker, or moved by
    /// a jump of its clock). Takes only the `asked` lock: safe from rcl callbacks.
    pub(crate) fn look_at(&self, key: TimerKey) {
        self.asked.lock().unwrap().insert(key);
        self.wake();
    }

    /// Wake the thread to plan its sleep again (an alarm was filed, or the executor
    /// stops). Lock-free.
    pub(crate) fn wake(&self) {
        self.dirty.store(true, Ordering::SeqCst);
        self.unpark();
    }

    fn unpark(&self) {
        match self.driver.get() {
            Some(Driver::Thread(thread)) => thread.unpark(),
            Some(Driver::Worker(mailbox)) => mailbox.nudge(),
            None => {}
        }
    }

    /// A future that resolves at `deadline`, woken by this scheduler's thread.
    pub(crate) fn alarm(self: &Arc<Self>, deadline: Instant) -> Alarm {
        self.ensure_thread();
        Alarm::new(Arc::clone(self), deadline)
    }

    pub(crate) fn with_alarms<R>(&self, f: impl FnOnce(&mut AlarmList) -> R) -> R {
        f(&mut self.alarms.0.lock().unwrap())
    }

    /// Let the Worker whose mailbox `mailbox` is drive this scheduler instead of a
    /// thread of its own: each of its turns calls [`look_if_due`](Self::look_if_due),
    /// and a request that needs a look nudges it. Called before any timer is added.
    pub(crate) fn drive_from(&self, mailbox: MailboxSender) {
        let _starting = self.starting.lock().unwrap();
        let _ = self.driver.set(Driver::Worker(mailbox));
    }

    fn driven_by_worker(&self) -> bool {
        matches!(self.driver.get(), Some(Driver::Worker(_)))
    }

    /// Whether any timer is scheduled here.
    pub(crate) fn has_timers(&self) -> bool {
        self.timer_count.load(Ordering::Acquire) > 0
    }

    /// For the Worker that drives this scheduler: look at the timers if something
    /// changed or one is due, deliver their ticks, and say until when it may wait
    /// (`None`: until woken). Reads the clock only while a timer has a deadline.
    pub(crate) fn look_if_due(&self) -> Option<Instant> {
        loop {
            if !self.dirty.load(Ordering::SeqCst) {
                let planned = self.planned_ns.load(Ordering::SeqCst);
                if planned == u64::MAX {
                    return None;
                }
                let at = self.epoch + Duration::from_nanos(planned);
                if planned != 0 && Instant::now() < at {
                    return Some(at);
                }
            }
            // Only the driver looks; a nested call skips its look.
            let Ok(mut looker) = self.looker.try_lock() else {
                return None;
            };
            match looker.look(self) {
                Look::Stopped => return None,
                Look::Again => continue,
                Look::Sleep(next) => return next,
            }
        }
    }

    /// Whether a look would find something to do now: a request, or a deadline that
    /// has come (a query: nothing is delivered). Reads the clock only while a timer has
    /// a deadline.
    pub(crate) fn is_due(&self) -> bool {
        if self.dirty.load(Ordering::SeqCst) {
            return true;
        }
        let planned = self.planned_ns.load(Ordering::SeqCst);
        planned != u64::MAX
            && (planned == 0 || Instant::now() >= self.epoch + Duration::from_nanos(planned))
    }

    fn ensure_thread(self: &Arc<Self>) {
        if self.driver.get().is_some() {
            return;
        }
        let _starting = self.starting.lock().unwrap();
        if self.driver.get().is_some() {
            return;
        }
        let weak = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name(self.thread_name.clone())
            .spawn(move || run(weak));
        match spawned {
            Ok(handle) => {
                let _ = self.driver.set(Driver::Thread(handle.thread().clone()));
                keep_for_join(&self.running, handle);
            }
            Err(err) => rclrs::log_error!(
                "rclrs_tokio_executor",
                "cannot start the timer scheduler thread: {err}"
            ),
        }
    }

    /// Start scheduling a timer entity.
    pub(crate) fn add(
        self: &Arc<Self>,
        entity: &Arc<Entity>,
        timer: RclTimer,
        mailbox: MailboxSender,
        sim_time: Arc<AtomicBool>,
        slack: Slack,
    ) {
        self.ensure_thread();
        let timer =
            ScheduledTimer::new(timer, Arc::downgrade(entity), mailbox, sim_time, slack.ns());
        let key = key(entity);
        self.state.lock().unwrap().plan.insert(key, timer);
        self.timer_count.fetch_add(1, Ordering::AcqRel);
        self.look_at(key);
    }

    /// Deliver the ticks of the timers due now from the caller's thread, so a spin that
    /// makes one pass counts them into its backlog, as `rcl_wait` checks its timers
    /// when it begins, instead of racing this thread (a zero-period timer, due again
    /// as soon as it ran, was missed by every other zero-timeout spin). Returns once
    /// the ticks another look recorded before this one are sent too.
    pub(crate) fn tick_due_now(&self) {
        let mut due = Vec::new();
        {
            let mut state = self.state.lock().unwrap();
            if state.stop {
                return;
            }
            state.plan.tick_every_due(&mut due);
        }
        for (entity, mailbox) in due {
            entity.tick(&mailbox);
        }
        self.sends.wait_for_sends();
    }

    /// The Worker ran a tick. Asks the thread to look at the timer only if it is waiting
    /// for exactly that, or if the tick was stale (see the module's protocol).
    pub(crate) fn ran_tick(&self, entity: &Entity) {
        let key = key(entity);
        let mut state = self.state.lock().unwrap();
        let Some(timer) = state.plan.get_mut(key) else {
            return;
        };
        let stale = timer
            .ticked_for
            .is_some_and(|ticked_for| timer.timer.next_call_time() == Some(ticked_for));
        if stale {
            timer.ticked_for = None;
        }
        if stale || timer.awaiting_worker || timer.sim_time.load(Ordering::Acquire) {
            timer.awaiting_worker = false;
            drop(state);
            if self.driven_by_worker() {
                // Called from the Worker's own turn, which looks before it ends.
                self.asked.lock().unwrap().insert(key);
                self.dirty.store(true, Ordering::SeqCst);
            } else {
                self.look_at(key);
            }
        }
    }

    /// Forget a timer. Once this returns the thread no longer touches its `rcl_timer_t`.
    pub(crate) fn remove(&self, entity: &Entity) {
        if self.state.lock().unwrap().plan.forget(key(entity)) {
            self.timer_count.fetch_sub(1, Ordering::AcqRel);
        }
    }

    pub(crate) fn stop(&self) {
        self.state.lock().unwrap().stop = true;
        self.wake();
    }

    /// After [`stop`](Self::stop): wait (up to the teardown patience) for the thread to
    /// end, unless this is that thread.
    pub(crate) fn join(&self) {
        join_listed(&self.running);
    }
}

/// The scheduler's own thread: look, then sleep until the next instant or a wake.
fn run(scheduler: Weak<TimerScheduler>) {
    crate::ffi::set_precise_timer_slack();
    loop {
        let Some(this) = scheduler.upgrade() else {
            return;
        };
        let next = match this.looker.lock().unwrap().look(&this) {
            Look::Stopped => return,
            Look::Again => continue,
            Look::Sleep(next) => next,
        };
        drop(this);
        match next {
            // Woken by `wake`, or when the earliest deadline is reached.
            Some(deadline) => {
                std::thread::park_timeout(deadline.saturating_duration_since(Instant::now()))
            }
            None => std::thread::park(),
        }
    }
}

impl TimerWatch for TimerScheduler {
    fn remove(&self, entity: &Entity) {
        TimerScheduler::remove(self, entity);
    }
}
