//! Protocol versions and table features (digest §9): what deltabus can read.
//!
//! A reader must refuse a table that needs a reader version above 3 or lists a reader feature
//! it does not implement; the error names the feature. The protocol action itself is also
//! validated (features present exactly when the versions say so).

use super::actions::Protocol;
use crate::error::{Error, Result};

/// Reader features deltabus implements.
pub const SUPPORTED_READER_FEATURES: &[&str] = &[
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
pub fn validate_protocol(p: &Protocol) -> Result<()> {
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
pub fn check_readable(p: &Protocol) -> Result<()> {
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
pub fn has_reader_feature(p: &Protocol, feature: &str) -> bool {
    match &p.reader_features {
        Some(list) => list.iter().any(|f| f == feature),
        None => feature == "columnMapping" && p.min_reader_version >= 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
