//! [sync] Compaction of clustered tables: which files a run clusters, and the order their rows
//! are written in.
//!
//! - **Incremental**: a run takes the files deltabus has not clustered yet (no
//!   `clusteringProvider`, or another engine's), all of them with `full`; a table with nothing
//!   new is left alone. The files are packed, oldest first, into bins of at most
//!   `max_bytes` (the memory a bin's rows take while they are ordered is bounded by it), each
//!   rewritten and committed on its own (`OPTIMIZE`, `dataChange=false`) with
//!   `clusteringProvider = "deltabus"` on its outputs.
//! - **Order**: a multi-dimensional key that gives every clustering column equal weight
//!   whatever its range or skew: each column's values are replaced by their rank in the bin
//!   (nulls first), scaled to `64 / columns` bits, and the point of ranks placed on a Hilbert
//!   curve (the Z-order of the interleaved bits is the other [`Curve`]; the
//!   `clustering_layout` benchmark measures both: on three columns of different shapes a
//!   query reads 27.5% of the files after Hilbert, 30.8% after Z-order, 96% before). Rows
//!   sorted by that key and cut into files of the target size leave each file a narrow range
//!   of every clustering column, so min/max statistics skip files for a filter on any of
//!   them.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt64Array};
use arrow::compute::{sort_to_indices, take_record_batch, SortOptions};

use super::planner::Bin;
use crate::delta::actions::Add;
use crate::error::{Error, Result};

/// The `clusteringProvider` of the files deltabus clusters.
pub(crate) const PROVIDER: &str = "deltabus";

/// Input bytes (Parquet) of one clustering bin by default.
pub(crate) const BIN_BYTES: u64 = 256 << 20;

/// The bins of a clustering run over `files` (see the module's contract); an incremental run
/// with fewer than `min_files` candidates (the background compactor's threshold) does nothing.
pub(crate) fn plan(files: &[&Add], full: bool, max_bytes: u64, min_files: usize) -> Vec<Bin> {
    let mut candidates: Vec<&Add> =
        files.iter().copied().filter(|f| full || f.clustering_provider.as_deref() != Some(PROVIDER)).collect();
    if !full && candidates.len() < min_files {
        return Vec::new();
    }
    candidates.sort_by(|a, b| a.modification_time.cmp(&b.modification_time).then_with(|| a.path.cmp(&b.path)));
    let mut bins: Vec<Bin> = Vec::new();
    let mut size = 0u64;
    for f in candidates {
        let bytes = u64::try_from(f.size).unwrap_or(0);
        match bins.last_mut() {
            Some(bin) if size.saturating_add(bytes) <= max_bytes => bin.files.push(f.clone()),
            _ => {
                bins.push(Bin { partition_values: f.partition_values.clone(), files: vec![f.clone()] });
                size = 0;
            }
        }
        size = size.saturating_add(bytes);
    }
    bins
}

/// The space-filling curve a clustering key follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Curve {
    /// The ranks' bits interleaved (Morton order).
    ZOrder,
    /// The Hilbert curve through the ranks (Skilling's transform): no long jumps between
    /// neighbouring keys.
    Hilbert,
}

/// The curve `compact` clusters by (the `clustering_layout` benchmark compares them).
pub(crate) const CURVE: Curve = Curve::Hilbert;

/// `batch`'s rows in clustering order by the columns at `columns` (logical paths; nested
/// columns through their structs).
///
/// # Errors
/// [`Error::Internal`] for a column the batch lacks or a type Arrow cannot sort.
pub(crate) fn ordered(batch: &RecordBatch, columns: &[Vec<String>]) -> Result<RecordBatch> {
    ordered_by(batch, columns, CURVE)
}

