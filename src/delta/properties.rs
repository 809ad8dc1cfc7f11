//! Typed table properties (`metaData.configuration`), with Spark's defaults.
//!
//! Unknown keys are kept verbatim in the metadata; this view only reads the ones deltabus acts
//! on. A value that does not parse falls back to the default rather than failing a read:
//! readers must not refuse a table over a property they merely consult.

use std::collections::HashMap;
use std::time::Duration;

use super::schema::ColumnMappingMode;

const DAY: u64 = 24 * 3600;

/// The table properties deltabus consults.
#[derive(Debug, Clone, PartialEq)]
pub struct TableProperties {
    pub append_only: bool,
    pub enable_change_data_feed: bool,
    pub enable_deletion_vectors: bool,
    pub enable_in_commit_timestamps: bool,
    pub enable_row_tracking: bool,
    pub row_tracking_suspended: bool,
    pub column_mapping_mode: ColumnMappingMode,
    pub checkpoint_interval: u64,
    pub checkpoint_policy_v2: bool,
    pub data_skipping_num_indexed_cols: i64,
    pub data_skipping_stats_columns: Option<Vec<String>>,
    pub data_skipping_string_prefix_length: usize,
    pub log_retention: Duration,
    pub deleted_file_retention: Duration,
    pub set_transaction_retention: Option<Duration>,
    pub target_file_size: Option<u64>,
    pub compression_codec: Option<Codec>,
}

/// A Parquet codec (`delta.parquet.compression.codec`, `--compression`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Codec {
    #[default]
    Zstd,
    Snappy,
    Gzip,
    /// LZ4 as Parquet's `LZ4_RAW` (Spark's `lz4` and `lz4_raw` alike).
    Lz4,
    Brotli,
    Uncompressed,
}

impl std::str::FromStr for Codec {
    type Err = String;

    /// Case-insensitive, as Spark reads the property.
    fn from_str(s: &str) -> std::result::Result<Codec, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "zstd" => Codec::Zstd,
            "snappy" => Codec::Snappy,
            "gzip" => Codec::Gzip,
            "lz4" | "lz4_raw" => Codec::Lz4,
            "brotli" => Codec::Brotli,
            "uncompressed" | "none" => Codec::Uncompressed,
            _ => return Err(format!("unknown Parquet codec {s:?}: zstd, snappy, gzip, lz4, brotli or uncompressed")),
        })
    }
}

impl TableProperties {
    /// Reads properties from a `configuration` map.
    pub fn from_config(config: &HashMap<String, String>) -> Self {
        let get = |k: &str| config.get(k).map(|s| s.trim());
        let flag = |k: &str| get(k).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let column_mapping_mode = match get("delta.columnMapping.mode").map(str::to_ascii_lowercase).as_deref() {
            Some("name") => ColumnMappingMode::Name,
            Some("id") => ColumnMappingMode::Id,
            _ => ColumnMappingMode::None,
        };
        TableProperties {
            append_only: flag("delta.appendOnly"),
            enable_change_data_feed: flag("delta.enableChangeDataFeed") || flag("delta.enableChangeDataCapture"),
            enable_deletion_vectors: flag("delta.enableDeletionVectors"),
            enable_in_commit_timestamps: flag("delta.enableInCommitTimestamps"),
            enable_row_tracking: flag("delta.enableRowTracking"),
            row_tracking_suspended: flag("delta.rowTrackingSuspended"),
            column_mapping_mode,
            checkpoint_interval: get("delta.checkpointInterval")
                .and_then(|v| v.parse().ok())
                .filter(|&v| v > 0)
                .unwrap_or(10),
            checkpoint_policy_v2: get("delta.checkpointPolicy").is_some_and(|v| v.eq_ignore_ascii_case("v2")),
            data_skipping_num_indexed_cols: get("delta.dataSkippingNumIndexedCols")
                .and_then(|v| v.parse().ok())
                .unwrap_or(32),
            data_skipping_stats_columns: get("delta.dataSkippingStatsColumns").map(|v| {
                v.split(',').map(|c| c.trim().trim_matches('`').to_string()).filter(|c| !c.is_empty()).collect()
            }),
            data_skipping_string_prefix_length: get("delta.dataSkippingStringPrefixLength")
                .and_then(|v| v.parse().ok())
                .unwrap_or(32),
            log_retention: get("delta.logRetentionDuration")
                .and_then(parse_interval)
                .unwrap_or(Duration::from_secs(30 * DAY)),
            deleted_file_retention: get("delta.deletedFileRetentionDuration")
                .and_then(parse_interval)
                .unwrap_or(Duration::from_secs(7 * DAY)),
            set_transaction_retention: get("delta.setTransactionRetentionDuration").and_then(parse_interval),
            target_file_size: get("delta.targetFileSize").and_then(parse_size),
            // (A value no writer knows was refused when set; another engine's is written zstd.)
            compression_codec: get("delta.parquet.compression.codec").and_then(|c| c.parse().ok()),
        }
    }
}

