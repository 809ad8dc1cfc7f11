//! Checks of a Parquet footer before any page is read: the parquet crate asserts (panics) on
//! some impossible values of a damaged or hostile file — negative column-chunk offsets or
//! sizes — so they are refused here first, as an error.

use parquet::file::metadata::ParquetMetaData;

/// Why a footer cannot be trusted, if it cannot.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn footer_problem(metadata: &ParquetMetaData, file_len: Option<u64>) -> Option<String> {
    for (g, group) in metadata.row_groups().iter().enumerate() {
        if group.num_rows() < 0 {
            return Some(format!("row group {g} has a negative row count"));
        }
        for (c, column) in group.columns().iter().enumerate() {
            let start = column.dictionary_page_offset().unwrap_or(column.data_page_offset());
            let len = column.compressed_size();
            if start < 0 || len < 0 || column.data_page_offset() < 0 {
                return Some(format!("column chunk {c} of row group {g} has a negative offset or size"));
            }
            let end = (start as u64).checked_add(len as u64);
            if let (Some(total), Some(end)) = (file_len, end) {
                if end > total {
                    return Some(format!("column chunk {c} of row group {g} ends past the file ({end} > {total})"));
                }
            } else if end.is_none() {
                return Some(format!("column chunk {c} of row group {g} overflows"));
            }
        }
    }
    None
}