/// [`ordered`] along `curve`.
///
/// # Errors
/// As [`ordered`].
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn ordered_by(batch: &RecordBatch, columns: &[Vec<String>], curve: Curve) -> Result<RecordBatch> {
    let n = batch.num_rows();
    if n < 2 || columns.is_empty() {
        return Ok(batch.clone());
    }
    let bits = (64 / columns.len()).min(32) as u32;
    let mut ranks: Vec<Vec<u64>> = Vec::with_capacity(columns.len());
    for path in columns {
        let column = column_at(batch, path)
            .ok_or_else(|| Error::Internal(format!("clustering column {} is not in the rows", path.join("."))))?;
        ranks.push(scaled_ranks(&column, bits)?);
    }
    let keys: UInt64Array = match curve {
        Curve::ZOrder => (0..n).map(|row| Some(interleave(ranks.iter().map(|r| r[row]), bits))).collect(),
        Curve::Hilbert => {
            (0..n).map(|row| Some(hilbert(ranks.iter().map(|r| r[row] as u32).collect(), bits))).collect()
        }
    };
    let order = sort_to_indices(&keys, None, None).map_err(|e| Error::Internal(format!("clustering order: {e}")))?;
    take_record_batch(batch, &order).map_err(|e| Error::Internal(format!("clustering rows: {e}")))
}

/// Each row's rank among `column`'s values (nulls first), scaled to `bits` bits.
fn scaled_ranks(column: &ArrayRef, bits: u32) -> Result<Vec<u64>> {
    let options = SortOptions { descending: false, nulls_first: true };
    let order = sort_to_indices(column, Some(options), None)
        .map_err(|e| Error::Internal(format!("clustering column of type {}: {e}", column.data_type())))?;
    let n = order.len() as u128;
    let mut ranks = vec![0u64; order.len()];
    for (rank, row) in order.values().iter().enumerate() {
        ranks[*row as usize] = ((rank as u128) << bits).checked_div(n).unwrap_or(0) as u64;
    }
    Ok(ranks)
}

/// The Z-order key of one row: the bits of its scaled ranks interleaved, most significant
/// first.
fn interleave(ranks: impl Iterator<Item = u64> + Clone, bits: u32) -> u64 {
    let mut key = 0u64;
    for bit in (0..bits).rev() {
        for r in ranks.clone() {
            key = (key << 1) | ((r >> bit) & 1);
        }
    }
    key
}

