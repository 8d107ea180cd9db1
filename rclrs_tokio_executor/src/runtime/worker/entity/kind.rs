//! Everything the executor decides per entity kind, in one table: which kinds have a
//! push path, which are ticked by the timer scheduler, which are drained to empty (and
//! so may be paused, swept and napped after), the parts rclrs executes separately and,
//! per part, whether a take may skip a sample and whether ticks run it.
//!
//! A new rcl entity kind, or a change of how one is served, starts here; the code that
//! acts on these rules (registration, the drain, the fallback waiter) asks this table
//! rather than matching on [`RclPrimitiveKind`] itself.

use rclrs::{ActionClientReady, ActionServerReady, RclPrimitiveKind, ReadyKind};

/// How the executor serves one entity kind.
#[derive(Debug)]
pub(crate) struct KindRules {
    /// rcl offers a push callback for it; a kind without one is waited on by the
    /// Worker's fallback wait set (`fallback_waiter.rs`).
    pub(crate) push_path: bool,
    /// How the timer scheduler drives it.
    pub(crate) ticks: Ticks,
    /// A message stream: its drain claims a backlog, may pause its notifications,
    /// sweeps after registering or resuming, and a backlog makes its Worker nap
    /// (`worker_task/drain.rs`).
    pub(crate) stream: bool,
    /// A Worker's guard condition: its triggers announce new entities and drops, and it
    /// runs no user callback (so it is not listed among the Worker's entities).
    pub(crate) trigger: bool,
    /// Its name in log messages where it has no topic or service name of its own.
    pub(crate) log_name: &'static str,
}

/// What the timer scheduler does for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ticks {
    /// Nothing.
    None,
    /// The entity is a timer: the scheduler ticks its only part.
    OwnTimer,
    /// An action server: the scheduler ticks its goal expiry (its last part) from the
    /// timer rcl_action arms inside it (patch 0011).
    GoalExpiry,
}

const fn rules(push_path: bool, ticks: Ticks, stream: bool, log_name: &'static str) -> KindRules {
    KindRules {
        push_path,
        ticks,
        stream,
        trigger: false,
        log_name,
    }
}

const SUBSCRIPTION: KindRules = rules(true, Ticks::None, true, "<subscription>");
const SERVICE: KindRules = rules(true, Ticks::None, false, "<service>");
const CLIENT: KindRules = rules(true, Ticks::None, false, "<client>");
const TIMER: KindRules = rules(false, Ticks::OwnTimer, false, "<timer>");
const GUARD_CONDITION: KindRules = KindRules {
    trigger: true,
    ..rules(true, Ticks::None, false, "<guard condition>")
};
const EVENT: KindRules = rules(false, Ticks::None, false, "<QoS event>");
const ACTION_SERVER: KindRules = rules(true, Ticks::GoalExpiry, false, "<action server>");
const ACTION_CLIENT: KindRules = rules(true, Ticks::None, false, "<action client>");

/// The rules of `kind`.
pub(crate) fn rules_of(kind: RclPrimitiveKind) -> &'static KindRules {
    match kind {
        RclPrimitiveKind::Subscription => &SUBSCRIPTION,
        RclPrimitiveKind::Service => &SERVICE,
        RclPrimitiveKind::Client => &CLIENT,
        RclPrimitiveKind::Timer => &TIMER,
        RclPrimitiveKind::GuardCondition => &GUARD_CONDITION,
        RclPrimitiveKind::Event => &EVENT,
        RclPrimitiveKind::ActionServer => &ACTION_SERVER,
        RclPrimitiveKind::ActionClient => &ACTION_CLIENT,
    }
}

/// One part of an entity that rclrs executes separately.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Part {
    /// What rclrs is told to execute.
    pub(crate) ready: ReadyKind,
    /// A take of it can fail while rmw still holds samples after the one it dropped:
    /// requests and responses (a response meant for another client of the same service,
    /// or a sample without data). Its drain runs once per claimed arrival instead of
    /// stopping at the first failed take (see the entity module's "Coalescing").
    pub(crate) take_can_skip: bool,
    /// Run by the timer scheduler's ticks, once per tick.
    pub(crate) ticked: bool,
}

