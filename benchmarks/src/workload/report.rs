//! The one JSON line a run prints: a `serde_json` object whose keys keep the order they
//! were added in (the `preserve_order` feature), so every run's line reads alike.

use crate::{thread_cpu, Latencies};
use rclrs_tokio_executor::{ExecutorStats, StageLatencies, ThreadSetting};
use serde::Serialize;
use serde_json::{json, Map, Number, Value};
use std::collections::BTreeMap;

/// A JSON object built key by key.
#[derive(Default, Debug, Clone)]
pub struct Report {
    fields: Map<String, Value>,
}

impl Report {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// A string value.
    pub fn text(mut self, key: &str, value: &str) -> Self {
        self.fields.insert(key.into(), Value::from(value));
        self
    }

    /// An integer value (null if it fits in neither i64 nor u64).
    pub fn int(mut self, key: &str, value: impl Into<i128>) -> Self {
        let value = value.into();
        let json = match (i64::try_from(value), u64::try_from(value)) {
            (Ok(v), _) => Value::from(v),
            (_, Ok(v)) => Value::from(v),
            _ => Value::Null,
        };
        self.fields.insert(key.into(), json);
        self
    }

    /// A number rounded to `decimals` digits after the point; NaN and infinities become
    /// null.
    pub fn num(mut self, key: &str, value: f64, decimals: i32) -> Self {
        let scale = 10f64.powi(decimals);
        let rounded = (value * scale).round() / scale;
        let json = Number::from_f64(rounded).map_or(Value::Null, Value::Number);
        self.fields.insert(key.into(), json);
        self
    }

    /// A number, or null.
    pub fn opt(self, key: &str, value: Option<f64>, decimals: i32) -> Self {
        match value {
            Some(v) => self.num(key, v, decimals),
            None => self.null(key),
        }
    }

    /// A boolean value.
    pub fn flag(mut self, key: &str, value: bool) -> Self {
        self.fields.insert(key.into(), Value::from(value));
        self
    }

    /// `null`: the value is not this process's to know (the harness fills it in).
    pub fn null(mut self, key: &str) -> Self {
        self.fields.insert(key.into(), Value::Null);
        self
    }

    /// Any serializable value: a list, or a nested object (null if it cannot be
    /// represented in JSON).
    pub fn value(mut self, key: &str, value: impl Serialize) -> Self {
        let json = serde_json::to_value(value).unwrap_or(Value::Null);
        self.fields.insert(key.into(), json);
        self
    }

    /// A nested object.
    pub fn nested(mut self, key: &str, inner: Report) -> Self {
        self.fields.insert(key.into(), Value::Object(inner.fields));
        self
    }

    /// `latency_samples` and the p50/p99/p999/max quantiles in microseconds.
    pub fn latencies(self, latencies: &Latencies) -> Self {
        self.latencies_as("latency", latencies)
    }

    /// `<prefix>_samples` and the `<prefix>_p50_us`, `_p99_us`, `_p999_us` and `_max_us`
    /// quantiles: one stream's latencies among several (`control_latency_*`).
    pub fn latencies_as(self, prefix: &str, latencies: &Latencies) -> Self {
        let q = |p| latencies.quantile_us(p);
        self.int(&format!("{prefix}_samples"), latencies.len() as i128)
            .opt(&format!("{prefix}_p50_us"), q(0.5), 1)
            .opt(&format!("{prefix}_p99_us"), q(0.99), 1)
            .opt(&format!("{prefix}_p999_us"), q(0.999), 1)
            .opt(&format!("{prefix}_max_us"), q(1.0), 1)
    }

    /// The middleware's receive threads over a window of `wall_s` seconds that saw
    /// `received` deliveries: `receive_cpu_pct` (of one core), `receive_cpu_per_msg_us`,
    /// and every thread name's CPU (`thread_cpu_pct`), from [`crate::thread_cpu`].
    pub fn receive_threads(
        self,
        seconds: &BTreeMap<String, f64>,
        wall_s: f64,
        received: u64,
    ) -> Self {
        let receive_s = thread_cpu::receive_seconds(seconds);
        let pct = seconds.iter().fold(Report::new(), |pct, (name, s)| {
            pct.num(name, 100.0 * s / wall_s, 1)
        });
        self.num("receive_cpu_pct", 100.0 * receive_s / wall_s, 1)
            .opt(
                "receive_cpu_per_msg_us",
                (received > 0).then(|| 1e6 * receive_s / received as f64),
                3,
            )
            .value("thread_cpu_pct", pct.fields)
    }

