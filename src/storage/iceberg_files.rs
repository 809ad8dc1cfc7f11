//! What VACUUM must keep of a UniForm table's Iceberg metadata: `metadata/` is not a Delta
//! folder (its name has no leading `_`), so without this its files would look like orphans
//! of failed writes and go once past the retention, the current metadata among them.
//!
//! Kept: `version-hint.text`, every `v<N>.metadata.json` present (conversions delete the ones
//! that left the metadata log), and the manifest lists and manifests of every snapshot those
//! files list. Anything else under `metadata/` (manifests of expired snapshots, files of a
//! conversion that lost its put) is an orphan, deleted past the retention like any other.
//! When some of it cannot be read, everything under `metadata/` is kept.

use std::collections::HashSet;

use serde_json::Value;

use crate::error::Result;
use crate::iceberg::{avro, METADATA_DIR};

impl super::iceberg::Uniform<'_> {
    /// The files under `metadata/` (paths relative to the root, as listed in `listed`) that
    /// the Iceberg metadata references; `listed` itself when some of it cannot be read.
    pub(crate) async fn iceberg_referenced(&self, listed: &[String]) -> HashSet<String> {
        match self.read_references(listed).await {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!(error = %e, "vacuum: the Iceberg metadata could not be read; every file under metadata/ is kept");
                listed.iter().cloned().collect()
            }
        }
    }

    async fn read_references(&self, listed: &[String]) -> Result<HashSet<String>> {
        let root = format!("{}/", self.url().trim_end_matches('/'));
        let relative = |url: &str| url.strip_prefix(&root).map(str::to_string);
        let mut kept: HashSet<String> = HashSet::new();
        let mut lists: HashSet<String> = HashSet::new();
        for path in listed {
            let Some(name) = path.strip_prefix(&format!("{METADATA_DIR}/")) else { continue };
            if name == crate::iceberg::VERSION_HINT {
                kept.insert(path.clone());
            }
            if !(name.starts_with('v') && name.ends_with(".metadata.json")) {
                continue;
            }
            kept.insert(path.clone());
            let bytes = self.get_required(&format!("{root}{path}")).await?;
            let meta: Value =
                serde_json::from_slice(&bytes).map_err(|e| crate::error::Error::invalid_log(path.clone(), e))?;
            for s in meta["snapshots"].as_array().into_iter().flatten() {
                if let Some(l) = s["manifest-list"].as_str() {
                    lists.insert(l.to_string());
                }
            }
        }
        let mut manifests: HashSet<String> = HashSet::new();
        for list in &lists {
            kept.extend(relative(list));
            for m in avro::read_manifest_list(&self.get_required(list).await?)? {
                manifests.insert(m.path);
            }
        }
        kept.extend(manifests.iter().filter_map(|m| relative(m)));
        Ok(kept)
    }
}