/// The `delta.*` table properties Delta engines know (Delta Lake's `DeltaConfigs`, the
/// protocol's table features); `delta.feature.<name>` is open-ended.
pub(crate) const KNOWN_PROPERTIES: &[&str] = &[
    "delta.appendOnly",
    "delta.autoOptimize.autoCompact",
    "delta.autoOptimize.optimizeWrite",
    "delta.checkpoint.writeStatsAsJson",
    "delta.checkpoint.writeStatsAsStruct",
    "delta.checkpointInterval",
    "delta.checkpointPolicy",
    "delta.checkpointRetentionDuration",
    "delta.columnMapping.maxColumnId",
    "delta.columnMapping.mode",
    "delta.compatibility.symlinkFormatManifest.enabled",
    "delta.dataSkippingNumIndexedCols",
    "delta.dataSkippingStatsColumns",
    "delta.dataSkippingStringPrefixLength",
    "delta.deletedFileRetentionDuration",
    "delta.enableChangeDataCapture",
    "delta.enableChangeDataFeed",
    "delta.enableDeletionVectors",
    "delta.enableExpiredLogCleanup",
    "delta.enableIcebergCompatV1",
    "delta.enableIcebergCompatV2",
    "delta.enableInCommitTimestamps",
    "delta.enableRowTracking",
    "delta.enableTypeWidening",
    "delta.enableVariantShredding",
    "delta.inCommitTimestampEnablementTimestamp",
    "delta.inCommitTimestampEnablementVersion",
    "delta.isolationLevel",
    "delta.logRetentionDuration",
    "delta.minReaderVersion",
    "delta.minWriterVersion",
    "delta.parquet.compression.codec",
    "delta.randomPrefixLength",
    "delta.randomizeFilePrefixes",
    "delta.rowTracking.materializedRowCommitVersionColumnName",
    "delta.rowTracking.materializedRowIdColumnName",
    "delta.rowTrackingSuspended",
    "delta.setTransactionRetentionDuration",
    "delta.targetFileSize",
    "delta.tuneFileSizesForRewrites",
    "delta.universalFormat.enabledFormats",
];

/// Refuses a `delta.*` key no engine knows (a typo such as `delta.enableDeletionVector` would
/// otherwise silently do nothing), naming the closest known key. Other keys are the user's own.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming the key and a suggestion.
pub(crate) fn check_property_names<'a>(keys: impl IntoIterator<Item = &'a String>) -> crate::Result<()> {
    for key in keys {
        if key.len() > "deltabus.glue.".len() && key[.."deltabus.glue.".len()].eq_ignore_ascii_case("deltabus.glue.") {
            check_glue_key(key)?;
            continue;
        }
        let Some(_) = key.strip_prefix("delta.") else { continue };
        if key.starts_with("delta.feature.") || KNOWN_PROPERTIES.iter().any(|k| k.eq_ignore_ascii_case(key)) {
            continue;
        }
        let closest = KNOWN_PROPERTIES
            .iter()
            .min_by_key(|k| strsim::levenshtein(&k.to_ascii_lowercase(), &key.to_ascii_lowercase()))
            .copied()
            .unwrap_or("delta.appendOnly");
        return Err(crate::Error::InvalidArgument(format!(
            "unknown table property {key:?}; did you mean {closest:?}?"
        )));
    }
    Ok(())
}

/// The properties of the AWS Glue registration (`deltabus.glue.*`, see `iceberg/glue.rs`).
const GLUE_PROPERTIES: &[&str] = &[
    "deltabus.glue.database",
    "deltabus.glue.table",
    "deltabus.glue.deltaTable",
    "deltabus.glue.region",
    "deltabus.glue.catalogId",
];

/// Refuses a `deltabus.glue.*` key deltabus does not read (a typo would silently register
/// nothing, or under another name), naming the closest known one.
fn check_glue_key(key: &str) -> crate::Result<()> {
    if GLUE_PROPERTIES.iter().any(|k| k.eq_ignore_ascii_case(key)) {
        return Ok(());
    }
    let closest = GLUE_PROPERTIES
        .iter()
        .min_by_key(|k| strsim::levenshtein(&k.to_ascii_lowercase(), &key.to_ascii_lowercase()))
        .copied()
        .unwrap_or("deltabus.glue.database");
    Err(crate::Error::InvalidArgument(format!("unknown table property {key:?}; did you mean {closest:?}?")))
}

