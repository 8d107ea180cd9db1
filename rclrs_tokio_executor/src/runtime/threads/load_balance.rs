//! Load balancing (`follow_load`): which pool thread a Worker task runs on, when
//! `TokioExecutorOptions::follow_load` is on.
//!
//! # Why
//!
//! Workers start spread over the pool threads (fewest Workers first). That is right for
//! Workers that keep a thread busy and wrong for light ones: a thread busy a fifth of
//! the time parks after nearly every message and is woken again for the next, and on a
//! VM a wake-up can cost more CPU than the take and callback it hands over
//! (`docs/performance-notes.md`, "Placement"). One thread
//! serving every light Worker is woken once per burst instead of once per Worker.
//!
//! # Protocol
//!
//! Each pool thread counts the time its Worker tasks spend running items
//! ([`ThreadLoad::add_busy`]) and turns it into a busy fraction once per [`WINDOW`].
//! Between turns, at most once per window, a Worker task asks [`decide`] whether to move:
//! - **gather**: if its thread and another were busy less than [`GATHER_BELOW`] of one
//!   thread together, and the other runs at least as many Workers (on a tie, the one with
//!   the lower index), it moves there; light Workers end up on one thread;
//! - **spread**: if its thread was busy more than [`SPREAD_ABOVE`] and runs other
//!   Workers too, it moves to the least busy thread without a blocker (below), if that
//!   one was busy less than [`GATHER_BELOW`].
//!
//! - **keep blockers apart**: a Worker that once ran callbacks averaging more than
//!   [`LONG_CALLBACK`] in one item (a sleep, a lock, a long computation) is a *blocker*
//!   from then on ([`Home::mark_blocker`]): it never gathers with others, nobody gathers
//!   onto its thread, and another Worker on its thread moves to the least busy thread
//!   without a blocker, if that one was busy less than [`GATHER_BELOW`]. Moves are
//!   decided between turns, so a gathered Worker still waits out the first long
//!   callback of its neighbour, but not the next ones.
//!
//! The gap between the two thresholds keeps a Worker from moving back and forth, and a
//! thread that just gained or lost a Worker is left alone for [`SETTLE`], so the effect
//! of one move is measured before the next.
//!
//! A move happens only between turns, with no callback in flight: the Worker task
//! returns from its loop and is spawned again on the other thread's runtime, keeping its
//! mailbox, entities and stashed item, so its callbacks stay in order and one at a time.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often busy fractions are recomputed, and a Worker asks whether to move.
pub(crate) const WINDOW: Duration = Duration::from_millis(20);
/// After a move, neither thread takes part in another for this long.
pub(crate) const SETTLE: Duration = Duration::from_millis(60);
/// Two threads busy less than this together share one thread.
pub(crate) const GATHER_BELOW: f64 = 0.7;
/// A thread busy more than this hands one of its Workers to an idler thread.
pub(crate) const SPREAD_ABOVE: f64 = 0.9;
/// A Worker whose callbacks in one item took longer than this on average keeps a thread
/// of its own from then on.
pub(crate) const LONG_CALLBACK: Duration = Duration::from_millis(5);

/// One pool thread's load: its Worker tasks, and the time they spend running items.
pub(crate) struct ThreadLoad {
    /// Worker tasks placed on the thread and still running.
    workers: AtomicUsize,
    /// Of those, the blockers (see the module's protocol).
    blockers: AtomicUsize,
    busy_ns: AtomicU64,
    window: Mutex<Window>,
}

struct Window {
    started: Instant,
    busy_at_start: u64,
    /// Busy fraction over the last complete window.
    fraction: f64,
    /// Until then the thread takes part in no move.
    settled_at: Instant,
}

impl Default for ThreadLoad {
    fn default() -> Self {
        let now = Instant::now();
        Self {
            workers: AtomicUsize::new(0),
            blockers: AtomicUsize::new(0),
            busy_ns: AtomicU64::new(0),
            window: Mutex::new(Window {
                started: now,
                busy_at_start: 0,
                fraction: 0.0,
                settled_at: now,
            }),
        }
    }
}

impl ThreadLoad {
    /// Worker tasks placed on this thread.
    pub(crate) fn workers(&self) -> usize {
        self.workers.load(Ordering::Relaxed)
    }

    fn blockers(&self) -> usize {
        self.blockers.load(Ordering::Relaxed)
    }

