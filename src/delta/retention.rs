//! What maintenance may delete (digest §11): data files unreferenced for longer than the
//! retention threshold (VACUUM), and log files older than the log retention that no retained
//! checkpoint needs (metadata cleanup). Pure decisions over listings; the shell deletes.

use std::collections::HashSet;

use super::log_segment::{parse_log_name, LogFileKind, LogListing};

/// The largest retention accepted from a user, in hours (about 1,000 years).
pub(crate) const MAX_RETENTION_HOURS: u64 = 24 * 366 * 1000;

/// `now - retention` in milliseconds, saturating: a huge retention (a table property of
/// billions of weeks) keeps everything instead of wrapping around into the future.
pub(crate) fn cutoff_ms(now_ms: i64, retention: std::time::Duration) -> i64 {
    now_ms.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX))
}

/// Whether a path (relative to the table root) lies in a hidden directory or is a hidden file:
/// a segment starting with `_` or `.`, except `_change_data` and `_col=value` partition
/// directories. VACUUM never touches hidden paths (including `_delta_log`).
pub(crate) fn is_hidden(rel: &str) -> bool {
    rel.split('/')
        .any(|seg| (seg.starts_with('_') || seg.starts_with('.')) && seg != "_change_data" && !seg.contains('='))
}

/// VACUUM candidates: files not hidden, not in `keep`, and last modified before `cutoff_ms`.
pub(crate) fn vacuum_candidates<'a>(
    files: &'a [(String, u64, i64)],
    keep: &HashSet<String>,
    cutoff_ms: i64,
) -> Vec<&'a (String, u64, i64)> {
    files.iter().filter(|(rel, _, modified)| !is_hidden(rel) && !keep.contains(rel) && *modified < cutoff_ms).collect()
}

/// Log files that metadata cleanup may delete: with `cutoff_ms` the retention boundary (Spark
/// rounds it down to midnight UTC), the newest commit at or before it bounds the newest
/// complete checkpoint that may anchor the table; every commit, checkpoint and checksum file
/// with a lower version goes. The anchor checkpoint, its commit, and everything later stay.
///
/// `keep_from` is the oldest version a registered follower still needs: the anchor is then also
/// at or before `keep_from - 1`, so the follower can rebuild its snapshot and read every commit
/// from `keep_from` on.
pub(crate) fn expired_log_files(
    listing: &LogListing,
    other_names: &[(String, i64)],
    cutoff_ms: i64,
    keep_from: Option<u64>,
) -> Vec<String> {
    let cutoff_ms = cutoff_ms - cutoff_ms.rem_euclid(86_400_000);
    let Some(mut cutoff_commit) =
        listing.commits.values().filter(|c| c.modified_ms <= cutoff_ms).map(|c| c.version).max()
    else {
        return Vec::new();
    };
    if let Some(keep_from) = keep_from {
        match keep_from.checked_sub(1) {
            Some(v) => cutoff_commit = cutoff_commit.min(v),
            None => return Vec::new(),
        }
    }
    let Some(anchor) = listing
        .checkpoints
        .keys()
        .rev()
        .copied()
        .filter(|v| *v <= cutoff_commit)
        .find(|v| listing.complete_checkpoint(*v).is_some())
    else {
        return Vec::new();
    };
    let mut out: Vec<String> =
        listing.commits.values().filter(|c| c.version < anchor).map(|c| c.name.clone()).collect();
    out.extend(
        listing
            .checkpoints
            .iter()
            .filter(|(v, _)| **v < anchor)
            .flat_map(|(_, files)| files.iter().map(|f| f.name.clone())),
    );
    out.extend(other_names.iter().filter_map(|(name, _)| match parse_log_name(name) {
        Some((v, LogFileKind::Checksum | LogFileKind::Compaction { .. })) if v < anchor => Some(name.clone()),
        _ => None,
    }));
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn huge_retentions_saturate() {
        use std::time::Duration;
        let now = 1_700_000_000_000;
        assert_eq!(super::cutoff_ms(now, Duration::from_millis(1000)), now - 1000);
        // 16,000,000,000 weeks in milliseconds does not fit an i64: nothing may expire.
        let huge = Duration::from_millis(16_000_000_000u64 * 7 * 86_400_000);
        assert!(super::cutoff_ms(now, huge) < 0);
        assert_eq!(super::cutoff_ms(now, Duration::MAX), now.saturating_sub(i64::MAX));
    }

    use super::*;

    #[test]
    fn hidden_paths() {
        assert!(is_hidden("_delta_log/00.json"));
        assert!(is_hidden(".part-0.parquet.crc"));
        assert!(is_hidden("p=1/_SUCCESS"));
        assert!(!is_hidden("_change_data/cdc-1.parquet"));
        assert!(!is_hidden("_p=1/part-0.parquet"));
        assert!(!is_hidden("p=1/part-0.parquet"));
    }

    #[test]
    fn vacuum_keeps_referenced_recent_and_hidden() {
        let files = vec![
            ("live.parquet".to_string(), 1, 0),
            ("old-orphan.parquet".to_string(), 2, 0),
            ("new-orphan.parquet".to_string(), 3, 1_000),
            ("_delta_log/00.json".to_string(), 4, 0),
        ];
        let keep: HashSet<String> = ["live.parquet".to_string()].into_iter().collect();
        let c: Vec<&str> = vacuum_candidates(&files, &keep, 500).iter().map(|f| f.0.as_str()).collect();
        assert_eq!(c, vec!["old-orphan.parquet"]);
    }

    #[test]
    fn log_cleanup_keeps_the_anchor_checkpoint() {
        let day = 86_400_000;
        let entries: Vec<(String, u64, i64)> = (0..6u64)
            .map(|v| (format!("{v:020}.json"), 1, v as i64 * day))
            .chain([
                ("00000000000000000002.checkpoint.parquet".to_string(), 1, 2 * day),
                ("00000000000000000004.checkpoint.parquet".to_string(), 1, 4 * day),
            ])
            .collect();
        let listing = LogListing::new(entries);
        let others = vec![("00000000000000000001.crc".to_string(), day)];
        // Retention reaches day 3: commit 3 is the newest expired, checkpoint 2 the anchor.
        let gone = expired_log_files(&listing, &others, 3 * day + 5, None);
        assert_eq!(gone, vec!["00000000000000000000.json", "00000000000000000001.crc", "00000000000000000001.json"]);
        // Nothing expired yet.
        assert!(expired_log_files(&listing, &others, day / 2, None).is_empty());
        // Everything up to day 5 expired, but a follower still needs commit 3 onwards: the
        // anchor must be at or before 2.
        let held = expired_log_files(&listing, &others, 5 * day + 5, Some(3));
        assert_eq!(held, gone);
        assert_eq!(expired_log_files(&listing, &others, 5 * day + 5, Some(5)).len(), 6);
        assert!(expired_log_files(&listing, &others, 5 * day + 5, Some(0)).is_empty());
    }
}