/// What a known property's value must be.
enum Kind {
    Boolean,
    /// An integer at least this.
    AtLeast(i64),
    Interval,
    Size,
    OneOf(&'static [&'static str]),
}

fn kind_of(key: &str) -> Option<Kind> {
    let k = key.to_ascii_lowercase();
    Some(match k.as_str() {
        "delta.appendonly"
        | "delta.autooptimize.autocompact"
        | "delta.autooptimize.optimizewrite"
        | "delta.checkpoint.writestatsasjson"
        | "delta.checkpoint.writestatsasstruct"
        | "delta.compatibility.symlinkformatmanifest.enabled"
        | "delta.enablechangedatacapture"
        | "delta.enablechangedatafeed"
        | "delta.enabledeletionvectors"
        | "delta.enableexpiredlogcleanup"
        | "delta.enableicebergcompatv1"
        | "delta.enableicebergcompatv2"
        | "delta.enableincommittimestamps"
        | "delta.enablerowtracking"
        | "delta.enabletypewidening"
        | "delta.enablevariantshredding"
        | "delta.randomizefileprefixes"
        | "delta.rowtrackingsuspended"
        | "delta.tunefilesizesforrewrites" => Kind::Boolean,
        "delta.checkpointinterval" | "delta.randomprefixlength" => Kind::AtLeast(1),
        "delta.dataskippingnumindexedcols" => Kind::AtLeast(-1),
        "delta.dataskippingstringprefixlength" | "delta.columnmapping.maxcolumnid" => Kind::AtLeast(0),
        "delta.minreaderversion" | "delta.minwriterversion" => Kind::AtLeast(1),
        "delta.logretentionduration"
        | "delta.deletedfileretentionduration"
        | "delta.settransactionretentionduration"
        | "delta.checkpointretentionduration" => Kind::Interval,
        "delta.targetfilesize" => Kind::Size,
        "delta.columnmapping.mode" => Kind::OneOf(&["none", "name", "id"]),
        "delta.checkpointpolicy" => Kind::OneOf(&["classic", "v2"]),
        "delta.isolationlevel" => Kind::OneOf(&["Serializable", "WriteSerializable", "SnapshotIsolation"]),
        "delta.parquet.compression.codec" => {
            Kind::OneOf(&["zstd", "snappy", "gzip", "lz4", "lz4_raw", "brotli", "uncompressed", "none"])
        }
        _ => return None,
    })
}

/// The properties of a new table or a property change, checked and spelled canonically:
/// unknown `delta.*` keys are refused with the closest known key, and known keys must have a
/// value of their kind (`true`/`false` in any case, written `true`/`false`; positive
/// intervals; `none`/`name`/`id`; ...). Keys are written as Delta spells them.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming the key, the value and what it takes.
pub(crate) fn checked_properties(properties: &HashMap<String, String>) -> crate::Result<HashMap<String, String>> {
    check_property_names(properties.keys())?;
    let mut out = HashMap::with_capacity(properties.len());
    for (key, value) in properties {
        let canonical_key = KNOWN_PROPERTIES.iter().find(|k| k.eq_ignore_ascii_case(key)).map_or(key.as_str(), |k| k);
        let v = value.trim();
        let bad = |what: &str| {
            crate::Error::InvalidArgument(format!("table property {canonical_key}={value:?}: expected {what}"))
        };
        let canonical = match kind_of(key) {
            None => value.clone(),
            Some(Kind::Boolean) => match v.to_ascii_lowercase().as_str() {
                "true" => "true".to_string(),
                "false" => "false".to_string(),
                _ => return Err(bad("true or false")),
            },
            Some(Kind::AtLeast(min)) => match v.parse::<i64>() {
                Ok(n) if n >= min => n.to_string(),
                _ => return Err(bad(&format!("an integer of at least {min}"))),
            },
            Some(Kind::Interval) => match parse_interval(v) {
                Some(d) if !d.is_zero() => v.to_string(),
                _ => return Err(bad("an interval such as 'interval 7 days' or '30 days'")),
            },
            Some(Kind::Size) => match parse_size(v) {
                Some(n) if n > 0 => v.to_string(),
                _ => return Err(bad("a size in bytes, or with kb, mb or gb")),
            },
            Some(Kind::OneOf(choices)) => match choices.iter().find(|c| c.eq_ignore_ascii_case(v)) {
                Some(c) => c.to_string(),
                None => return Err(bad(&format!("one of {}", choices.join(", ")))),
            },
        };
        out.insert(canonical_key.to_string(), canonical);
    }
    Ok(out)
}