    /// A Worker task on this thread ran items for `busy`.
    pub(crate) fn add_busy(&self, busy: Duration) {
        self.busy_ns
            .fetch_add(busy.as_nanos() as u64, Ordering::Relaxed);
    }

    /// The busy fraction over the last complete window (closing the window if it is
    /// over), and whether the thread is settled.
    fn sample(&self, now: Instant) -> (f64, bool) {
        let mut window = self.window.lock().unwrap();
        let elapsed = now.saturating_duration_since(window.started);
        if elapsed >= WINDOW {
            let busy = self.busy_ns.load(Ordering::Relaxed);
            window.fraction =
                busy.saturating_sub(window.busy_at_start) as f64 / elapsed.as_nanos() as f64;
            window.started = now;
            window.busy_at_start = busy;
        }
        (window.fraction, now >= window.settled_at)
    }

    fn unsettle(&self, now: Instant) {
        self.window.lock().unwrap().settled_at = now + SETTLE;
    }
}

/// Where a Worker task is placed on the pool: counted on its thread until dropped.
pub(crate) struct Home {
    pub(crate) index: usize,
    pub(crate) load: Arc<ThreadLoad>,
    blocker: bool,
}

impl Home {
    pub(crate) fn new(index: usize, load: Arc<ThreadLoad>) -> Self {
        load.workers.fetch_add(1, Ordering::Relaxed);
        Self {
            index,
            load,
            blocker: false,
        }
    }

