//! Protocol versions and table features (digest §9): what deltabus can read.
//!
//! A reader must refuse a table that needs a reader version above 3 or lists a reader feature
//! it does not implement; the error names the feature. The protocol action itself is also
//! validated (features present exactly when the versions say so).

use super::actions::Protocol;
use crate::error::{Error, Result};

/// The table features deltabus decides on by name (a typo is a compile error, not a feature
/// silently absent).
/// Some variants are only named by the legacy writer versions that imply them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum Feature {
    AppendOnly,
    ChangeDataFeed,
    CheckConstraints,
    ColumnMapping,
    DeletionVectors,
    DomainMetadata,
    GeneratedColumns,
    IdentityColumns,
    InCommitTimestamp,
    Invariants,
    RowTracking,
    TimestampNtz,
}

impl Feature {
    /// The feature's name in the protocol action.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Feature::AppendOnly => "appendOnly",
            Feature::ChangeDataFeed => "changeDataFeed",
            Feature::CheckConstraints => "checkConstraints",
            Feature::ColumnMapping => "columnMapping",
            Feature::DeletionVectors => "deletionVectors",
            Feature::DomainMetadata => "domainMetadata",
            Feature::GeneratedColumns => "generatedColumns",
            Feature::IdentityColumns => "identityColumns",
            Feature::InCommitTimestamp => "inCommitTimestamp",
            Feature::Invariants => "invariants",
            Feature::RowTracking => "rowTracking",
            Feature::TimestampNtz => "timestampNtz",
        }
    }

    /// The writer version that implies the feature on a protocol without feature lists.
    fn legacy_writer_version(self) -> Option<i32> {
        Some(match self {
            Feature::AppendOnly | Feature::Invariants => 2,
            Feature::CheckConstraints => 3,
            Feature::ChangeDataFeed | Feature::GeneratedColumns => 4,
            Feature::ColumnMapping => 5,
            Feature::IdentityColumns => 6,
            _ => return None,
        })
    }
}

/// `p` as a table-features protocol (reader 3, writer 7) with `reader` features (each also a
/// writer feature) and `writer` features added; the features legacy versions implied are
/// listed by name, so the new protocol takes nothing away.
pub(crate) fn with_features(p: &Protocol, reader: &[&str], writer: &[&str]) -> Protocol {
    const LEGACY: [Feature; 7] = [
        Feature::AppendOnly,
        Feature::Invariants,
        Feature::CheckConstraints,
        Feature::ChangeDataFeed,
        Feature::GeneratedColumns,
        Feature::ColumnMapping,
        Feature::IdentityColumns,
    ];
    let mut r: Vec<String> = match &p.reader_features {
        Some(list) => list.clone(),
        None if p.min_reader_version >= 2 => vec![Feature::ColumnMapping.name().to_string()],
        None => Vec::new(),
    };
    let mut w: Vec<String> = match &p.writer_features {
        Some(list) => list.clone(),
        None => LEGACY
            .iter()
            .filter(|f| f.legacy_writer_version().is_some_and(|v| p.min_writer_version >= v))
            .map(|f| f.name().to_string())
            .collect(),
    };
    for f in reader {
        if !r.iter().any(|x| x == f) {
            r.push((*f).to_string());
        }
    }
    for f in reader.iter().chain(writer) {
        if !w.iter().any(|x| x == f) {
            w.push((*f).to_string());
        }
    }
    Protocol { min_reader_version: 3, min_writer_version: 7, reader_features: Some(r), writer_features: Some(w) }
}

/// The reader-and-writer features a schema's types need: `timestampNtz` for a `timestamp_ntz`
/// anywhere in it, `variantType` for a `variant`.
pub(crate) fn schema_features(schema: &super::schema::StructType) -> Vec<&'static str> {
    use super::schema::{DataType, PrimitiveType};
    let mut needs = Vec::new();
    if schema.contains(&|t| *t == DataType::Primitive(PrimitiveType::TimestampNtz)) {
        needs.push(Feature::TimestampNtz.name());
    }
    if schema.contains(&|t| *t == DataType::Variant) {
        needs.push(VARIANT);
    }
    needs
}

/// The `variantType` feature: columns of the `variant` type.
pub(crate) const VARIANT: &str = "variantType";