/// Parses Spark's interval strings: `interval 1 week`, `30 days`, `interval 2 hours 30 minutes`.
pub(crate) fn parse_interval(s: &str) -> Option<Duration> {
    let s = s.trim().to_ascii_lowercase();
    let s = s.strip_prefix("interval").unwrap_or(&s);
    let mut words = s.split_whitespace();
    let mut total = 0u64;
    let mut any = false;
    while let Some(num) = words.next() {
        let n: u64 = num.parse().ok()?;
        let unit = words.next()?;
        let unit = unit.strip_suffix('s').unwrap_or(unit);
        let millis = match unit {
            "millisecond" | "milli" | "ms" => 1,
            "second" | "sec" => 1000,
            "minute" | "min" => 60_000,
            "hour" => 3_600_000,
            "day" => 86_400_000,
            "week" => 7 * 86_400_000,
            "microsecond" => return Some(Duration::from_micros(n)),
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(millis)?)?;
        any = true;
    }
    any.then(|| Duration::from_millis(total))
}

/// Parses a byte size: plain bytes or with a `kb`/`mb`/`gb` suffix.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let lower = s.trim().to_ascii_lowercase();
    let (num, mult) = [("gb", 1u64 << 30), ("mb", 1 << 20), ("kb", 1 << 10), ("b", 1)]
        .iter()
        .find_map(|(suffix, m)| lower.strip_suffix(suffix).map(|n| (n.trim().to_string(), *m)))
        .unwrap_or((lower.clone(), 1));
    num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_glue_properties_are_refused_with_the_closest_name() {
        let keys = ["deltabus.glue.databse".to_string()];
        let e = check_property_names(&keys).unwrap_err().to_string();
        assert!(e.contains("did you mean \"deltabus.glue.database\""), "{e}");
        let fine =
            ["deltabus.glue.database".to_string(), "DELTABUS.GLUE.catalogid".to_string(), "deltabus.other".into()];
        assert!(check_property_names(&fine).is_ok());
    }

    #[test]
    fn unknown_delta_properties_are_refused_with_the_closest_name() {
        let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_property_names(&keys(&["delta.enableDeletionVectors", "delta.feature.v2Checkpoint", "owner"]))
            .is_ok());
        let e = check_property_names(&keys(&["delta.enableDeletionVector"])).unwrap_err().to_string();
        assert!(e.contains("did you mean \"delta.enableDeletionVectors\""), "{e}");
    }

    #[test]
    fn property_values_are_checked_and_spelled_canonically() {
        let props = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        for (k, v) in [
            ("delta.enableDeletionVectors", "maybe"),
            ("delta.checkpointInterval", "0"),
            ("delta.checkpointInterval", "-1"),
            ("delta.deletedFileRetentionDuration", "garbage"),
            ("delta.columnMapping.mode", "names"),
            ("delta.targetFileSize", "big"),
        ] {
            let e = checked_properties(&props(&[(k, v)])).unwrap_err().to_string();
            assert!(e.contains(k) && e.contains("expected"), "{k}={v}: {e}");
        }
        let ok = checked_properties(&props(&[
            ("delta.enableInCommitTimestamps", "TRUE"),
            ("delta.columnmapping.mode", "Name"),
            ("owner", "Me"),
        ]))
        .unwrap();
        assert_eq!(ok["delta.enableInCommitTimestamps"], "true");
        assert_eq!(ok["delta.columnMapping.mode"], "name");
        assert_eq!(ok["owner"], "Me");
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("interval 1 week"), Some(Duration::from_secs(7 * DAY)));
        assert_eq!(parse_interval("interval 30 days"), Some(Duration::from_secs(30 * DAY)));
        assert_eq!(parse_interval("2 hours 30 minutes"), Some(Duration::from_secs(9000)));
        assert_eq!(parse_interval("soon"), None);
    }

    #[test]
    fn defaults_and_overrides() {
        let p = TableProperties::from_config(&HashMap::new());
        assert_eq!(p.checkpoint_interval, 10);
        assert_eq!(p.data_skipping_num_indexed_cols, 32);
        let cfg: HashMap<String, String> = [
            ("delta.checkpointInterval", "5"),
            ("delta.columnMapping.mode", "name"),
            ("delta.enableChangeDataCapture", "true"),
            ("delta.targetFileSize", "64mb"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let p = TableProperties::from_config(&cfg);
        assert_eq!(p.checkpoint_interval, 5);
        assert_eq!(p.column_mapping_mode, ColumnMappingMode::Name);
        assert!(p.enable_change_data_feed);
        assert_eq!(p.target_file_size, Some(64 << 20));
    }
}