const fn part(ready: ReadyKind, take_can_skip: bool, ticked: bool) -> Part {
    Part {
        ready,
        take_can_skip,
        ticked,
    }
}

/// The parts of an entity of `kind`, in the order their arrival counts are kept. A
/// ticked part comes last.
pub(crate) fn parts_of(kind: RclPrimitiveKind) -> Vec<Part> {
    let server = |set: fn(&mut ActionServerReady)| {
        let mut ready = ActionServerReady::default();
        set(&mut ready);
        ReadyKind::ActionServer(ready)
    };
    let client = |set: fn(&mut ActionClientReady)| {
        let mut ready = ActionClientReady::default();
        set(&mut ready);
        ReadyKind::ActionClient(ready)
    };
    match kind {
        RclPrimitiveKind::ActionServer => vec![
            part(server(|r| r.goal_request = true), true, false),
            part(server(|r| r.cancel_request = true), true, false),
            part(server(|r| r.result_request = true), true, false),
            part(server(|r| r.goal_expired = true), false, true),
        ],
        RclPrimitiveKind::ActionClient => vec![
            part(client(|r| r.goal_response = true), true, false),
            part(client(|r| r.cancel_response = true), true, false),
            part(client(|r| r.result_response = true), true, false),
            part(client(|r| r.feedback = true), false, false),
            part(client(|r| r.status = true), false, false),
        ],
        RclPrimitiveKind::Service | RclPrimitiveKind::Client => {
            vec![part(ReadyKind::Basic, true, false)]
        }
        RclPrimitiveKind::Timer => vec![part(ReadyKind::Basic, false, true)],
        _ => vec![part(ReadyKind::Basic, false, false)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [RclPrimitiveKind; 8] = [
        RclPrimitiveKind::Subscription,
        RclPrimitiveKind::Service,
        RclPrimitiveKind::Client,
        RclPrimitiveKind::Timer,
        RclPrimitiveKind::GuardCondition,
        RclPrimitiveKind::Event,
        RclPrimitiveKind::ActionServer,
        RclPrimitiveKind::ActionClient,
    ];

    fn name(kind: RclPrimitiveKind) -> &'static str {
        rules_of(kind).log_name
    }

    #[test]
    fn a_ticked_part_is_last_and_only_where_the_scheduler_ticks() {
        for kind in KINDS {
            let parts = parts_of(kind);
            let ticked: Vec<usize> = (0..parts.len()).filter(|&i| parts[i].ticked).collect();
            match rules_of(kind).ticks {
                Ticks::None => assert!(ticked.is_empty(), "{}", name(kind)),
                Ticks::OwnTimer | Ticks::GoalExpiry => {
                    assert_eq!(ticked, vec![parts.len() - 1], "{}", name(kind))
                }
            }
        }
    }

    #[test]
    fn only_requests_and_responses_may_skip_a_take() {
        for kind in KINDS {
            let skipping = parts_of(kind).iter().filter(|p| p.take_can_skip).count();
            let expected = match kind {
                RclPrimitiveKind::Service | RclPrimitiveKind::Client => 1,
                // Goal, cancel and result: requests, or responses.
                RclPrimitiveKind::ActionServer | RclPrimitiveKind::ActionClient => 3,
                _ => 0,
            };
            assert_eq!(skipping, expected, "{}", name(kind));
        }
    }

    #[test]
    fn every_part_of_a_kind_is_distinct() {
        for kind in KINDS {
            let parts = parts_of(kind);
            for (i, a) in parts.iter().enumerate() {
                assert!(
                    parts[i + 1..].iter().all(|b| b.ready != a.ready),
                    "{}",
                    name(kind)
                );
            }
        }
    }
}
