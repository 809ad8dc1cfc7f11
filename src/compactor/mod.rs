//! The compactor: rewrites small files, and files with many rows deleted by deletion vectors,
//! into large ones with `dataChange=false`, beside live ingest.
//!
//! - [`planner`] [sync]: which files, grouped into bins per partition.
//! - [`rewriter`]: reads each bin with its DVs applied, writes new files, and commits the bin
//!   on its own (progress survives a crash; rows deleted in its inputs meanwhile are carried
//!   onto its outputs; a bin whose inputs were removed meanwhile is abandoned, never the whole
//!   run).
//! - [`cluster`] [sync]: on clustered tables, which files a run clusters (incremental, bounded
//!   bins) and the Hilbert order of rank-normalised clustering columns their rows are written in.
//! - [`remap`] [sync]: where rows deleted during a rewrite land in its outputs.
//! - [`background`]: the compactor beside a pipeline, every `interval` (wired by the
//!   composition root, for routed tables too).

internal_mods!(background);
internal_mods!(cluster);
internal_mods!(planner);
internal_mods!(remap);
internal_mods!(rewriter);
