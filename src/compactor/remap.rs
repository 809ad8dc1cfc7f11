//! Carrying deletions made during a rewrite onto the rewritten files [sync].
//!
//! A bin is rewritten from its inputs' live rows (each input's deletion vector as read applied),
//! in input order and row order, into output files in write order. When a writer marks more
//! rows of an input deleted before the bin commits (a keyed flush, a delete), those physical
//! rows are found in the outputs: an input row's output position is the input's offset plus
//! the number of live rows before it. The bin then commits with those positions as the outputs'
//! deletion vectors instead of abandoning, so neither the deletion nor the compaction is lost.

use roaring::RoaringTreemap;

/// One input of a rewritten bin.
#[derive(Debug, Clone, Default)]
pub(crate) struct Input {
    /// Rows read from it (its live rows when it was rewritten).
    pub live: u64,
    /// Its deletion vector when it was read.
    pub read_dv: RoaringTreemap,
}

/// The output deletion vectors for rows deleted after the rewrite read them: `now[i]` is input
/// `i`'s deletion vector now, `outputs` the row counts of the output files in write order.
///
/// # Errors
/// A reason when the deletions cannot be carried over: a row deleted at read time that is no
/// longer deleted, a row past the input's rows, or outputs that do not hold the inputs' rows.
pub(crate) fn remap(inputs: &[Input], now: &[RoaringTreemap], outputs: &[u64]) -> Result<Vec<RoaringTreemap>, String> {
    if inputs.len() != now.len() {
        return Err("one deletion vector per input is needed".into());
    }
    let total: u64 = inputs.iter().map(|i| i.live).fold(0, u64::saturating_add);
    let held: u64 = outputs.iter().copied().fold(0, u64::saturating_add);
    if held != total {
        return Err(format!("the outputs hold {held} rows, the inputs {total}"));
    }
    let mut starts = Vec::with_capacity(outputs.len());
    let mut at = 0u64;
    for n in outputs {
        starts.push(at);
        at += n;
    }
    let mut out = vec![RoaringTreemap::new(); outputs.len()];
    let mut offset = 0u64;
    for (input, now) in inputs.iter().zip(now) {
        if !input.read_dv.is_subset(now) {
            return Err("a row deleted when the bin was read is live again".into());
        }
        for row in now - &input.read_dv {
            // Live rows before `row` (it is live in the read: the read DV does not hold it).
            let rank = row - input.read_dv.rank(row);
            if rank >= input.live {
                return Err(format!("deleted row {row} is past the input's {} live rows", input.live));
            }
            let global = offset + rank;
            let file = starts.partition_point(|s| *s <= global) - 1;
            out[file].insert(global - starts[file]);
        }
        offset += input.live;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[u64]) -> RoaringTreemap {
        v.iter().copied().collect()
    }

    #[test]
    fn deletions_land_on_the_rows_they_deleted() {
        // Input 0: 6 physical rows, rows 1 and 4 deleted when read (live: 0 2 3 5 → 0..4).
        // Input 1: 3 rows, none deleted (live: 0 1 2 → 4..7). Outputs: 5 rows then 2.
        let inputs = [Input { live: 4, read_dv: set(&[1, 4]) }, Input { live: 3, read_dv: set(&[]) }];
        let now = [set(&[1, 3, 4, 5]), set(&[0, 2])];
        let out = remap(&inputs, &now, &[5, 2]).unwrap();
        // Input 0 row 3 → global 2, row 5 → global 3; input 1 row 0 → 4, row 2 → 6 (file 1 row 1).
        assert_eq!(out, vec![set(&[2, 3, 4]), set(&[1])]);
        // Nothing new: nothing to carry.
        assert_eq!(remap(&inputs, &[set(&[1, 4]), set(&[])], &[5, 2]).unwrap(), vec![set(&[]), set(&[])]);
    }

    #[test]
    fn what_cannot_be_carried_is_refused() {
        let inputs = [Input { live: 2, read_dv: set(&[0]) }];
        assert!(remap(&inputs, &[set(&[])], &[2]).is_err(), "undeleted row");
        assert!(remap(&inputs, &[set(&[0, 7])], &[2]).is_err(), "row past the input");
        assert!(remap(&inputs, &[set(&[0])], &[3]).is_err(), "outputs of other rows");
        assert!(remap(&inputs, &[], &[2]).is_err());
    }
}
