//! The composition root of `deltabus run`: the stages wired from the checked configuration.
//!
//! - [`service`]: several pipelines in one process (Kafka ingest, Delta sources, push
//!   tables), a pipeline per topic of a list or pattern, new matching topics found while
//!   running, one schema-registry client per registry, the metrics endpoint, the background
//!   compactors and coordinated committers, graceful shutdown under one deadline.
//! - [`delta_source`]: a pipeline that follows another Delta table into its target, through
//!   the change feed's follower loops and sinks (table, group slices, both mirrors).
//! - [`telemetry`]: OpenTelemetry export of the process's spans and (through
//!   [`telemetry_metrics`]) its metrics over OTLP, when configured.

internal_mods!(delta_source);
internal_mods!(service);
internal_mods!(telemetry);
internal_mods!(telemetry_metrics);
