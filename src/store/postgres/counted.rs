//! The counted terms on PostgreSQL (schema version 13; what they are for:
//! `store::term_counts`): their numbers in `counted_terms`, and an array
//! of document counts per partition, shard and chunk of numbers in
//! `term_counts` (per scope) and `term_counts_all` (over every scope),
//! kept by the schema's triggers in the transaction of each write.
//!
//! A term is counted when a retrieval finds it common and asks for it:
//! readers cannot write (their transactions are read-only), so they leave
//! it in the `Wanted` their connections share (`connection.rs`), and a
//! writer counts it before its next transaction, or when idle
//! ([`count_wanted`]).

use super::connection::Pg;
use crate::store::error::StoreError;
use crate::store::ranking::source::TermCount;

/// Terms per chunk: the schema's triggers number them so.
const CHUNK: i32 = 256;

/// The document frequency of each of `terms` among the records of the
/// partitions `scopes` (`None`: every scope; else these and the unscoped),
/// `layers`, sensitivities up to `max_sensitivity` and `lives` hold, and
/// the most times one record has had it; `None` for a term not counted,
/// which a writer is then asked to count when `count_missing`.
pub(crate) fn frequencies(
    pg: &Pg,
    terms: &[String],
    scopes: Option<&[String]>,
    layers: &[i64],
    max_sensitivity: i64,
    lives: &[bool],
    count_missing: bool,
) -> Result<Vec<Option<TermCount>>, StoreError> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let partitions = format!(
        "c.chunk = (n.id - 1) / {CHUNK} AND c.layer = ANY($2) AND c.sensitivity <= $3
         AND c.live = ANY($4)"
    );
    let rows = match scopes {
        None => pg.query(
            &format!(
                "SELECT n.term, n.most, COALESCE(SUM(c.counts[(n.id - 1) % {CHUNK} + 1]), 0)::bigint
                 FROM counted_terms n LEFT JOIN term_counts_all c ON {partitions}
                 WHERE n.term = ANY($1) GROUP BY n.term, n.most"
            ),
            &[&terms, &layers, &max_sensitivity, &lives],
        )?,
        Some(scopes) => {
            let mut scopes = scopes.to_vec();
            scopes.push(String::new());
            pg.query(
                &format!(
                    "SELECT n.term, n.most,
                            COALESCE(SUM(c.counts[(n.id - 1) % {CHUNK} + 1]), 0)::bigint
                     FROM counted_terms n
                     LEFT JOIN term_counts c ON c.scope = ANY($5) AND {partitions}
                     WHERE n.term = ANY($1) GROUP BY n.term, n.most"
                ),
                &[&terms, &layers, &max_sensitivity, &lives, &scopes],
            )?
        }
    };
    let mut found: Vec<Option<TermCount>> = vec![None; terms.len()];
    for row in rows {
        let term: String = row.try_get(0)?;
        let most: i32 = row.try_get(1)?;
        let docs: i64 = row.try_get(2)?;
        for (i, _) in terms.iter().enumerate().filter(|(_, t)| **t == term) {
            found[i] = Some(TermCount {
                docs: docs.max(0) as u64,
                most: most.max(1) as u32,
            });
        }
    }
    if count_missing {
        pg.wanted.want(
            terms
                .iter()
                .zip(&found)
                .filter(|(_, f)| f.is_none())
                .map(|(t, _)| t),
        );
    }
    Ok(found)
}

/// Counts (at most [`COUNTED_AT_ONCE`](crate::store::term_counts::COUNTED_AT_ONCE) of) the terms retrievals asked for,
/// in a transaction of its own: no record is written meanwhile (so none is
/// counted twice or missed), and it gives up at once rather than wait on
/// another transaction's lock, leaving the terms for the next time.
/// Answers whether it counted any.
pub fn count_wanted(pg: &Pg) -> Result<bool, StoreError> {
    let terms = pg.wanted.take();
    if terms.is_empty() {
        return Ok(false);
    }
    let counted = pg
        .batch(
            "BEGIN; SET LOCAL lock_timeout = '200ms'; SET LOCAL statement_timeout = 0;
             LOCK TABLE records IN SHARE MODE",
        )
        .and_then(|()| {
            for term in &terms {
                count(pg, term)?;
            }
            pg.batch("COMMIT")
        });
    if let Err(e) = counted {
        let _ = pg.batch("ROLLBACK");
        pg.wanted.want(&terms);
        return Err(e);
    }
    Ok(true)
}

/// Numbers `term` and counts the records that have it, by partition, and
/// the most times one has had it; a term counted already is left as it is.
fn count(pg: &Pg, term: &str) -> Result<(), StoreError> {
    let Some(row) = pg.query_opt(
        "INSERT INTO counted_terms (term) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id",
        &[&term],
    )?
    else {
        return Ok(());
    };
    let id: i32 = row.try_get(0)?;
    let (chunk, at) = ((id - 1) / CHUNK, (id - 1) % CHUNK + 1);
    // As the postings are looked up, so the counts are theirs.
    let query = term_query(term);
    pg.execute(
        "WITH t AS (
             SELECT COALESCE(scope, '') AS scope, layer, sensitivity,
                    status <> 'retracted' AS live, COUNT(*)::int AS d
             FROM records WHERE search @@ (SELECT to_tsquery('simple', $1))
             GROUP BY 1, 2, 3, 4),
         by_scope AS (
             INSERT INTO term_counts (scope, layer, sensitivity, live, shard, chunk, counts)
             SELECT scope, layer, sensitivity, live, pg_backend_pid() % 16, $2,
                    engram_counts_add('{}', ARRAY[$3::int], ARRAY[d])
             FROM t
             ON CONFLICT (scope, layer, sensitivity, live, shard, chunk) DO UPDATE
             SET counts = engram_counts_sum(term_counts.counts, excluded.counts))
         INSERT INTO term_counts_all (layer, sensitivity, live, shard, chunk, counts)
         SELECT layer, sensitivity, live, pg_backend_pid() % 16, $2,
                engram_counts_add('{}', ARRAY[$3::int], ARRAY[SUM(d)::int])
         FROM t GROUP BY layer, sensitivity, live
         ON CONFLICT (layer, sensitivity, live, shard, chunk) DO UPDATE
         SET counts = engram_counts_sum(term_counts_all.counts, excluded.counts)",
        &[&query, &chunk, &at],
    )?;
    pg.execute(
        "UPDATE counted_terms SET most = GREATEST(most, COALESCE((
             SELECT MAX(w[2]::int)
             FROM records, regexp_matches(search_repeats, '(\\S+) (\\d+)', 'g') AS w
             WHERE search @@ (SELECT to_tsquery('simple', $2)) AND w[1] = $3), 1))
         WHERE id = $1",
        &[&id, &query, &term],
    )?;
    Ok(())
}

/// The text of `to_tsquery('simple', …)` that finds the records with
/// `term` (an analyser's term): quoted, so it is one lexeme.
pub(super) fn term_query(term: &str) -> String {
    format!("'{}'", term.replace('\'', "''"))
}
