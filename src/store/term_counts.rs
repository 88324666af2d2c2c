//! How many records have each common term, by who may see them.
//!
//! BM25 weighs a term by how many of the caller's records have it. For a
//! term in few records that count is the number of its visible matches,
//! read anyway to score them; for a term in most records, counting its
//! matches would cost in proportion to everything the caller may see. So
//! a term can be *counted*: it gets a number, and every partition of
//! visibility (scope, type, sensitivity, retracted or not: the rows of
//! `text_totals`) keeps a vector of document counts indexed by those
//! numbers, changed in the transaction of every write that changes a
//! record's terms or who may see it. A caller's document frequency of a
//! counted term is the sum over its partitions, whatever their size.
//!
//! A term is counted when a retrieval finds it common and asks for it
//! (the writer counts its matches in the full-text index when next idle,
//! or at its next commit), or when the counts are first made (every term
//! in [`COUNTED_FROM`] records or more): writes pay only for the terms
//! questions use.
//!
//! Vectors of [`CHUNK`] terms, not one row per term and partition: a
//! write changes a few short vectors in each partition it touches (a row
//! per term made single-record ingest about 40% slower; one vector of
//! every counted term per partition, 10–20% slower once thousands of
//! terms were counted). The most common terms are counted first, so they
//! share the first vectors.

/// Terms per vector.
pub const CHUNK: u32 = if cfg!(test) { 2 } else { 256 };

/// The vector of term `number` (from 1), and its number there (from 1).
pub fn chunk_of(number: u32) -> (i64, u32) {
    (i64::from((number - 1) / CHUNK), (number - 1) % CHUNK + 1)
}

/// Records a term must be found in to be counted.
pub const COUNTED_FROM: u32 = if cfg!(test) { 3 } else { 1000 };

/// Terms counted in one transaction at most: each reads its matches in
/// the full-text index, and the writes behind it wait for them.
pub const COUNTED_AT_ONCE: usize = 8;

/// Takes the first [`COUNTED_AT_ONCE`] (at most) of the terms waiting to
/// be counted.
pub fn take_some(wanted: &mut std::collections::BTreeSet<String>) -> Vec<String> {
    let mut taken = Vec::new();
    while taken.len() < COUNTED_AT_ONCE {
        match wanted.pop_first() {
            Some(term) => taken.push(term),
            None => break,
        }
    }
    taken
}

/// The counts of a vector, from its stored bytes (little-endian `u32`,
/// one per counted term, by number from 1; a vector shorter than the
/// numbers given has zeros for the rest).
pub fn decode(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The stored bytes of `counts`, without the zeros that end it.
pub fn encode(counts: &[u32]) -> Vec<u8> {
    let used = counts.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    counts[..used]
        .iter()
        .flat_map(|c| c.to_le_bytes())
        .collect()
}

/// Adds `deltas` (term number from 1, change) to the vector `bytes`.
/// A count never goes below zero: what a write takes away it added.
pub fn apply(bytes: &[u8], deltas: &[(u32, i64)]) -> Vec<u8> {
    let mut counts = decode(bytes);
    for &(number, delta) in deltas {
        let at = number as usize - 1;
        if counts.len() <= at {
            counts.resize(at + 1, 0);
        }
        counts[at] = (i64::from(counts[at]) + delta).clamp(0, i64::from(u32::MAX)) as u32;
    }
    encode(&counts)
}

/// `deltas` as the bytes [`apply_encoded`] reads: each a little-endian
/// `u32` number and `i64` change.
pub fn encode_deltas(deltas: &[(u32, i64)]) -> Vec<u8> {
    deltas
        .iter()
        .flat_map(|(n, d)| n.to_le_bytes().into_iter().chain(d.to_le_bytes()))
        .collect()
}

/// [`apply`] with the deltas as [`encode_deltas`] wrote them.
pub fn apply_encoded(bytes: &[u8], deltas: &[u8]) -> Vec<u8> {
    let deltas: Vec<(u32, i64)> = deltas
        .chunks_exact(12)
        .filter_map(|d| {
            let number = u32::from_le_bytes(d[..4].try_into().ok()?);
            let delta = i64::from_le_bytes(d[4..].try_into().ok()?);
            (number > 0).then_some((number, delta))
        })
        .collect();
    apply(bytes, &deltas)
}

/// The count of term `number` (from 1) in the vector `bytes`.
pub fn count_in(bytes: &[u8], number: u32) -> u32 {
    let at = (number as usize - 1) * 4;
    bytes
        .get(at..at + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_grow_as_terms_are_numbered_and_lose_their_trailing_zeros() {
        let v = apply(&[], &[(3, 2)]);
        assert_eq!(decode(&v), vec![0, 0, 2]);
        let v = apply(&v, &[(1, 1), (3, -2)]);
        assert_eq!(decode(&v), vec![1]);
        assert_eq!(count_in(&v, 1), 1);
        assert_eq!(count_in(&v, 3), 0);
        assert_eq!(count_in(&v, 1000), 0);
        // Never below zero.
        assert_eq!(decode(&apply(&v, &[(1, -5)])), Vec::<u32>::new());
        // As the database's function is given them.
        let changes = [(2, 7), (1, -1), (4, 1)];
        assert_eq!(
            apply_encoded(&v, &encode_deltas(&changes)),
            apply(&v, &changes)
        );
    }

    #[test]
    fn numbers_fall_in_chunks_in_order() {
        let chunks: Vec<(i64, u32)> = (1..=5).map(chunk_of).collect();
        assert_eq!(chunks, [(0, 1), (0, 2), (1, 1), (1, 2), (2, 1)]);
    }
}