/// `p` with the features `schema` needs that it lacks, or `None` when it has them all (a
/// `-preview` feature counts as its final name).
pub(crate) fn upgraded_for(p: &Protocol, schema: &super::schema::StructType) -> Option<Protocol> {
    let has = |f: &str| p.reader_features.iter().flatten().any(|x| x == f || x.strip_suffix("-preview") == Some(f));
    let missing: Vec<&str> = schema_features(schema).into_iter().filter(|f| !has(f)).collect();
    (!missing.is_empty()).then(|| with_features(p, &missing, &[]))
}

/// Reader features deltabus implements.
pub(crate) const SUPPORTED_READER_FEATURES: &[&str] = &[
    "columnMapping",
    "deletionVectors",
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "typeWidening",
    "typeWidening-preview",
    "variantType",
    "variantType-preview",
    "variantShredding",
    "variantShredding-preview",
];

/// Validates the shape of a protocol action.
///
/// # Errors
/// [`Error::InvalidLog`] when feature lists disagree with the versions.
pub(crate) fn validate_protocol(p: &Protocol) -> Result<()> {
    let bad = |m: &str| Err(Error::invalid_log("protocol", m));
    if p.min_reader_version < 1 || p.min_writer_version < 1 {
        return bad("versions must be at least 1");
    }
    if p.min_reader_version == 3 && p.reader_features.is_none() {
        return bad("readerFeatures must be present when minReaderVersion is 3");
    }
    if p.min_reader_version != 3 && p.reader_features.is_some() {
        return bad("readerFeatures must not be present when minReaderVersion is not 3");
    }
    if p.min_writer_version == 7 && p.writer_features.is_none() {
        return bad("writerFeatures must be present when minWriterVersion is 7");
    }
    if p.min_writer_version != 7 && p.writer_features.is_some() {
        return bad("writerFeatures must not be present when minWriterVersion is not 7");
    }
    if p.min_reader_version == 3 && p.min_writer_version != 7 {
        return bad("minReaderVersion 3 requires minWriterVersion 7");
    }
    Ok(())
}

/// Checks that deltabus can read a table with this protocol.
///
/// # Errors
/// [`Error::Unsupported`] naming the reader version or the first unknown reader feature;
/// [`Error::InvalidLog`] when the action is malformed.
pub(crate) fn check_readable(p: &Protocol) -> Result<()> {
    validate_protocol(p)?;
    if p.min_reader_version > 3 {
        return Err(Error::unsupported(format!("reader version {} (deltabus reads up to 3)", p.min_reader_version)));
    }
    for f in p.reader_features.iter().flatten() {
        if !SUPPORTED_READER_FEATURES.contains(&f.as_str()) {
            return Err(Error::unsupported(format!("reader feature {f:?} is not supported")));
        }
    }
    Ok(())
}

/// Whether the protocol enables a feature (explicitly listed on v3/v7, or implied by legacy
/// versions).
pub(crate) fn has_reader_feature(p: &Protocol, feature: Feature) -> bool {
    match &p.reader_features {
        Some(list) => list.iter().any(|f| f == feature.name()),
        None => feature == Feature::ColumnMapping && p.min_reader_version >= 2,
    }
}

/// Writer features deltabus honours when appending.
pub(crate) const SUPPORTED_WRITER_FEATURES: &[&str] = &[
    "appendOnly",
    "changeDataFeed",
    "deletionVectors",
    "timestampNtz",
    "domainMetadata",
    // Statistics for every clustering column on every added file; appends leave
    // `clusteringProvider` unset (`clustering`).
    "clustering",
    // Widened columns record their changes in `delta.typeChanges`; only the protocol's changes.
    "typeWidening",
    // Variant columns written unshredded (a `metadata` and a `value` binary), without statistics.
    "variantType",
    "v2Checkpoint",
    "inCommitTimestamp",
    "columnMapping",
    "vacuumProtocolCheck",
    "rowTracking",
    // Computed for the date and time expressions of `generated`; others are refused.
    "generatedColumns",
    // Supported only while unused: a write is refused when the schema or configuration uses them.
    "invariants",
    "checkConstraints",
    "identityColumns",
    "allowColumnDefaults",
    // Files with partition values materialised and field ids, no deletion vectors, numRecords
    // on every add; Iceberg metadata beside the log when UniForm asks for it.
    "icebergCompatV2",
];

/// Properties that turn on a table feature deltabus does not implement, with what each needs:
/// a table created with one of them would carry the property without the feature (or a
/// feature whose rules no deltabus writer keeps), so it is refused until the feature is
/// implemented.
const UNIMPLEMENTED_FEATURES: &[(&str, &str)] = &[
    ("delta.enableIcebergCompatV1", "icebergCompatV1 (Iceberg-compatible files and metadata)"),
    ("delta.enableVariantShredding", "variantShredding (shredded variant columns)"),
];

