//! Compaction planning: per partition, the candidate files and their bins.
//!
//! A file is a candidate when it is smaller than `min_file_size`, or when its deletion vector
//! removes more than `dv_ratio` of its rows (or its row count is unknown). A partition with
//! fewer than `min_partition_candidates` candidates keeps only the latter. Candidates are
//! packed first-fit, smallest first, into bins of about `target_size` bytes. A bin of one file
//! is kept only when that file carries a DV (rewriting it purges the deleted rows).

use std::collections::BTreeMap;

use crate::delta::actions::{Add, PartitionValues};

/// Planner settings.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct PlanConfig {
    /// Bins aim at this many bytes (default 128 MiB, or `delta.targetFileSize`).
    pub target_size: u64,
    /// Files below this size are candidates (default: the target size).
    pub min_file_size: u64,
    /// Files whose DV deletes more than this fraction of rows are candidates (default 0.05).
    pub dv_ratio: f64,
    /// Partitions with fewer candidates are left alone (default 0: any; the background
    /// compactor of `deltabus run` uses 50, as Spark's auto compaction).
    pub min_partition_candidates: usize,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig { target_size: 128 << 20, min_file_size: 128 << 20, dv_ratio: 0.05, min_partition_candidates: 0 }
    }
}

/// Files to rewrite together.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bin {
    pub partition_values: PartitionValues,
    pub files: Vec<Add>,
}

impl Bin {
    /// Total input bytes.
    pub(crate) fn bytes(&self) -> i64 {
        // (Saturating: sizes are the log's claims.)
        self.files.iter().map(|f| f.size).fold(0, i64::saturating_add)
    }
}

fn is_candidate(a: &Add, cfg: &PlanConfig) -> bool {
    (a.size as u64) < cfg.min_file_size || dv_heavy(a, cfg)
}

/// Whether a file's DV deletes more than `dv_ratio` of its rows (or its row count is unknown).
fn dv_heavy(a: &Add, cfg: &PlanConfig) -> bool {
    match &a.deletion_vector {
        Some(dv) => match a.num_records() {
            Some(n) if n > 0 => dv.cardinality as f64 / n as f64 > cfg.dv_ratio,
            _ => true,
        },
        None => false,
    }
}

/// Plans the bins for `files`, keeping only partitions accepted by `keep`.
pub(crate) fn plan(files: &[&Add], cfg: &PlanConfig, keep: &dyn Fn(&PartitionValues) -> bool) -> Vec<Bin> {
    let mut by_partition: BTreeMap<Vec<(String, Option<String>)>, Vec<&Add>> = BTreeMap::new();
    for f in files.iter().copied().filter(|f| keep(&f.partition_values) && is_candidate(f, cfg)) {
        let mut key: Vec<(String, Option<String>)> =
            f.partition_values.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        key.sort();
        by_partition.entry(key).or_default().push(f);
    }
    let mut bins = Vec::new();
    for (key, mut files) in by_partition {
        // A partition below the count still purges its DV-heavy files.
        if files.len() < cfg.min_partition_candidates {
            files.retain(|f| dv_heavy(f, cfg));
        }
        files.sort_by(|a, b| a.size.cmp(&b.size).then_with(|| a.path.cmp(&b.path)));
        let mut current: Vec<Add> = Vec::new();
        let mut size = 0u64;
        let flush = |current: &mut Vec<Add>, bins: &mut Vec<Bin>| {
            let worth = current.len() > 1 || current.iter().any(|f| f.deletion_vector.is_some());
            if worth {
                bins.push(Bin { partition_values: key.iter().cloned().collect(), files: std::mem::take(current) });
            } else {
                current.clear();
            }
        };
        for f in files {
            // (A negative size in the log counts as none.)
            let bytes = u64::try_from(f.size).unwrap_or(0);
            if !current.is_empty() && size.saturating_add(bytes) > cfg.target_size {
                flush(&mut current, &mut bins);
                size = 0;
            }
            size = size.saturating_add(bytes);
            current.push(f.clone());
        }
        flush(&mut current, &mut bins);
    }
    bins
}

/// Parses a partition predicate: `col = value [AND col = value ...]`, values optionally
/// quoted; `col IS NULL` for the null partition.
///
/// # Errors
/// A message naming the part that does not parse.
pub(crate) fn parse_partition_predicate(s: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let mut out = Vec::new();
    for part in split_and(s) {
        let part = part.trim();
        if let Some(col) = part.strip_suffix("IS NULL").or_else(|| part.strip_suffix("is null")) {
            out.push((col.trim().to_string(), None));
            continue;
        }
        let (col, value) = part.split_once('=').ok_or_else(|| format!("{part:?} is not `column = value`"))?;
        let value = value.trim();
        let value = value
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
            .unwrap_or(value);
        if col.trim().is_empty() {
            return Err(format!("{part:?} has no column"));
        }
        out.push((col.trim().to_string(), Some(value.to_string())));
    }
    if out.is_empty() {
        return Err("empty predicate".into());
    }
    Ok(out)
}

