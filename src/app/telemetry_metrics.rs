//! Every metric of `/metrics` as an OpenTelemetry instrument: one observable instrument per
//! registry family (counters as counters, gauges as gauges, a histogram as its `_sum` and
//! `_count` counters), each observing the process's live registries at export time with the
//! samples' labels as attributes. The registry stays the one place metrics are counted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::SdkMeterProvider;

use crate::metrics::exposition::{self, Sample};
use crate::metrics::Metrics;

/// One family of the registry: its name, type and help text.
#[derive(Debug, Clone, PartialEq)]
struct Family {
    name: String,
    kind: String,
    help: String,
}

/// The families the registry declares (`# TYPE` and `# HELP` lines of an exposition).
fn families(text: &str) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for line in text.lines() {
        if let Some((name, kind)) = line.strip_prefix("# TYPE ").and_then(|r| r.split_once(' ')) {
            match out.iter_mut().find(|f| f.name == name) {
                Some(f) => f.kind = kind.into(),
                None => out.push(Family { name: name.into(), kind: kind.into(), help: String::new() }),
            }
        } else if let Some((name, help)) = line.strip_prefix("# HELP ").and_then(|r| r.split_once(' ')) {
            if let Some(f) = out.iter_mut().find(|f| f.name == name) {
                f.help = help.to_string();
            } else {
                out.push(Family { name: name.into(), kind: String::new(), help: help.into() });
            }
        }
    }
    out
}

/// The live registries' samples, read at most once a second however many instruments ask.
#[derive(Debug, Default)]
struct Cache(Mutex<Option<(Instant, Arc<Vec<Sample>>)>>);

impl Cache {
    fn samples(&self) -> Arc<Vec<Sample>> {
        let mut cached = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match cached.as_ref() {
            Some((at, samples)) if at.elapsed() < Duration::from_secs(1) => samples.clone(),
            _ => {
                let samples = Arc::new(exposition::parse(&Metrics::render_live()));
                *cached = Some((Instant::now(), samples.clone()));
                samples
            }
        }
    }
}

fn attributes(s: &Sample) -> Vec<KeyValue> {
    s.labels.iter().filter(|(k, _)| k != "le").map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect()
}

/// Registers an observable instrument per family on `provider`'s meter.
pub(super) fn observe(provider: &SdkMeterProvider) {
    let meter = provider.meter("deltabus");
    let cache = Arc::new(Cache::default());
    for family in families(&Metrics::specimen().render()) {
        // (instrument name, sample name, counter or gauge)
        let series: Vec<(String, String, bool)> = match family.kind.as_str() {
            "counter" => vec![(family.name.clone(), format!("{}_total", family.name), true)],
            "gauge" => vec![(family.name.clone(), family.name.clone(), false)],
            "histogram" => vec![
                (format!("{}_sum", family.name), format!("{}_sum", family.name), true),
                (format!("{}_count", family.name), format!("{}_count", family.name), true),
            ],
            _ => Vec::new(),
        };
        for (instrument, sample, counter) in series {
            let cache = cache.clone();
            let read = move || -> Vec<(f64, Vec<KeyValue>)> {
                cache.samples().iter().filter(|s| s.name == sample).map(|s| (s.value, attributes(s))).collect()
            };
            if counter {
                meter
                    .f64_observable_counter(instrument)
                    .with_description(family.help.clone())
                    .with_callback(move |o| read().iter().for_each(|(v, a)| o.observe(*v, a)))
                    .build();
            } else {
                meter
                    .f64_observable_gauge(instrument)
                    .with_description(family.help.clone())
                    .with_callback(move |o| read().iter().for_each(|(v, a)| o.observe(*v, a)))
                    .build();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registry_family_is_read_with_its_type() {
        let all = families(&Metrics::specimen().render());
        let kind = |n: &str| all.iter().find(|f| f.name == n).map(|f| f.kind.as_str());
        assert_eq!(kind("deltabus_records_in"), Some("counter"));
        assert_eq!(kind("deltabus_commit_seconds"), Some("histogram"));
        assert_eq!(kind("deltabus_lag_records"), Some("gauge"));
        assert!(all.iter().all(|f| !f.help.is_empty()), "{all:?}");
    }
}
