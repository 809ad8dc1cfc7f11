//! UniForm: writes the Iceberg metadata of a Delta version under `<table>/metadata/`.
//!
//! One conversion turns the Delta commits after the last converted version into one Iceberg
//! snapshot: their adds become a new manifest, manifests holding removed files are rewritten
//! (the removed entries marked deleted, the rest existing), untouched manifests are carried
//! over, and the smallest half of the manifests are merged once a snapshot lists more than
//! [`MAX_MANIFESTS`] (size-tiered: a conversion costs the same however large the table). A full conversion (every live file) happens only when there is no
//! Iceberg metadata yet or the commits after it are gone from the log.
//!
//! Order of writes: manifests and the manifest list (new, unique names), then
//! `v<N+1>.metadata.json` put-if-absent, then `version-hint.text`. A reader opening the hint
//! or the newest metadata file sees a complete snapshot, the previous one or the new one. A
//! writer that loses the put to another converter starts over from the winner's metadata; a
//! lost answer is settled by reading the file back. Conversion never holds back a Delta
//! commit: the committer logs a failure and the next commit, or `deltabus uniform`, catches up.

use std::collections::{BTreeMap, HashSet};

use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde_json::Value;

use crate::delta::actions::{Action, Add, Metadata};
use crate::delta::iceberg_compat::schema::{
    iceberg_schema, max_field_id, name_mapping, partition_fields, partition_spec, PartitionField,
};
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::iceberg::avro::{self, Entry, ManifestFile, ADDED, DELETED, EXISTING};
use crate::iceberg::files::data_file;
use crate::iceberg::metadata::{self, NewSnapshot};
use crate::iceberg::{metadata_file_name, METADATA_DIR, VERSION_HINT};

/// Manifests a snapshot may list before small ones are merged.
const MAX_MANIFESTS: usize = 64;
/// Entries per manifest of a full conversion; manifests smaller than this are merged.
const MANIFEST_ENTRIES: usize = 10_000;

/// The converted state of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IcebergState {
    /// `N` of the current `metadata/v<N>.metadata.json`.
    pub metadata_version: u64,
    pub snapshot_id: i64,
    /// The Delta version the current snapshot mirrors.
    pub delta_version: u64,
}

/// What a conversion needs of a Delta version: its number, metadata and schema, and the
/// snapshot itself when the caller has it (a full conversion reads it otherwise), so that the
/// committer converts a commit without copying the table's state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeltaVersion<'a> {
    pub version: u64,
    pub metadata: &'a crate::delta::actions::Metadata,
    pub schema: &'a crate::delta::schema::StructType,
    pub mode: crate::delta::schema::ColumnMappingMode,
    pub snapshot: Option<&'a Snapshot>,
}

impl<'a> DeltaVersion<'a> {
    /// The version a snapshot is at.
    pub(crate) fn of(s: &'a Snapshot) -> Self {
        DeltaVersion {
            version: s.version,
            metadata: &s.metadata,
            schema: &s.schema,
            mode: s.column_mapping(),
            snapshot: Some(s),
        }
    }
}

table_view!(
    /// UniForm's conversion of one table: the Iceberg metadata beside its log, its AWS Glue
    /// registration and the files they reference (it reads the log and writes through the
    /// handle's store).
    Uniform,
    /// The table's UniForm conversion.
    uniform
);

/// The Delta changes after a converted version: removed paths and the adds that are live at
/// the end, both as decoded paths relative to the root.
struct Changes {
    removed: HashSet<String>,
    added: BTreeMap<String, Add>,
    data_change: bool,
}

