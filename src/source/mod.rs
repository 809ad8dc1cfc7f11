//! Sources of records for `deltabus run` (issue 4).
//!
//! - [`kafka`]: the Kafka source; today its payload decoder (raw bytes straight into Arrow,
//!   undecodable records to dead letters).

pub mod kafka;