    /// The Tokio executor's counters, summed over its Workers (`executor_stats`), and,
    /// while stage tracing was on, each stage's quantiles in µs (`stages`). Nothing
    /// for the other executors.
    pub fn introspection(self, stats: Option<&ExecutorStats>) -> Self {
        let Some(stats) = stats else {
            return self;
        };
        let workers = stats.workers();
        let sum = |field: fn(&rclrs_tokio_executor::WorkerStats) -> u64| {
            workers.iter().map(field).sum::<u64>()
        };
        let report = self.value(
            "executor_stats",
            json!({
                "workers": workers.len(),
                "callbacks": sum(|w| w.callbacks),
                "empty_takes": sum(|w| w.empty_takes),
                "panics": sum(|w| w.panics),
                "pending": sum(|w| w.pending),
                "lingers": sum(|w| w.lingers),
                "busy_ms": workers.iter().map(|w| w.busy.as_secs_f64() * 1e3).sum::<f64>().round(),
            }),
        );
        // Dedicated Workers: how many, and what their threads got of what they asked.
        let dedicated: Vec<_> = workers.iter().filter_map(|w| w.dedicated).collect();
        let report = if dedicated.is_empty() {
            report
        } else {
            let name = |p: ThreadSetting| match p {
                ThreadSetting::NotRequested => "not_requested",
                ThreadSetting::Applied => "applied",
                ThreadSetting::Refused => "refused",
            };
            report.value(
                "dedicated",
                json!({
                    "workers": dedicated.len(),
                    "affinity": name(dedicated[0].affinity),
                    "fifo_priority": name(dedicated[0].fifo_priority),
                }),
            )
        };
        match stats.stage_latencies() {
            Some(stages) => report.value("stages", stage_quantiles(&stages)),
            None => report,
        }
    }

    /// sent, received, dropped and drop_pct for `expected` deliveries.
    pub fn deliveries(self, expected: u64, received: u64) -> Self {
        let dropped = expected.saturating_sub(received);
        self.int("sent", expected)
            .int("received", received)
            .int("dropped", dropped)
            .num(
                "drop_pct",
                100.0 * dropped as f64 / expected.max(1) as f64,
                2,
            )
    }

    /// The object as one line.
    pub fn to_json(&self) -> String {
        Value::Object(self.fields.clone()).to_string()
    }
}

/// `{stage: {count, p50_us, p99_us, p999_us, max_us}}`, stages in pipeline order.
fn stage_quantiles(stages: &StageLatencies) -> Value {
    let us = |d: std::time::Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
    let mut object = Map::new();
    for (stage, summary) in stages.summaries() {
        object.insert(
            stage.name().into(),
            json!({
                "count": summary.count,
                "p50_us": us(summary.p50),
                "p99_us": us(summary.p99),
                "p999_us": us(summary.p999),
                "max_us": us(summary.max),
            }),
        );
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_values_their_types() {
        let json = Report::new()
            .text("executor", "rclrs_\"tokio\"")
            .int("sent", 3u64)
            .num("rate", 1.26, 1)
            .num("bad", f64::NAN, 1)
            .flag("reliable", true)
            .null("dropped")
            .to_json();
        assert_eq!(
            json,
            r#"{"executor":"rclrs_\"tokio\"","sent":3,"rate":1.3,"bad":null,"reliable":true,"dropped":null}"#
        );
    }

    #[test]
    fn deliveries_count_drops_against_what_was_expected() {
        let json = Report::new().deliveries(8, 6).to_json();
        assert!(json.contains(r#""dropped":2,"drop_pct":25.0"#), "{json}");
    }
}