fn split_and(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = s;
    loop {
        let lower = rest.to_ascii_lowercase();
        match lower.find(" and ") {
            Some(i) => {
                parts.push(&rest[..i]);
                rest = &rest[i + 5..];
            }
            None => {
                parts.push(rest);
                return parts;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::dv::DeletionVectorDescriptor;

    fn file(path: &str, p: &str, size: i64, records: i64, deleted: Option<i64>) -> Add {
        Add {
            path: path.into(),
            partition_values: [("p".to_string(), Some(p.to_string()))].into_iter().collect(),
            size,
            modification_time: 0,
            data_change: false,
            stats: Some(format!(r#"{{"numRecords":{records}}}"#)),
            tags: None,
            deletion_vector: deleted.map(|c| DeletionVectorDescriptor {
                storage_type: "u".into(),
                path_or_inline_dv: "vBn[lx{q8@P<9BNH/isA".into(),
                offset: Some(1),
                size_in_bytes: 36,
                cardinality: c,
            }),
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        }
    }

    #[test]
    fn bins_small_files_per_partition() {
        let cfg = PlanConfig { target_size: 100, min_file_size: 60, dv_ratio: 0.05, min_partition_candidates: 0 };
        let files = [
            file("a1", "a", 40, 10, None),
            file("a2", "a", 40, 10, None),
            file("a3", "a", 40, 10, None),
            file("big", "a", 500, 100, None),
            file("b1", "b", 10, 10, None),
            file("c-dv", "c", 500, 100, Some(10)),
            file("d-dv-small-ratio", "d", 500, 1000, Some(1)),
        ];
        let refs: Vec<&Add> = files.iter().collect();
        let bins = plan(&refs, &cfg, &|_| true);
        let names: Vec<Vec<&str>> = bins.iter().map(|b| b.files.iter().map(|f| f.path.as_str()).collect()).collect();
        assert_eq!(names, vec![vec!["a1", "a2"], vec!["c-dv"]], "a3 alone and b1 alone are not worth rewriting");
        let only_a = plan(&refs, &cfg, &|pv| pv.get("p") == Some(&Some("a".into())));
        assert_eq!(only_a.len(), 1);
        // Auto compaction: only partitions holding enough candidates.
        let busy = PlanConfig { min_partition_candidates: 3, ..cfg };
        let busy_bins = plan(&refs, &busy, &|_| true);
        let names: Vec<Vec<&str>> =
            busy_bins.iter().map(|b| b.files.iter().map(|f| f.path.as_str()).collect()).collect();
        assert_eq!(
            names,
            vec![vec!["a1", "a2"], vec!["c-dv"]],
            "partition a has 3 candidates; b one small file (left), c a DV-heavy file (purged anyway)"
        );
    }

    /// Properties over random file sets (a deterministic xorshift source): every planned file
    /// is a candidate of the bin's partition, appears once, bins stay near the target, and
    /// one-file bins only purge DVs.
    #[test]
    fn planning_properties_hold_for_random_tables() {
        let mut raw = crate::delta::test_rng::xorshift(0x2545_F491_4F6C_DD1Du64);
        let mut rnd = |n: u64| raw() % n.max(1);
        for _ in 0..200 {
            let cfg = PlanConfig {
                target_size: 50 + rnd(500),
                min_file_size: 10 + rnd(400),
                dv_ratio: 0.05,
                min_partition_candidates: 0,
            };
            let files: Vec<Add> = (0..rnd(60))
                .map(|i| {
                    let records = 1 + rnd(1000) as i64;
                    let dv = (rnd(4) == 0).then(|| rnd(records as u64) as i64);
                    file(&format!("f{i}"), &format!("p{}", rnd(4)), 1 + rnd(600) as i64, records, dv)
                })
                .collect();
            let refs: Vec<&Add> = files.iter().collect();
            let bins = plan(&refs, &cfg, &|_| true);
            let mut seen = std::collections::HashSet::new();
            for bin in &bins {
                assert!(!bin.files.is_empty());
                if bin.files.len() == 1 {
                    assert!(bin.files[0].deletion_vector.is_some(), "a lone file is rewritten only to purge its DV");
                }
                let largest = bin.files.iter().map(|f| f.size as u64).max().unwrap_or(0);
                assert!(bin.bytes() as u64 <= cfg.target_size + largest, "bins stop near the target");
                for f in &bin.files {
                    assert_eq!(f.partition_values, bin.partition_values, "one partition per bin");
                    assert!(is_candidate(f, &cfg), "only candidates are rewritten");
                    assert!(seen.insert(f.path.clone()), "a file is planned once");
                }
            }
            // Every candidate with a DV is planned (it is never left holding deleted rows).
            for f in files.iter().filter(|f| f.deletion_vector.is_some() && is_candidate(f, &cfg)) {
                assert!(seen.contains(&f.path), "{} has a DV above the ratio but was not planned", f.path);
            }
        }
    }

    #[test]
    fn predicates() {
        assert_eq!(
            parse_partition_predicate("p = 'x' AND q=3 and r IS NULL").unwrap(),
            vec![("p".into(), Some("x".into())), ("q".into(), Some("3".into())), ("r".into(), None)]
        );
        assert!(parse_partition_predicate("p > 3").is_err());
    }
}
