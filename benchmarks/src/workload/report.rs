//! The one JSON line a run prints: keys in insertion order, numbers, strings, booleans
//! and `null`.

use crate::Latencies;
use std::fmt::Write;

/// A flat JSON object built key by key.
#[derive(Default)]
pub struct Report {
    fields: Vec<(String, String)>,
}

impl Report {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// A string value.
    pub fn text(mut self, key: &str, value: &str) -> Self {
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        self.fields.push((key.into(), format!("\"{escaped}\"")));
        self
    }

    /// An integer value.
    pub fn int(mut self, key: &str, value: impl Into<i128>) -> Self {
        self.fields.push((key.into(), value.into().to_string()));
        self
    }

    /// A number with `decimals` digits after the point; NaN and infinities become null.
    pub fn num(mut self, key: &str, value: f64, decimals: usize) -> Self {
        let text = if value.is_finite() {
            format!("{value:.decimals$}")
        } else {
            "null".into()
        };
        self.fields.push((key.into(), text));
        self
    }

    /// A number, or null.
    pub fn opt(self, key: &str, value: Option<f64>, decimals: usize) -> Self {
        match value {
            Some(v) => self.num(key, v, decimals),
            None => self.null(key),
        }
    }

    /// A boolean value.
    pub fn flag(mut self, key: &str, value: bool) -> Self {
        self.fields.push((key.into(), value.to_string()));
        self
    }

    /// `null`: the value is not this process's to know (the harness fills it in).
    pub fn null(mut self, key: &str) -> Self {
        self.fields.push((key.into(), "null".into()));
        self
    }

    /// `latency_samples` and the p50/p99/p999/max quantiles in microseconds.
    pub fn latencies(self, latencies: &Latencies) -> Self {
        let q = |p| latencies.quantile_us(p);
        self.int("latency_samples", latencies.len() as i128)
            .opt("latency_p50_us", q(0.5), 1)
            .opt("latency_p99_us", q(0.99), 1)
            .opt("latency_p999_us", q(0.999), 1)
            .opt("latency_max_us", q(1.0), 1)
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
        let mut out = String::from("{");
        for (i, (key, value)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "\"{key}\": {value}");
        }
        out.push('}');
        out
    }
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
            "{\"executor\": \"rclrs_\\\"tokio\\\"\", \"sent\": 3, \"rate\": 1.3, \
             \"bad\": null, \"reliable\": true, \"dropped\": null}"
        );
    }

    #[test]
    fn deliveries_count_drops_against_what_was_expected() {
        let json = Report::new().deliveries(8, 6).to_json();
        assert!(
            json.contains("\"dropped\": 2, \"drop_pct\": 25.00"),
            "{json}"
        );
    }
}