impl Uniform<'_> {
    fn iceberg_path(&self, name: &str) -> Path {
        self.root_path().join(METADATA_DIR).join(name)
    }

    fn iceberg_url(&self, name: &str) -> String {
        format!("{}/{METADATA_DIR}/{name}", self.url().trim_end_matches('/'))
    }

    /// The object path of an absolute Iceberg path under this table's root.
    fn iceberg_object(&self, url: &str) -> Result<Path> {
        let root = format!("{}/", self.url().trim_end_matches('/'));
        let rel = url
            .strip_prefix(&root)
            .ok_or_else(|| Error::invalid_log("metadata", format!("Iceberg file {url} is outside the table root")))?;
        if rel.split('/').any(|s| s == ".." || s.is_empty()) {
            return Err(Error::PathRefused { path: url.to_string(), reason: "not a plain path under the root".into() });
        }
        Ok(self.relative_path(rel))
    }

    async fn get_opt(&self, path: &Path) -> Result<Option<bytes::Bytes>> {
        match self.store.get(path).await {
            Ok(r) => Ok(Some(r.bytes().await.map_err(|e| Error::storage(path, e))?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Error::storage(path, e)),
        }
    }

    pub(super) async fn get_required(&self, url: &str) -> Result<bytes::Bytes> {
        let path = self.iceberg_object(url)?;
        self.get_opt(&path)
            .await?
            .ok_or_else(|| Error::invalid_log("metadata", format!("Iceberg file {url} is missing")))
    }

    /// The current Iceberg metadata: the hint's version, or a newer one found past it.
    async fn iceberg_current(&self) -> Result<Option<(u64, Value)>> {
        let hint = self.get_opt(&self.iceberg_path(VERSION_HINT)).await?;
        let mut n: u64 =
            hint.and_then(|b| std::str::from_utf8(&b).ok().and_then(|s| s.trim().parse().ok())).unwrap_or(0);
        loop {
            match self.store.head(&self.iceberg_path(&metadata_file_name(n + 1))).await {
                Ok(_) => n += 1,
                Err(object_store::Error::NotFound { .. }) => break,
                Err(e) => return Err(Error::storage(self.iceberg_path(&metadata_file_name(n + 1)), e)),
            }
        }
        if n == 0 {
            return Ok(None);
        }
        let name = metadata_file_name(n);
        let bytes = self
            .get_opt(&self.iceberg_path(&name))
            .await?
            .ok_or_else(|| Error::invalid_log(format!("metadata/{name}"), "missing although the hint names it"))?;
        let meta = serde_json::from_slice(&bytes).map_err(|e| Error::invalid_log(format!("metadata/{name}"), e))?;
        Ok(Some((n, meta)))
    }

    /// The converted state, `None` before the first conversion.
    ///
    /// # Errors
    /// Storage errors; [`Error::InvalidLog`] for unreadable metadata.
    pub(crate) async fn iceberg_state(&self) -> Result<Option<IcebergState>> {
        let Some((n, meta)) = self.iceberg_current().await? else { return Ok(None) };
        Ok(metadata::current(&meta)?.map(|c| IcebergState {
            metadata_version: n,
            snapshot_id: c.snapshot_id,
            delta_version: c.delta_version,
        }))
    }

    /// The changes of Delta versions `(from, to]`, `None` when one of them is gone from the
    /// log (then only a full conversion is right).
    async fn delta_changes(&self, from: u64, to: u64) -> Result<Option<Changes>> {
        let mut c = Changes { removed: HashSet::new(), added: BTreeMap::new(), data_change: false };
        for v in from + 1..=to {
            let actions = match self.read_commit(v).await {
                Ok(a) => a,
                Err(Error::MissingVersion { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            for a in actions {
                match a {
                    Action::Add(add) => {
                        let (_, rel) = self.data_path(&add.path)?;
                        c.data_change |= add.data_change;
                        if !add.data_change {
                            // A recommit of a file already in the table (new statistics)
                            // replaces its entry rather than listing it twice.
                            c.removed.insert(rel.clone());
                        }
                        c.added.insert(rel, add);
                    }
                    Action::Remove(r) => {
                        let (_, rel) = self.data_path(&r.path)?;
                        c.data_change |= r.data_change;
                        c.added.remove(&rel);
                        c.removed.insert(rel);
                    }
                    _ => {}
                }
            }
        }
        Ok(Some(c))
    }

    async fn put_new(&self, name: &str, bytes: Vec<u8>) -> Result<(String, i64)> {
        let len = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        let path = self.iceberg_path(name);
        self.store.put(&path, PutPayload::from(bytes)).await.map_err(|e| Error::storage(&path, e))?;
        Ok((self.iceberg_url(name), len))
    }

    async fn write_manifest(&self, entries: &[Entry], ctx: &Ctx<'_>) -> Result<ManifestFile> {
        let bytes = avro::manifest_bytes(entries, ctx.schema, ctx.spec, ctx.spec_json)?;
        let (url, len) = self.put_new(&format!("{}-m.avro", uuid::Uuid::new_v4()), bytes).await?;
        Ok(avro::summarise(url, len, entries, ctx.snapshot_id, ctx.sequence, ctx.spec))
    }

    /// Writes the Iceberg metadata of `snapshot`'s version (and of every Delta version
    /// between the last converted one and it, as one Iceberg snapshot).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a table Iceberg cannot describe (see
    /// [`crate::delta::iceberg_compat::schema`]); storage errors; [`Error::InvalidLog`] for
    /// unreadable Iceberg metadata.
    pub(crate) async fn sync_iceberg(&self, snapshot: &Snapshot) -> Result<IcebergState> {
        self.sync_iceberg_at(&DeltaVersion::of(snapshot)).await
    }

    /// The Iceberg metadata of `version` of a UniForm table whose metadata is `metadata`, then
    /// its AWS Glue registration. The conversion reads the commits since the last converted
    /// one, not the table's state. A Glue failure is logged (the metadata stands; the next
    /// commit or `deltabus uniform` moves the pointer).
    ///
    /// # Errors
    /// Storage and conversion errors of the Iceberg metadata.
    pub(crate) async fn convert_to_iceberg(&self, version: u64, metadata: &Metadata) -> Result<()> {
        let schema = crate::delta::schema::StructType::parse(&metadata.schema_string)?;
        let mode = crate::delta::properties::TableProperties::from_config(&metadata.configuration).column_mapping_mode;
        let at = DeltaVersion { version, metadata, schema: &schema, mode, snapshot: None };
        let state = self.sync_iceberg_at(&at).await?;
        crate::failpoint::hit("uniform.before_glue");
        if let Err(e) = self.register_uniform(&at, &state).await {
            tracing::warn!(error = %e, "uniform.glue_behind: the commit and its Iceberg metadata stand; the next commit or `deltabus uniform` moves the Glue pointer");
        }
        Ok(())
    }

    /// [`Table::sync_iceberg`] for a version described by `snapshot`.
    ///
    /// # Errors
    /// As [`Table::sync_iceberg`].
    #[tracing::instrument(name = "uniform", level = "debug", skip_all, fields(table = %self.url(), version = snapshot.version))]
    pub(crate) async fn sync_iceberg_at(&self, snapshot: &DeltaVersion<'_>) -> Result<IcebergState> {
        let mode = snapshot.mode;
        let spec = partition_fields(snapshot.schema, &snapshot.metadata.partition_columns, mode)?;
        let spec_json = partition_spec(&spec);
        let last_column_id = max_field_id(snapshot.schema);
        let mapping = name_mapping(snapshot.schema, mode).to_string();
        let mut last_error = String::new();
        for attempt in 0..crate::common::retry::ICEBERG_COMMITS {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20 << attempt)).await;
            }
            let now = self.clock().now_ms();
            let (n, mut meta) = match self.iceberg_current().await? {
                Some(found) => found,
                None => (
                    0,
                    metadata::new_metadata(
                        &snapshot.metadata.id,
                        self.url().trim_end_matches('/'),
                        iceberg_schema(snapshot.schema, 0)?,
                        last_column_id,
                        spec_json.clone(),
                        now,
                    ),
                ),
            };
            let current = metadata::current(&meta)?;
            if let Some(c) = &current {
                if c.delta_version >= snapshot.version {
                    return Ok(IcebergState {
                        metadata_version: n,
                        snapshot_id: c.snapshot_id,
                        delta_version: c.delta_version,
                    });
                }
            }
            if meta["partition-specs"][0]["fields"] != spec_json["fields"] {
                return Err(Error::unsupported("the table's partition columns differ from its Iceberg partition spec"));
            }
            metadata::set_schema(&mut meta, iceberg_schema(snapshot.schema, 0)?, last_column_id);
            meta["properties"]["schema.name-mapping.default"] = Value::String(mapping.clone());
            let schema_id = meta["current-schema-id"].clone();
            let schema = meta["schemas"]
                .as_array()
                .and_then(|s| s.iter().find(|s| s["schema-id"] == schema_id))
                .cloned()
                .ok_or_else(|| Error::Internal("iceberg: the current schema is missing".into()))?;
            let snapshot_id = i64::try_from(uuid::Uuid::new_v4().as_u64_pair().0 >> 1).unwrap_or(1);
            let ctx = Ctx {
                schema: &schema,
                spec: &spec,
                spec_json: &spec_json,
                snapshot_id,
                sequence: metadata::next_sequence_number(&meta),
            };
            let changes = match &current {
                Some(c) => self.delta_changes(c.delta_version, snapshot.version).await?,
                None => None,
            };
            let (manifests, operation, added, deleted) = match (&current, changes) {
                (Some(c), Some(changes)) => self.incremental(snapshot, c, changes, &ctx).await?,
                _ => self.full(snapshot, &ctx, current.is_some()).await?,
            };
            let list = avro::manifest_list_bytes(
                &manifests,
                snapshot_id,
                current.as_ref().map(|c| c.snapshot_id),
                ctx.sequence,
            )?;
            let (list_url, _) =
                self.put_new(&format!("snap-{snapshot_id}-{}.avro", uuid::Uuid::new_v4()), list).await?;
            let live = |f: fn(&ManifestFile) -> i64| manifests.iter().map(f).fold(0, i64::saturating_add);
            metadata::add_snapshot(
                &mut meta,
                &NewSnapshot {
                    snapshot_id,
                    manifest_list: list_url,
                    delta_version: snapshot.version,
                    timestamp_ms: now,
                    operation,
                    added_files: added.0,
                    deleted_files: deleted.0,
                    added_records: added.1,
                    deleted_records: deleted.1,
                    total_files: live(ManifestFile::live_files),
                    total_records: live(|m| m.added_rows + m.existing_rows),
                },
                (n > 0)
                    .then(|| (self.iceberg_url(&metadata_file_name(n)), now))
                    .as_ref()
                    .map(|(f, t)| (f.as_str(), *t)),
            );
            let name = metadata_file_name(n + 1);
            let path = self.iceberg_path(&name);
            let body =
                serde_json::to_vec_pretty(&meta).map_err(|e| Error::Internal(format!("iceberg metadata: {e}")))?;
            crate::failpoint::hit("uniform.before_metadata");
            let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
            match self.store.put_opts(&path, PutPayload::from(body), opts).await {
                Ok(_) => {}
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                    // Another converter, or our own put whose answer was lost: read it back.
                    if !self.holds_snapshot(&path, snapshot_id).await? {
                        last_error = format!("{name} was written by another converter");
                        continue;
                    }
                }
                Err(e) => {
                    last_error = e.to_string();
                    if !self.holds_snapshot(&path, snapshot_id).await.unwrap_or(false) {
                        continue;
                    }
                }
            }
            let hint = self.iceberg_path(VERSION_HINT);
            if let Err(e) = self.store.put(&hint, PutPayload::from((n + 1).to_string())).await {
                // Readers of the hint see the previous snapshot; the next conversion finds
                // this one past it.
                tracing::warn!(error = %e, "uniform.hint_not_written");
            }
            // The metadata file that just left the metadata log is no longer referenced.
            if let Some(old) = n.checked_sub(metadata::KEPT_SNAPSHOTS as u64).filter(|o| *o > 0) {
                let _ = self.store.delete(&self.iceberg_path(&metadata_file_name(old))).await;
            }
            tracing::debug!(metadata = n + 1, delta_version = snapshot.version, operation, "uniform.converted");
            return Ok(IcebergState { metadata_version: n + 1, snapshot_id, delta_version: snapshot.version });
        }
        Err(Error::Storage {
            path: self.iceberg_path("").to_string(),
            source: object_store::Error::Generic {
                store: "uniform",
                source: format!("gave up after {} attempts: {last_error}", crate::common::retry::ICEBERG_COMMITS)
                    .into(),
            },
        })
    }

    async fn holds_snapshot(&self, path: &Path, snapshot_id: i64) -> Result<bool> {
        Ok(match self.get_opt(path).await? {
            Some(b) => serde_json::from_slice::<Value>(&b)
                .is_ok_and(|m| m["current-snapshot-id"].as_i64() == Some(snapshot_id)),
            None => false,
        })
    }

    /// Every live file, in fresh manifests.
    async fn full(
        &self,
        version: &DeltaVersion<'_>,
        ctx: &Ctx<'_>,
        replacing: bool,
    ) -> Result<(Vec<ManifestFile>, &'static str, (i64, i64), (i64, i64))> {
        let loaded;
        let snapshot = match version.snapshot.filter(|s| s.version == version.version) {
            Some(s) => s,
            None => {
                loaded = self.snapshot(Some(version.version)).await?;
                &loaded
            }
        };
        let mut entries = Vec::new();
        for add in snapshot.files() {
            let (_, rel) = self.data_path(&add.path)?;
            let file = data_file(add, self.url(), &rel, &snapshot.schema, snapshot.column_mapping(), ctx.spec)?;
            entries.push(Entry {
                status: ADDED,
                snapshot_id: ctx.snapshot_id,
                sequence_number: ctx.sequence,
                file_sequence_number: ctx.sequence,
                file,
            });
        }
        let added = (entries.len() as i64, entries.iter().map(|e| e.file.record_count).sum());
        let mut manifests = Vec::new();
        for chunk in entries.chunks(MANIFEST_ENTRIES) {
            manifests.push(self.write_manifest(chunk, ctx).await?);
        }
        Ok((manifests, if replacing { "overwrite" } else { "append" }, added, (0, 0)))
    }

    /// The previous snapshot's manifests with `changes` applied.
    async fn incremental(
        &self,
        snapshot: &DeltaVersion<'_>,
        current: &metadata::Current,
        changes: Changes,
        ctx: &Ctx<'_>,
    ) -> Result<(Vec<ManifestFile>, &'static str, (i64, i64), (i64, i64))> {
        let previous = avro::read_manifest_list(&self.get_required(&current.manifest_list).await?)?;
        let root = self.url().trim_end_matches('/');
        let removed: HashSet<String> = changes.removed.iter().map(|r| format!("{root}/{r}")).collect();
        let mut out = Vec::with_capacity(previous.len() + 1);
        let mut deleted = (0i64, 0i64);
        for m in previous {
            if m.live_files() == 0 {
                continue;
            }
            let stale = m.partitions.iter().any(avro::FieldSummary::lacks_bounds);
            if removed.is_empty() && !stale {
                out.push(m);
                continue;
            }
            let entries = avro::read_manifest(&self.get_required(&m.path).await?)?;
            if !entries.iter().any(|e| e.status != DELETED && removed.contains(&e.file.path)) {
                out.push(with_summaries(m, &entries, ctx.spec));
                continue;
            }
            let mut rewritten = Vec::with_capacity(entries.len());
            for e in entries.into_iter().filter(|e| e.status != DELETED) {
                if removed.contains(&e.file.path) {
                    deleted.0 += 1;
                    deleted.1 += e.file.record_count;
                    rewritten.push(Entry { status: DELETED, snapshot_id: ctx.snapshot_id, ..e });
                } else {
                    rewritten.push(Entry { status: EXISTING, ..e });
                }
            }
            out.push(self.write_manifest(&rewritten, ctx).await?);
        }
        let mut added_entries = Vec::with_capacity(changes.added.len());
        for (rel, add) in &changes.added {
            let file = data_file(add, self.url(), rel, snapshot.schema, snapshot.mode, ctx.spec)?;
            added_entries.push(Entry {
                status: ADDED,
                snapshot_id: ctx.snapshot_id,
                sequence_number: ctx.sequence,
                file_sequence_number: ctx.sequence,
                file,
            });
        }
        let added = (added_entries.len() as i64, added_entries.iter().map(|e| e.file.record_count).sum());
        if !added_entries.is_empty() {
            out.push(self.write_manifest(&added_entries, ctx).await?);
        }
        if out.len() > MAX_MANIFESTS {
            out = self.merge_small(out, ctx).await?;
        }
        let operation = match (added.0 > 0, deleted.0 > 0) {
            (true, true) if !changes.data_change => "replace",
            (true, true) => "overwrite",
            (false, true) => "delete",
            _ => "append",
        };
        Ok((out, operation, added, deleted))
    }

    /// Merges the smallest half of the manifests (those with fewer than [`MANIFEST_ENTRIES`]
    /// live files) into one: size-tiered, so an entry is rewritten about log(files) times
    /// over the table's life rather than at every merge, and a conversion costs the same at
    /// 100 files and at 10,000.
    async fn merge_small(&self, mut manifests: Vec<ManifestFile>, ctx: &Ctx<'_>) -> Result<Vec<ManifestFile>> {
        manifests.sort_by_key(ManifestFile::live_files);
        let take =
            manifests.iter().take(MAX_MANIFESTS / 2).take_while(|m| m.live_files() < MANIFEST_ENTRIES as i64).count();
        if take < 2 {
            return Ok(manifests);
        }
        let mut keep = manifests.split_off(take);
        let small = manifests;
        let mut merged = Vec::new();
        for m in &small {
            for e in avro::read_manifest(&self.get_required(&m.path).await?)? {
                if e.status != DELETED {
                    merged.push(Entry { status: EXISTING, ..e });
                }
            }
        }
        for chunk in merged.chunks(MANIFEST_ENTRIES) {
            keep.push(self.write_manifest(chunk, ctx).await?);
        }
        Ok(keep)
    }
}

/// A carried-over manifest with its partition summaries made again from its entries (a
/// summary without bounds makes pruning readers skip the manifest).
fn with_summaries(m: ManifestFile, entries: &[Entry], spec: &[PartitionField]) -> ManifestFile {
    let partitions = spec.iter().enumerate().map(|(i, p)| avro::FieldSummary::of(entries, i, p.kind)).collect();
    ManifestFile { partitions, ..m }
}

/// What every manifest of one conversion shares.
struct Ctx<'a> {
    schema: &'a Value,
    spec: &'a [PartitionField],
    spec_json: &'a Value,
    snapshot_id: i64,
    sequence: i64,
}
