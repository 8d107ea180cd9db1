//! One Worker: its task and its turns ([`worker_task`]), the mailbox push callbacks send
//! into ([`mailbox`]), its push-registered entities ([`entity`], with the per-kind table
//! in `entity/kind.rs`), a turn's budget ([`turn`]), the async tasks it polls
//! ([`async_tasks`], counted by [`task_counters`]), the wait set for what has no push
//! path ([`fallback_waiter`]), how a contained panic is reported ([`panics`]), and the
//! executor's list of Workers with a spin's backlog over them ([`workers`]).

pub(crate) mod async_tasks;
pub(crate) mod entity;
pub(crate) mod fallback_waiter;
pub(crate) mod mailbox;
pub(crate) mod panics;
pub(crate) mod task_counters;
pub(crate) mod turn;
pub(crate) mod worker_task;
pub(crate) mod workers;