    /// The Worker placed here blocks (see [`LONG_CALLBACK`]); counted on its thread
    /// until the home is dropped.
    pub(crate) fn mark_blocker(&mut self) {
        if !self.blocker {
            self.blocker = true;
            self.load.blockers.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        self.load.workers.fetch_sub(1, Ordering::Relaxed);
        if self.blocker {
            self.load.blockers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Whether the Worker task placed `at` one of the threads of `loads` should move, and
/// where to (see the module's protocol). Marks both threads unsettled when it says yes.
pub(crate) fn decide(loads: &[Arc<ThreadLoad>], at: &Home, now: Instant) -> Option<usize> {
    let home = at.index;
    let samples: Vec<(f64, bool)> = loads.iter().map(|load| load.sample(now)).collect();
    let (own, settled) = samples[home];
    if !settled {
        return None;
    }
    let workers: Vec<usize> = loads.iter().map(|load| load.workers()).collect();
    let blockers: Vec<usize> = loads.iter().map(|load| load.blockers()).collect();
    let samples = &samples;
    let others = || (0..loads.len()).filter(move |&t| t != home && samples[t].1);
    let gather = others()
        .filter(|&t| {
            !at.blocker
                && blockers[t] == 0
                && workers[t] > 0
                && (workers[t] > workers[home] || (workers[t] == workers[home] && t < home))
                && own + samples[t].0 < GATHER_BELOW
        })
        .max_by_key(|&t| workers[t]);
    // Where to go when leaving: the least busy other thread, if idle enough and free of
    // blockers.
    let idlest = || {
        others()
            .filter(|&t| blockers[t] == 0 && samples[t].0 < GATHER_BELOW)
            .min_by(|&a, &b| samples[a].0.total_cmp(&samples[b].0))
    };
    let saturated = own > SPREAD_ABOVE && workers[home] > 1;
    let beside_a_blocker = !at.blocker && blockers[home] > 0;
    let leave = || (saturated || beside_a_blocker).then(idlest).flatten();
    let target = gather.or_else(leave)?;
    loads[home].unsettle(now);
    loads[target].unsettle(now);
    Some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads with these Worker counts and busy fractions over one window.
    fn pool(threads: &[(usize, f64)]) -> (Vec<Arc<ThreadLoad>>, Vec<Home>, Instant) {
        pool_with_blockers(threads, &[])
    }

    /// The same, where the first Worker of each thread in `blocking` is a blocker.
    fn pool_with_blockers(
        threads: &[(usize, f64)],
        blocking: &[usize],
    ) -> (Vec<Arc<ThreadLoad>>, Vec<Home>, Instant) {
        let start = Instant::now() - 2 * SETTLE;
        let mut homes = Vec::new();
        let loads: Vec<_> = threads
            .iter()
            .enumerate()
            .map(|(index, &(workers, fraction))| {
                let load = Arc::new(ThreadLoad::default());
                {
                    let mut window = load.window.lock().unwrap();
                    window.started = start;
                    window.settled_at = start;
                }
                for n in 0..workers {
                    let mut home = Home::new(index, Arc::clone(&load));
                    if n == 0 && blocking.contains(&index) {
                        home.mark_blocker();
                    }
                    homes.push(home);
                }
                let busy = (fraction * (2 * SETTLE).as_nanos() as f64) as u64;
                load.busy_ns.store(busy, Ordering::Relaxed);
                load
            })
            .collect();
        (loads, homes, Instant::now())
    }

    /// The last Worker placed on thread `index`.
    fn at(homes: &[Home], index: usize) -> &Home {
        homes
            .iter()
            .rev()
            .find(|h| h.index == index)
            .expect("a Worker there")
    }

    #[test]
    fn light_workers_gather_on_the_thread_with_more_workers() {
        let (loads, homes, now) = pool(&[(2, 0.2), (1, 0.1)]);
        assert_eq!(decide(&loads, at(&homes, 1), now), Some(0));
    }

    #[test]
    fn on_a_tie_the_lower_index_keeps_its_workers() {
        let (loads, homes, now) = pool(&[(1, 0.1), (1, 0.1)]);
        assert_eq!(decide(&loads, at(&homes, 0), now), None);
        assert_eq!(decide(&loads, at(&homes, 1), now), Some(0));
    }

    #[test]
    fn busy_workers_stay_apart() {
        let (loads, homes, now) = pool(&[(1, 0.6), (1, 0.6)]);
        assert_eq!(decide(&loads, at(&homes, 0), now), None);
        assert_eq!(decide(&loads, at(&homes, 1), now), None);
    }

    #[test]
    fn a_saturated_thread_hands_a_worker_to_an_idle_one() {
        let (loads, homes, now) = pool(&[(2, 0.95), (0, 0.0)]);
        assert_eq!(decide(&loads, at(&homes, 0), now), Some(1));
    }

    #[test]
    fn a_saturated_thread_with_one_worker_keeps_it() {
        let (loads, homes, now) = pool(&[(1, 0.95), (0, 0.0)]);
        assert_eq!(decide(&loads, at(&homes, 0), now), None);
    }

    #[test]
    fn a_move_settles_both_threads_before_the_next() {
        let (loads, homes, now) = pool(&[(2, 0.2), (1, 0.1)]);
        assert_eq!(decide(&loads, at(&homes, 1), now), Some(0));
        assert_eq!(decide(&loads, at(&homes, 1), now), None);
        assert_eq!(
            decide(&loads, at(&homes, 1), now + SETTLE + WINDOW),
            Some(0)
        );
    }

    #[test]
    fn a_blocker_does_not_gather_and_nobody_gathers_onto_it() {
        // Thread 0: one light blocker; thread 1: one light Worker.
        let (loads, homes, now) = pool_with_blockers(&[(1, 0.1), (1, 0.1)], &[0]);
        assert_eq!(decide(&loads, at(&homes, 0), now), None);
        assert_eq!(decide(&loads, at(&homes, 1), now), None);
    }

    #[test]
    fn a_light_worker_leaves_a_blockers_thread() {
        // Thread 0: a blocker and a light Worker (the last placed); thread 1 idle.
        let (loads, homes, now) = pool_with_blockers(&[(2, 0.3), (0, 0.0)], &[0]);
        assert!(!at(&homes, 0).blocker);
        assert_eq!(decide(&loads, at(&homes, 0), now), Some(1));
        // The blocker itself stays.
        let (loads, homes, now) = pool_with_blockers(&[(2, 0.3), (0, 0.0)], &[0]);
        assert_eq!(decide(&loads, &homes[0], now), None);
    }

    #[test]
    fn a_saturated_thread_sends_no_worker_to_a_blockers_thread() {
        let (loads, homes, now) = pool_with_blockers(&[(2, 0.95), (1, 0.1)], &[1]);
        assert_eq!(decide(&loads, at(&homes, 0), now), None);
    }

    #[test]
    fn a_home_counts_its_worker_until_dropped() {
        let load = Arc::new(ThreadLoad::default());
        let mut home = Home::new(0, Arc::clone(&load));
        home.mark_blocker();
        home.mark_blocker();
        assert_eq!((load.workers(), load.blockers()), (1, 1));
        drop(home);
        assert_eq!((load.workers(), load.blockers()), (0, 0));
    }
}