/// Why `config` cannot make a new table, when one of its properties turns on a feature
/// deltabus does not implement.
pub(crate) fn unimplemented_feature(config: &std::collections::HashMap<String, String>) -> Option<String> {
    let value = |key: &str| config.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.trim());
    for (key, feature) in UNIMPLEMENTED_FEATURES {
        if value(key).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Some(format!(
                "table property {key}=true turns on {feature}, which deltabus does not implement yet"
            ));
        }
    }
    match value("delta.universalFormat.enabledFormats") {
        Some(formats) => formats.split(',').map(str::trim).find(|f| !f.is_empty() && !f.eq_ignore_ascii_case("iceberg")).map(|f| format!(
            "table property delta.universalFormat.enabledFormats={formats} asks for UniForm metadata in {f}, which deltabus does not write (it writes iceberg)"
        )),
        _ => None,
    }
}

/// Checks that deltabus may write to a table with this protocol and metadata.
///
/// # Errors
/// [`Error::Unsupported`] naming the writer version or feature, or the constraint in use
/// (invariants, CHECK constraints, identity columns, column defaults, generated columns with
/// an expression other than the date and time ones of [`super::generated`]) that deltabus
/// cannot enforce.
pub(crate) fn check_writable(p: &Protocol, metadata: &super::actions::Metadata) -> Result<()> {
    check_readable(p)?;
    if p.min_writer_version > 7 {
        return Err(Error::unsupported(format!("writer version {} (deltabus writes up to 7)", p.min_writer_version)));
    }
    for f in p.writer_features.iter().flatten() {
        if !SUPPORTED_WRITER_FEATURES.contains(&f.as_str()) {
            return Err(Error::unsupported(format!("writer feature {f:?} is not supported for writing")));
        }
    }
    let schema = &metadata.schema_string;
    let in_use = |needle: &str| schema.contains(needle);
    let compat =
        metadata.configuration.get("delta.enableIcebergCompatV2").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if compat {
        let parsed = super::schema::StructType::parse(schema)?;
        let mode = match metadata.configuration.get("delta.columnMapping.mode").map(String::as_str) {
            Some("id") => super::schema::ColumnMappingMode::Id,
            _ => super::schema::ColumnMappingMode::Name,
        };
        if let Some(c) = super::iceberg_compat::nested::missing_nested_id(&parsed.fields, mode, "") {
            return Err(Error::unsupported(format!(
                "the table is icebergCompatV2 and column {c:?} has an array or map element without a field id (delta.columnMapping.nested.ids)"
            )));
        }
    }
    if in_use("delta.invariants") {
        return Err(Error::unsupported(
            "the schema has column invariants (delta.invariants), which deltabus cannot enforce",
        ));
    }
    if let Some(k) = metadata.configuration.keys().find(|k| k.starts_with("delta.constraints.")) {
        return Err(Error::unsupported(format!(
            "the table has a CHECK constraint ({k}), which deltabus cannot enforce"
        )));
    }
    if in_use(super::generated::GENERATION_EXPRESSION) {
        // Generated columns are computed by the data writer; the ones it cannot compute are
        // refused here.
        let parsed = super::schema::StructType::parse(schema)?;
        super::generated::generated_columns(&parsed)?;
    }
    if in_use("delta.identity.") {
        return Err(Error::unsupported("the table has identity columns, which deltabus cannot generate"));
    }
    if in_use("CURRENT_DEFAULT") {
        return Err(Error::unsupported("the table has column defaults, which deltabus does not apply"));
    }
    Ok(())
}

/// Whether a writer feature is supported by the protocol (explicitly, or through legacy
/// writer versions).
pub(crate) fn has_writer_feature(p: &Protocol, feature: Feature) -> bool {
    match &p.writer_features {
        Some(list) => list.iter().any(|f| f == feature.name()),
        None => feature.legacy_writer_version().is_some_and(|v| p.min_writer_version >= v),
    }
}

