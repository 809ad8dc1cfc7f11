//! The one integration-test binary. Fixtures are catalogued in `tests/README.md`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code may fail loudly

mod avro;
mod changes;
mod chaos;
mod cli;
mod commit;
mod commit_path;
mod compact;
mod compare;
mod conformance;
mod coordinated;
mod delete;
mod edges;
mod faults;
mod follow_edges;
mod follow_live;
mod generated;
mod groups;
mod hostile;
mod ingest;
mod ingest_process;
mod kafka;
mod key_index;
mod layout;
mod maintenance;
mod mirror;
mod monitoring;
mod paths;
mod positions;
mod push;
mod robustness;
mod routing;
#[path = "../benches/support/s3.rs"]
mod s3_emulator;
mod schema_race;
mod storage;
mod support;
mod uniform;
mod uniform_glue;
mod uniform_sources;
mod upsert;
mod vacuum_safety;
mod values;
mod write;
mod write_input;