/// The Hilbert index of a point (`bits` bits per axis): Skilling's axes-to-transpose
/// transform ("Programming the Hilbert curve", 2004), then the transposed bits interleaved.
fn hilbert(mut x: Vec<u32>, bits: u32) -> u64 {
    let dims = x.len();
    if dims == 1 || bits == 0 {
        return x.first().map_or(0, |v| u64::from(*v));
    }
    let top = 1u32 << (bits - 1);
    let mut q = top;
    while q > 1 {
        let p = q - 1;
        for i in 0..dims {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    for i in 1..dims {
        x[i] ^= x[i - 1];
    }
    let mut t = 0u32;
    q = top;
    while q > 1 {
        if x[dims - 1] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for v in &mut x {
        *v ^= t;
    }
    interleave(x.iter().map(|v| u64::from(*v)), bits)
}

/// The column at a logical path, through struct columns.
fn column_at(batch: &RecordBatch, path: &[String]) -> Option<ArrayRef> {
    let (first, rest) = path.split_first()?;
    let mut column: ArrayRef = batch.column_by_name(first)?.clone();
    for name in rest {
        let s = column.as_struct_opt()?;
        column = Arc::clone(s.column_by_name(name)?);
    }
    Some(column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};

    fn file(path: &str, size: i64, time: i64, provider: Option<&str>) -> Add {
        let line = format!(
            r#"{{"add":{{"path":"{path}","partitionValues":{{}},"size":{size},"modificationTime":{time},"dataChange":true}}}}"#
        );
        let Ok(Some(crate::delta::actions::Action::Add(mut a))) = crate::delta::actions::parse_action_line(&line, "t")
        else {
            panic!("an add")
        };
        a.clustering_provider = provider.map(String::from);
        a
    }

    #[test]
    fn runs_take_what_is_not_clustered_yet_in_bounded_bins() {
        let files = [
            file("a", 100, 3, None),
            file("b", 100, 1, Some(PROVIDER)),
            file("c", 100, 2, Some("liquid")),
            file("d", 250, 4, None),
        ];
        let refs: Vec<&Add> = files.iter().collect();
        let bins = plan(&refs, false, 250, 0);
        assert!(plan(&refs, false, 250, 4).is_empty(), "fewer candidates than the threshold");
        let paths: Vec<Vec<&str>> = bins.iter().map(|b| b.files.iter().map(|f| f.path.as_str()).collect()).collect();
        assert_eq!(paths, vec![vec!["c", "a"], vec!["d"]]);
        assert_eq!(plan(&refs, true, 1000, 9).iter().map(|b| b.files.len()).sum::<usize>(), 4);
        let clustered = [file("b", 100, 1, Some(PROVIDER))];
        assert!(plan(&clustered.iter().collect::<Vec<_>>(), false, 250, 0).is_empty(), "nothing new: nothing");
    }

    #[test]
    fn both_columns_weigh_the_same_whatever_their_ranges() {
        // A wide column (0..1e12 step) and a narrow one (four strings): a grid of 16 x 4.
        let wide: Vec<i64> = (0..64).map(|i| (i % 16) * 1_000_000_000).collect();
        let narrow: Vec<&str> = (0..64).map(|i| ["a", "b", "c", "d"][(i / 16) as usize]).collect();
        let batch = RecordBatch::try_from_iter([
            ("wide", Arc::new(Int64Array::from(wide)) as ArrayRef),
            ("narrow", Arc::new(StringArray::from(narrow)) as ArrayRef),
        ])
        .unwrap();
        let cols = [vec!["wide".to_string()], vec!["narrow".to_string()]];
        let out = ordered(&batch, &cols).unwrap();
        assert_eq!(out.num_rows(), 64);
        // Cut into 4 files of 16 rows: each holds a quarter of each column's range, never
        // one narrow value across the whole wide range (what sorting by one column gives).
        let narrow = out.column(1).as_string::<i32>();
        let wide = out.column(0).as_primitive::<arrow::datatypes::Int64Type>();
        for f in 0..4 {
            let rows = f * 16..(f + 1) * 16;
            let letters: std::collections::BTreeSet<&str> = rows.clone().map(|r| narrow.value(r)).collect();
            let span = rows.clone().map(|r| wide.value(r)).max().unwrap() - rows.map(|r| wide.value(r)).min().unwrap();
            assert_eq!(letters.len(), 2, "file {f}: {letters:?}");
            assert!(span < 8_000_000_000, "file {f} spans {span}");
        }
    }

    #[test]
    fn the_hilbert_curve_visits_every_cell_once_stepping_to_a_neighbour() {
        // 2 axes of 3 bits: an 8 x 8 grid; consecutive indexes are adjacent cells.
        let mut cells: Vec<(u64, (u32, u32))> =
            (0..8).flat_map(|a| (0..8).map(move |b| (hilbert(vec![a, b], 3), (a, b)))).collect();
        cells.sort_unstable();
        assert_eq!(cells.iter().map(|c| c.0).collect::<Vec<_>>(), (0..64).collect::<Vec<_>>());
        for w in cells.windows(2) {
            let ((a, b), (c, d)) = (w[0].1, w[1].1);
            assert_eq!(a.abs_diff(c) + b.abs_diff(d), 1, "{:?} -> {:?}", w[0], w[1]);
        }
    }

    #[test]
    fn nested_columns_and_nulls_order_too() {
        let city: ArrayRef = Arc::new(StringArray::from(vec![Some("z"), None, Some("a")]));
        let address = arrow::array::StructArray::from(vec![(
            Arc::new(arrow::datatypes::Field::new("city", arrow::datatypes::DataType::Utf8, true)),
            city,
        )]);
        let batch = RecordBatch::try_from_iter([("address", Arc::new(address) as ArrayRef)]).unwrap();
        let out = ordered(&batch, &[vec!["address".into(), "city".into()]]).unwrap();
        let city = out.column(0).as_struct().column(0).as_string::<i32>().clone();
        assert_eq!(city.iter().collect::<Vec<_>>(), vec![None, Some("a"), Some("z")]);
        assert!(ordered(&batch, &[vec!["nope".into()]]).is_err());
    }
}