/// The protocol for a new table with these properties: (1,2) by default; (3,7) with the
/// features the properties ask for (`delta.enableDeletionVectors`, `delta.enableChangeDataFeed`,
/// `delta.enableInCommitTimestamps`, `delta.enableRowTracking`, `delta.columnMapping.mode`,
/// `delta.feature.<name>=supported`), or with `timestampNtz` when the schema needs it.
///
/// # Errors
/// [`Error::Unsupported`] when a property asks for a feature deltabus cannot write.
pub(crate) fn protocol_for_new_table(
    config: &std::collections::HashMap<String, String>,
    schema_needs: &[&'static str],
) -> Result<Protocol> {
    let on = |k: &str| config.get(k).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let mut reader: Vec<&str> = Vec::new();
    let mut writer: Vec<&str> = Vec::new();
    let both = |f: &'static str, r: &mut Vec<&str>, w: &mut Vec<&str>| {
        r.push(f);
        w.push(f);
    };
    if on("delta.enableDeletionVectors") {
        both(Feature::DeletionVectors.name(), &mut reader, &mut writer);
    }
    for f in schema_needs {
        both(f, &mut reader, &mut writer);
    }
    if config.get("delta.columnMapping.mode").is_some_and(|m| m != "none") {
        both(Feature::ColumnMapping.name(), &mut reader, &mut writer);
    }
    if on("delta.enableChangeDataFeed") {
        writer.push(Feature::ChangeDataFeed.name());
    }
    if on("delta.enableInCommitTimestamps") {
        writer.push(Feature::InCommitTimestamp.name());
    }
    if on("delta.enableRowTracking") {
        writer.push(Feature::RowTracking.name());
        writer.push(Feature::DomainMetadata.name());
    }
    if on(super::type_widening::PROPERTY) {
        both(super::type_widening::FEATURE, &mut reader, &mut writer);
    }
    if on("delta.appendOnly") {
        writer.push(Feature::AppendOnly.name());
    }
    if on("delta.enableIcebergCompatV2") {
        writer.push("icebergCompatV2");
    }
    // Classic V1 checkpoints are valid under v2Checkpoint, and those are what deltabus writes.
    if config.get("delta.checkpointPolicy").is_some_and(|v| v.eq_ignore_ascii_case("v2")) {
        both("v2Checkpoint", &mut reader, &mut writer);
    }
    if let Some(why) = unimplemented_feature(config) {
        return Err(Error::unsupported(why));
    }
    for (k, v) in config {
        if let Some(name) = k.strip_prefix("delta.feature.") {
            if !(v.eq_ignore_ascii_case("supported") || v.eq_ignore_ascii_case("enabled")) {
                continue;
            }
            let name: &str = SUPPORTED_WRITER_FEATURES
                .iter()
                .find(|f| **f == name)
                .ok_or_else(|| Error::unsupported(format!("feature {name:?} cannot be enabled by deltabus")))?;
            if SUPPORTED_READER_FEATURES.contains(&name) {
                both(name, &mut reader, &mut writer);
            } else {
                writer.push(name);
            }
        }
    }
    if writer.is_empty() {
        return Ok(Protocol {
            min_reader_version: 1,
            min_writer_version: 2,
            reader_features: None,
            writer_features: None,
        });
    }
    let dedup = |v: Vec<&str>| {
        let mut v: Vec<String> = v.into_iter().map(str::to_string).collect();
        v.sort();
        v.dedup();
        v
    };
    let (reader, writer) = (dedup(reader), dedup(writer));
    Ok(Protocol {
        min_reader_version: if reader.is_empty() { 1 } else { 3 },
        min_writer_version: 7,
        reader_features: (!reader.is_empty()).then_some(reader),
        writer_features: Some(writer),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_of_unimplemented_features_are_refused_and_v2_checkpoints_get_their_feature() {
        let cfg = |pairs: &[(&str, &str)]| -> std::collections::HashMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        for (k, v) in [
            ("delta.enableIcebergCompatV1", "TRUE"),
            ("delta.enableVariantShredding", "true"),
            ("delta.universalFormat.enabledFormats", "hudi,iceberg"),
        ] {
            let e = protocol_for_new_table(&cfg(&[(k, v)]), &[]).unwrap_err().to_string();
            assert!(e.contains(k) && e.contains("does not"), "{k}={v}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        for (k, v) in [("delta.enableIcebergCompatV2", "false"), ("delta.universalFormat.enabledFormats", "")] {
            assert!(protocol_for_new_table(&cfg(&[(k, v)]), &[]).is_ok(), "{k}={v}");
        }
        let compat = protocol_for_new_table(
            &cfg(&[("delta.enableIcebergCompatV2", "true"), ("delta.columnMapping.mode", "name")]),
            &[],
        )
        .unwrap();
        assert!(compat.writer_features.unwrap().iter().any(|f| f == "icebergCompatV2"));
        let p = protocol_for_new_table(&cfg(&[("delta.checkpointPolicy", "v2")]), &[]).unwrap();
        assert!(p.reader_features.iter().flatten().any(|f| f == "v2Checkpoint"), "{p:?}");
        assert!(p.writer_features.iter().flatten().any(|f| f == "v2Checkpoint"), "{p:?}");
    }

    #[test]
    fn features_by_list_or_by_legacy_version() {
        let listed = proto(3, 7, Some(&["deletionVectors"]), Some(&["rowTracking", "deletionVectors"]));
        assert!(has_writer_feature(&listed, Feature::RowTracking));
        assert!(!has_writer_feature(&listed, Feature::AppendOnly), "a list names every feature");
        assert!(has_reader_feature(&listed, Feature::DeletionVectors));
        let legacy = proto(2, 5, None, None);
        assert!(
            has_writer_feature(&legacy, Feature::ColumnMapping) && has_writer_feature(&legacy, Feature::AppendOnly)
        );
        assert!(
            !has_writer_feature(&legacy, Feature::IdentityColumns)
                && !has_writer_feature(&legacy, Feature::RowTracking)
        );
        assert!(has_reader_feature(&legacy, Feature::ColumnMapping));
        for f in [Feature::RowTracking, Feature::DeletionVectors, Feature::AppendOnly] {
            assert!(SUPPORTED_WRITER_FEATURES.contains(&f.name()), "{f:?}");
        }
    }

    fn proto(r: i32, w: i32, rf: Option<&[&str]>, wf: Option<&[&str]>) -> Protocol {
        let v = |l: Option<&[&str]>| l.map(|l| l.iter().map(|s| s.to_string()).collect());
        Protocol { min_reader_version: r, min_writer_version: w, reader_features: v(rf), writer_features: v(wf) }
    }

    #[test]
    fn accepts_supported() {
        check_readable(&proto(1, 2, None, None)).unwrap();
        check_readable(&proto(2, 5, None, None)).unwrap();
        check_readable(&proto(3, 7, Some(&["deletionVectors", "columnMapping"]), Some(&["deletionVectors"]))).unwrap();
    }

    #[test]
    fn refuses_unknown_and_malformed() {
        let e = check_readable(&proto(3, 7, Some(&["catalogManaged"]), Some(&[]))).unwrap_err();
        assert!(e.to_string().contains("catalogManaged"), "{e}");
        assert!(check_readable(&proto(4, 7, None, Some(&[]))).is_err());
        assert!(matches!(check_readable(&proto(1, 2, Some(&[]), None)), Err(Error::InvalidLog { .. })));
        assert!(matches!(check_readable(&proto(3, 7, None, Some(&[]))), Err(Error::InvalidLog { .. })));
    }

    #[test]
    fn legacy_protocols_become_feature_lists_with_nothing_lost() {
        let p = with_features(&proto(2, 5, None, None), &["columnMapping"], &["icebergCompatV2"]);
        assert_eq!((p.min_reader_version, p.min_writer_version), (3, 7));
        assert_eq!(p.reader_features.as_deref(), Some(&["columnMapping".to_string()][..]));
        let w = p.writer_features.unwrap();
        for f in [
            "appendOnly",
            "invariants",
            "checkConstraints",
            "changeDataFeed",
            "generatedColumns",
            "columnMapping",
            "icebergCompatV2",
        ] {
            assert!(w.iter().any(|x| x == f), "{f} in {w:?}");
        }
        assert!(!w.iter().any(|x| x == "identityColumns"));
        let p = with_features(&proto(1, 2, None, None), &["columnMapping"], &[]);
        assert_eq!(p.writer_features.unwrap(), ["appendOnly", "invariants", "columnMapping"]);
        let listed = proto(3, 7, Some(&["timestampNtz"]), Some(&["timestampNtz", "rowTracking"]));
        let p = with_features(&listed, &["columnMapping"], &[]);
        assert_eq!(p.reader_features.unwrap(), ["timestampNtz", "columnMapping"]);
        assert_eq!(p.writer_features.unwrap(), ["timestampNtz", "rowTracking", "columnMapping"]);
        validate_protocol(&with_features(&proto(1, 2, None, None), &[], &[])).unwrap();
    }
}
