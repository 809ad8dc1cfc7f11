//! [sync] The key index of keyed tables, without I/O: key → (data file, row position), so that a
//! keyed flush finds the rows its keys already have without reading the table.
//!
//! - [`index`]: the in-memory index with its memory bound, caught up from the log's adds and
//!   removes.
//! - [`sidecar`]: the immutable per-data-file sidecar it is persisted in, and its file names.
//!
//! The storage shell (`storage/key_index.rs`) reads and writes the sidecars and keeps one index
//! per table.

internal_mods!(index, sidecar);
