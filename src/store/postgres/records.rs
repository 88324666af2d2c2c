//! Records written on PostgreSQL: inserted, rewritten, retracted. The same
//! statements as `store::sqlite::records`, in PostgreSQL's dialect; the
//! search text is stemmed into the record's `search` column by the
//! statement that writes the record (reads are in `record_reads.rs`).

use super::connection::Pg;
use super::record_reads::{load_whole, record_key};
use crate::domain::analysis;
use crate::domain::decay::Anchor;
use crate::domain::payload::Payload;
use crate::domain::record::{AuditEntry, MemoryRecord, MemoryType, Sensitivity};
use crate::domain::search::{search_text, Searchable};
use crate::domain::time::{to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::records::{RecordStore, SalienceChange, Version};

/// The moment from which a record's stored salience, set at `at`, decays.
fn decays_from(record: &MemoryRecord, at: Timestamp) -> i64 {
    if record.lifecycle.pinned {
        i64::MAX
    } else {
        to_micros(&at)
    }
}

fn layer(record: &MemoryRecord) -> i64 {
    record.memory_type.layer() as i64
}

fn rank(sensitivity: Sensitivity) -> i64 {
    sensitivity.rank() as i64
}

/// Records per step of [`reindex_all`].
const REINDEX_BATCH: usize = 1000;

/// Makes every record's search column again from the record: when the
/// analyser's terms replaced the `english` configuration's (schema
/// version 5). Answers how many.
pub fn reindex_all(pg: &Pg) -> Result<usize, StoreError> {
    let now = chrono::Utc::now();
    let mut after = 0i64;
    let mut indexed = 0;
    loop {
        let keys: Vec<i64> = pg
            .query(
                "SELECT key FROM records WHERE key > $1 ORDER BY key LIMIT $2",
                &[&after, &(REINDEX_BATCH as i64)],
            )?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()?;
        let Some(last) = keys.last() else {
            return Ok(indexed);
        };
        after = *last;
        let records = load_whole(pg, &keys, now)?;
        set_search(pg, &records)?;
        indexed += records.len();
    }
}

/// Sets the search column of stored records from what they hold.
pub(super) fn set_search(pg: &Pg, records: &[MemoryRecord]) -> Result<(), StoreError> {
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    let analysed: Vec<_> = records
        .iter()
        .map(|r| analysis::analyse(&search_text(r)))
        .collect();
    let texts: Vec<&str> = analysed.iter().map(|a| a.text.as_str()).collect();
    let lengths: Vec<i64> = analysed.iter().map(|a| a.length).collect();
    let repeats: Vec<Option<&str>> = analysed.iter().map(|a| a.repeats.as_deref()).collect();
    pg.execute(
        "UPDATE records SET search = to_tsvector('simple', u.t)
             || engram_facets(key, layer, sensitivity, scope, status),
             search_length = u.l, search_repeats = u.r
         FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS u(i, t, l, r)
         WHERE records.id = u.i",
        &[&ids, &texts, &lengths, &repeats],
    )?;
    Ok(())
}

/// The columns of new records, one array per column, for the statement
/// that stores them all: a record's children carry the record's ordinal
/// (from 1) in the batch.
#[derive(Default)]
struct NewRows<'a> {
    ids: Vec<&'a str>,
    layers: Vec<i64>,
    sensitivities: Vec<i64>,
    confidences: Vec<f64>,
    saliences: Vec<f64>,
    scopes: Vec<Option<&'a str>>,
    statuses: Vec<&'a str>,
    created_by: Vec<Option<&'a str>>,
    created_at: Vec<i64>,
    updated_at: Vec<i64>,
    decays_from: Vec<i64>,
    abouts: Vec<Option<&'a str>>,
    texts: Vec<String>,
    search_lengths: Vec<i64>,
    search_repeats: Vec<Option<String>>,
    curves: Vec<&'a str>,
    half_lives: Vec<i64>,
    floors: Vec<f64>,
    max_ages: Vec<Option<i64>>,
    gains: Vec<f64>,
    reinforced_at: Vec<i64>,
    pinned: Vec<bool>,
    deletion: Vec<&'a str>,
    payloads: Vec<String>,
    successes: Vec<Option<i64>>,
    failures: Vec<Option<i64>>,
    tag_of: Vec<i64>,
    tags: Vec<&'a str>,
    tag_positions: Vec<i64>,
    source_of: Vec<i64>,
    sources: Children<'a>,
    relation_of: Vec<i64>,
    citation_of: Vec<i64>,
    audit_of: Vec<i64>,
    audit: AuditColumns<'a>,
    /// A turn's place (its conversation is the record's `about`).
    turns: TurnColumns<'a>,
}

/// The places of turns, one per record (`None` for a record that is no
/// turn).
#[derive(Default)]
struct TurnColumns<'a> {
    sessions: Vec<Option<&'a str>>,
    indexes: Vec<Option<i64>>,
    speakers: Vec<Option<&'a str>>,
    at: Vec<Option<i64>>,
    timed: Vec<Option<bool>>,
}

impl<'a> TurnColumns<'a> {
    fn push(&mut self, record: &'a MemoryRecord) {
        let turn = record.payload.turn();
        self.sessions.push(turn.map(|t| t.session_id.as_str()));
        self.indexes.push(turn.map(|t| t.index as i64));
        self.speakers.push(turn.map(|t| t.speaker.as_str()));
        self.at.push(turn.map(|t| to_micros(&t.at)));
        self.timed.push(turn.map(|t| t.timed()));
    }
}

impl<'a> NewRows<'a> {
    fn of(records: &[&'a MemoryRecord]) -> Result<NewRows<'a>, StoreError> {
        let mut rows = NewRows::default();
        for (n, &record) in (1_i64..).zip(records) {
            let lifecycle = &record.lifecycle;
            rows.ids.push(&record.id);
            rows.layers.push(layer(record));
            rows.sensitivities.push(rank(record.sensitivity));
            rows.confidences.push(record.confidence);
            rows.saliences.push(record.salience);
            rows.scopes.push(record.scope.as_deref());
            rows.statuses.push(record.status.as_str());
            rows.created_by
                .push(record.provenance.created_by.as_deref());
            rows.created_at.push(to_micros(&record.created_at));
            rows.updated_at.push(to_micros(&record.updated_at));
            rows.decays_from
                .push(decays_from(record, lifecycle.last_reinforced_at));
            rows.abouts.push(record.payload.about());
            let analysed = Searchable::of(record).analysed;
            rows.texts.push(analysed.text.clone());
            rows.search_lengths.push(analysed.length);
            rows.search_repeats.push(analysed.repeats.clone());
            rows.curves.push(lifecycle.decay.curve.as_str());
            rows.half_lives.push(lifecycle.decay.half_life_seconds);
            rows.floors.push(lifecycle.decay.min_salience);
            rows.max_ages.push(lifecycle.decay.max_age_seconds);
            rows.gains.push(lifecycle.decay.reinforcement_gain);
            rows.reinforced_at
                .push(to_micros(&lifecycle.last_reinforced_at));
            rows.pinned.push(lifecycle.pinned);
            rows.deletion.push(lifecycle.deletion_policy.as_str());
            rows.payloads.push(payload_json(&record.payload)?);
            let children = Children::of(record);
            rows.successes.push(children.competence.map(|c| c.0));
            rows.failures.push(children.competence.map(|c| c.1));
            for (position, tag) in (0_i64..).zip(&record.tags) {
                rows.tag_of.push(n);
                rows.tags.push(tag);
                rows.tag_positions.push(position);
            }
            rows.source_of
                .extend(std::iter::repeat_n(n, children.kinds.len()));
            rows.relation_of
                .extend(std::iter::repeat_n(n, children.predicates.len()));
            rows.citation_of
                .extend(std::iter::repeat_n(n, children.citations.len()));
            rows.sources.append(children);
            let audit = AuditColumns::of(&record.audit_log);
            rows.audit_of
                .extend(std::iter::repeat_n(n, audit.actions.len()));
            rows.audit.append(audit);
            rows.turns.push(record);
        }
        Ok(rows)
    }
}

/// The decay profile of a rewritten record, with the copies of its
/// columns the profile keeps; `anchor`: `None` keeps the stored anchor and
/// the stored salience.
fn update_lifecycle(
    pg: &Pg,
    key: i64,
    record: &MemoryRecord,
    anchor: Option<Anchor>,
) -> Result<(), StoreError> {
    let lifecycle = &record.lifecycle;
    pg.execute(
        "UPDATE decay_profiles SET curve = $2, half_life_seconds = $3, min_salience = $4,
             max_age_seconds = $5, reinforcement_gain = $6, last_reinforced_at = $7,
             pinned = $8, deletion_policy = $9,
             anchor_salience = COALESCE($10, anchor_salience),
             anchor_at = COALESCE($11, anchor_at),
             salience = COALESCE($10, salience), decays_from = COALESCE($12, decays_from),
             layer = $13, sensitivity = $14, scope = $15, status = $16, created_at = $17
         WHERE record_key = $1",
        &[
            &key,
            &lifecycle.decay.curve.as_str(),
            &lifecycle.decay.half_life_seconds,
            &lifecycle.decay.min_salience,
            &lifecycle.decay.max_age_seconds,
            &lifecycle.decay.reinforcement_gain,
            &to_micros(&lifecycle.last_reinforced_at),
            &lifecycle.pinned,
            &lifecycle.deletion_policy.as_str(),
            &anchor.map(|a| a.salience),
            &anchor.map(|a| to_micros(&a.at)),
            &anchor.map(|a| decays_from(record, a.at)),
            &layer(record),
            &rank(record.sensitivity),
            &record.scope,
            &record.status.as_str(),
            &to_micros(&record.created_at),
        ],
    )?;
    raise_bounds(pg, record)
}

/// Raises the decay bounds of the record's memory type to cover its
/// profile (see the SQLite migration 0005). The bounds this connection has
/// seen are kept (bounds only grow), so the statements run only when the
/// record may raise them. The stored bounds are read before the row is
/// written (and locked until the transaction ends): another writer's
/// transaction waits for that lock only when the bounds really rise.
fn raise_bounds(pg: &Pg, record: &MemoryRecord) -> Result<(), StoreError> {
    let decay = &record.lifecycle.decay;
    let wanted = (decay.half_life_seconds, decay.min_salience);
    if pg.bounds_cover(layer(record), wanted) {
        return Ok(());
    }
    if let Some(row) = pg.query_opt(
        "SELECT max_half_life_seconds, max_min_salience FROM decay_bounds WHERE layer = $1",
        &[&layer(record)],
    )? {
        pg.saw_bounds(layer(record), (row.try_get(0)?, row.try_get(1)?));
        if pg.bounds_cover(layer(record), wanted) {
            return Ok(());
        }
    }
    let row = pg.query_one(
        "INSERT INTO decay_bounds (layer, max_half_life_seconds, max_min_salience)
         VALUES ($1, $2, $3)
         ON CONFLICT (layer) DO UPDATE SET
             max_half_life_seconds = GREATEST(decay_bounds.max_half_life_seconds,
                                              excluded.max_half_life_seconds),
             max_min_salience = GREATEST(decay_bounds.max_min_salience,
                                         excluded.max_min_salience)
         RETURNING max_half_life_seconds, max_min_salience",
        &[&layer(record), &wanted.0, &wanted.1],
    )?;
    pg.saw_bounds(layer(record), (row.try_get(0)?, row.try_get(1)?));
    Ok(())
}

/// A record's child rows as column arrays, for statements that write them
/// all at once.
#[derive(Default)]
struct Children<'a> {
    kinds: Vec<&'a str>,
    refs: Vec<&'a str>,
    hashes: Vec<Option<&'a str>>,
    sources_by: Vec<Option<&'a str>>,
    sources_at: Vec<i64>,
    predicates: Vec<&'a str>,
    targets: Vec<&'a str>,
    weights: Vec<f64>,
    relations_at: Vec<i64>,
    citations: Vec<&'a str>,
    /// Successes and failures of a competence record that counts them.
    competence: Option<(i64, i64)>,
}

impl<'a> Children<'a> {
    fn of(record: &'a MemoryRecord) -> Children<'a> {
        let sources = &record.provenance.sources;
        let relations = &record.relations;
        Children {
            kinds: sources.iter().map(|s| s.kind.as_str()).collect(),
            refs: sources.iter().map(|s| s.reference.as_str()).collect(),
            hashes: sources.iter().map(|s| s.hash.as_deref()).collect(),
            sources_by: sources.iter().map(|s| s.created_by.as_deref()).collect(),
            sources_at: sources.iter().map(|s| to_micros(&s.timestamp)).collect(),
            predicates: relations.iter().map(|r| r.predicate.as_str()).collect(),
            targets: relations.iter().map(|r| r.target_id.as_str()).collect(),
            weights: relations.iter().map(|r| r.weight).collect(),
            relations_at: relations.iter().map(|r| to_micros(&r.created_at)).collect(),
            citations: record.citations(),
            competence: match &record.payload {
                Payload::Competence(c) => c
                    .performance
                    .as_ref()
                    .map(|p| (p.success_count as i64, p.failure_count as i64)),
                _ => None,
            },
        }
    }

    /// Adds `more`'s provenance, relations and citations (not its
    /// counters).
    fn append(&mut self, more: Children<'a>) {
        self.kinds.extend(more.kinds);
        self.refs.extend(more.refs);
        self.hashes.extend(more.hashes);
        self.sources_by.extend(more.sources_by);
        self.sources_at.extend(more.sources_at);
        self.predicates.extend(more.predicates);
        self.targets.extend(more.targets);
        self.weights.extend(more.weights);
        self.relations_at.extend(more.relations_at);
        self.citations.extend(more.citations);
    }
}

/// Audit entries as column arrays.
#[derive(Default)]
struct AuditColumns<'a> {
    actions: Vec<&'a str>,
    actors: Vec<&'a str>,
    at: Vec<i64>,
    rationales: Vec<&'a str>,
    imported: Vec<bool>,
}

impl<'a> AuditColumns<'a> {
    fn of(entries: &'a [AuditEntry]) -> AuditColumns<'a> {
        AuditColumns {
            actions: entries.iter().map(|e| e.action.as_str()).collect(),
            actors: entries.iter().map(|e| e.actor.as_str()).collect(),
            at: entries.iter().map(|e| to_micros(&e.timestamp)).collect(),
            rationales: entries.iter().map(|e| e.rationale.as_str()).collect(),
            imported: entries.iter().map(|e| e.imported).collect(),
        }
    }

    fn append(&mut self, more: AuditColumns<'a>) {
        self.actions.extend(more.actions);
        self.actors.extend(more.actors);
        self.at.extend(more.at);
        self.rationales.extend(more.rationales);
        self.imported.extend(more.imported);
    }
}

/// Tags, provenance, citations, outgoing relations and competence
/// counters of a rewritten record, one statement per table (arrays unnested).
fn insert_children(pg: &Pg, key: i64, record: &MemoryRecord) -> Result<(), StoreError> {
    let children = Children::of(record);
    if !record.tags.is_empty() {
        pg.execute(
            "INSERT INTO tags (record_key, tag, position)
             SELECT $1, u.t, u.n - 1 FROM unnest($2::text[]) WITH ORDINALITY AS u(t, n)",
            &[&key, &record.tags],
        )?;
    }
    if !children.kinds.is_empty() {
        pg.execute(
            "INSERT INTO provenance_sources (record_key, kind, ref, hash, created_by, timestamp)
             SELECT $1, u.k, u.f, u.h, u.c, u.t
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])
                  WITH ORDINALITY AS u(k, f, h, c, t, n)
             ORDER BY u.n",
            &[
                &key,
                &children.kinds,
                &children.refs,
                &children.hashes,
                &children.sources_by,
                &children.sources_at,
            ],
        )?;
    }
    if !children.predicates.is_empty() {
        pg.execute(
            "INSERT INTO relations (source_key, predicate, target_id, weight, created_at)
             SELECT $1, u.p, u.t, u.w, u.c
             FROM unnest($2::text[], $3::text[], $4::float8[], $5::bigint[])
                  WITH ORDINALITY AS u(p, t, w, c, n)
             ORDER BY u.n",
            &[
                &key,
                &children.predicates,
                &children.targets,
                &children.weights,
                &children.relations_at,
            ],
        )?;
    }
    if !children.citations.is_empty() {
        pg.execute(
            "INSERT INTO record_citations (cited_id, record_key)
             SELECT u.c, $1 FROM unnest($2::text[]) AS u(c)",
            &[&key, &children.citations],
        )?;
    }
    if let Some((successes, failures)) = children.competence {
        pg.execute(
            "INSERT INTO competence_stats (record_key, success_count, failure_count)
             VALUES ($1, $2, $3)",
            &[&key, &successes, &failures],
        )?;
    }
    if let Some(turn) = record.payload.turn() {
        pg.execute(
            "INSERT INTO conversation_turns (record_key, conversation_id, session_id, turn_index,
                                             speaker, at, timed)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &key,
                &turn.conversation_id,
                &turn.session_id,
                &(turn.index as i64),
                &turn.speaker,
                &to_micros(&turn.at),
                &turn.timed(),
            ],
        )?;
    }
    Ok(())
}

/// Appends audit entries in the order given.
pub(super) fn append_audit(pg: &Pg, key: i64, entries: &[AuditEntry]) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let audit = AuditColumns::of(entries);
    pg.execute(
        "INSERT INTO audit_log (record_key, action, actor, timestamp, rationale, imported)
         SELECT $1, u.a, u.b, u.t, u.r, u.i
         FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::bool[])
              WITH ORDINALITY AS u(a, b, t, r, i, n)
         ORDER BY u.n",
        &[
            &key,
            &audit.actions,
            &audit.actors,
            &audit.at,
            &audit.rationales,
            &audit.imported,
        ],
    )?;
    Ok(())
}

fn payload_json(payload: &Payload) -> Result<String, StoreError> {
    serde_json::to_string(payload)
        .map_err(|e| StoreError::Corrupt(format!("payload does not serialise: {e}")))
}

impl RecordStore for Pg {
    /// Retracts the working states of `thread_id` in `scope` that are not
    /// retracted and at most `up_to` sensitive, as a newer state replaces
    /// them; answers their ids, oldest first.
    ///
    /// The thread is locked until the transaction ends, so that two writers
    /// (instances) storing its first states at once do not both find none.
    /// The lock is taken in a statement before the one that retracts, since a
    /// statement sees what was committed when it began; both go in one round
    /// trip. The retraction is one statement: the profile, vector and audit
    /// trail change with the rows.
    fn retract_current_states(
        &mut self,
        thread_id: &str,
        scope: Option<&str>,
        up_to: Sensitivity,
        entry: &AuditEntry,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let layer = MemoryType::Working.layer() as i64;
        let at = to_micros(&now);
        let mut answers = self.query_all(&[
            (
                "SELECT pg_advisory_xact_lock(hashtextextended($1, $2))",
                &[&thread_id, &layer],
            ),
            (
                "WITH r AS (
                     UPDATE records SET status = 'retracted', updated_at = $5,
                         search = ts_delete(search, tsvector_to_array(
                                      engram_facets(key, layer, sensitivity, scope, status)))
                                  || engram_facets(key, layer, sensitivity, scope, 'retracted'),
                         version = version + 1
                     WHERE about = $1 AND layer = $2 AND scope IS NOT DISTINCT FROM $3
                       AND status <> 'retracted' AND sensitivity <= $4
                     RETURNING key, id),
                 d AS (
                     UPDATE decay_profiles SET anchor_salience = 0, anchor_at = $5, salience = 0,
                         decays_from = CASE WHEN pinned THEN 9223372036854775807 ELSE $5 END,
                         status = 'retracted'
                     WHERE record_key IN (SELECT key FROM r)),
                 v AS (UPDATE record_vectors SET live = FALSE WHERE record_key IN (SELECT key FROM r)),
                 a AS (
                     INSERT INTO audit_log (record_key, action, actor, timestamp, rationale, imported)
                     SELECT r.key, $6, $7, $8, $9, $10 FROM r)
                 SELECT id FROM r ORDER BY key",
                &[
                    &thread_id,
                    &layer,
                    &scope,
                    &rank(up_to),
                    &at,
                    &entry.action.as_str(),
                    &entry.actor,
                    &to_micros(&entry.timestamp),
                    &entry.rationale,
                    &entry.imported,
                ],
            ),
        ])?;
        answers
            .pop()
            .unwrap_or_default()
            .iter()
            .map(|row| Ok(row.try_get(0)?))
            .collect()
    }

    /// Stores a new record with all its parts. `AlreadyExists` when the id
    /// is taken.
    fn insert_record(&mut self, record: &MemoryRecord) -> Result<(), StoreError> {
        self.insert_records(&[record])
    }

    /// Stores new records with all their parts, in one statement (one round
    /// trip however many: the record rows, and their decay profiles, payloads,
    /// tags, provenance, relations, audit entries and counters from the keys
    /// they got). `AlreadyExists` names the first whose id is taken; the
    /// others may be stored by then, and the caller's savepoint undoes them.
    fn insert_records(&mut self, records: &[&MemoryRecord]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let rows = NewRows::of(records)?;
        let c = &rows.sources;
        let a = &rows.audit;
        // Another instance inserting the same id at once is waited for: then
        // that record is not inserted here, and no error aborts the
        // transaction.
        let stored = self.query(
            "WITH k AS (
                 SELECT nextval('records_key_seq') AS key, u.*
                 FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::float8[], $5::float8[],
                             $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bigint[],
                             $11::bigint[], $12::text[], $13::text[], $14::text[], $15::bigint[],
                             $16::float8[], $17::bigint[], $18::float8[], $19::bigint[],
                             $20::bool[], $21::text[], $22::text[], $23::bigint[], $24::bigint[],
                             $45::bigint[], $46::text[], $49::text[], $50::bigint[], $51::text[],
                             $52::bigint[], $53::bool[])
                      WITH ORDINALITY AS u(id, layer, sensitivity, confidence, salience, scope,
                          status, created_by, created_at, updated_at, decays_from, about, text,
                          curve, half_life, floor, max_age, gain, reinforced_at, pinned,
                          deletion, payload, successes, failures, search_length, search_repeats,
                          session, turn_index, speaker, turn_at, timed, n)),
             r AS (
                 INSERT INTO records (key, id, layer, sensitivity, confidence, scope, status,
                                      created_by, created_at, updated_at, about, search,
                                      search_length, search_repeats)
                 SELECT key, id, layer, sensitivity, confidence, scope, status, created_by,
                        created_at, updated_at, about,
                        to_tsvector('simple', text)
                            || engram_facets(key, layer, sensitivity, scope, status),
                        search_length, search_repeats
                 FROM k ORDER BY n
                 ON CONFLICT (id) DO NOTHING
                 RETURNING key),
             s AS (SELECT k.* FROM k JOIN r USING (key)),
             d AS (
                 INSERT INTO decay_profiles (record_key, curve, half_life_seconds, min_salience,
                     max_age_seconds, reinforcement_gain, last_reinforced_at, pinned,
                     deletion_policy, anchor_salience, anchor_at, salience, decays_from, layer,
                     sensitivity, scope, status, created_at)
                 SELECT key, curve, half_life, floor, max_age, gain, reinforced_at, pinned,
                        deletion, salience, reinforced_at, salience, decays_from, layer,
                        sensitivity, scope, status, created_at
                 FROM s),
             p AS (INSERT INTO payloads (record_key, payload_json) SELECT key, payload FROM s),
             t AS (
                 INSERT INTO tags (record_key, tag, position)
                 SELECT s.key, u.t, u.p
                 FROM unnest($25::bigint[], $26::text[], $27::bigint[]) AS u(i, t, p)
                 JOIN s ON s.n = u.i),
             v AS (
                 INSERT INTO provenance_sources (record_key, kind, ref, hash, created_by, timestamp)
                 SELECT s.key, u.k, u.f, u.h, u.c, u.t
                 FROM unnest($28::bigint[], $29::text[], $30::text[], $31::text[], $32::text[],
                             $33::bigint[]) WITH ORDINALITY AS u(i, k, f, h, c, t, n)
                 JOIN s ON s.n = u.i
                 ORDER BY u.n),
             l AS (
                 INSERT INTO relations (source_key, predicate, target_id, weight, created_at)
                 SELECT s.key, u.p, u.t, u.w, u.c
                 FROM unnest($34::bigint[], $35::text[], $36::text[], $37::float8[], $38::bigint[])
                      WITH ORDINALITY AS u(i, p, t, w, c, n)
                 JOIN s ON s.n = u.i
                 ORDER BY u.n),
             a AS (
                 INSERT INTO audit_log (record_key, action, actor, timestamp, rationale, imported)
                 SELECT s.key, u.a, u.b, u.t, u.r, u.m
                 FROM unnest($39::bigint[], $40::text[], $41::text[], $42::bigint[], $43::text[],
                             $44::bool[]) WITH ORDINALITY AS u(i, a, b, t, r, m, n)
                 JOIN s ON s.n = u.i
                 ORDER BY u.n),
             x AS (
                 INSERT INTO record_citations (cited_id, record_key)
                 SELECT u.c, s.key
                 FROM unnest($47::bigint[], $48::text[]) AS u(i, c)
                 JOIN s ON s.n = u.i),
             c AS (
                 INSERT INTO competence_stats (record_key, success_count, failure_count)
                 SELECT key, successes, failures FROM s WHERE successes IS NOT NULL),
             ct AS (
                 INSERT INTO conversation_turns (record_key, conversation_id, session_id,
                                                 turn_index, speaker, at, timed)
                 SELECT key, about, session, turn_index, speaker, turn_at, timed
                 FROM s WHERE session IS NOT NULL)
             SELECT n, key FROM s",
            &[
                &rows.ids,
                &rows.layers,
                &rows.sensitivities,
                &rows.confidences,
                &rows.saliences,
                &rows.scopes,
                &rows.statuses,
                &rows.created_by,
                &rows.created_at,
                &rows.updated_at,
                &rows.decays_from,
                &rows.abouts,
                &rows.texts,
                &rows.curves,
                &rows.half_lives,
                &rows.floors,
                &rows.max_ages,
                &rows.gains,
                &rows.reinforced_at,
                &rows.pinned,
                &rows.deletion,
                &rows.payloads,
                &rows.successes,
                &rows.failures,
                &rows.tag_of,
                &rows.tags,
                &rows.tag_positions,
                &rows.source_of,
                &c.kinds,
                &c.refs,
                &c.hashes,
                &c.sources_by,
                &c.sources_at,
                &rows.relation_of,
                &c.predicates,
                &c.targets,
                &c.weights,
                &c.relations_at,
                &rows.audit_of,
                &a.actions,
                &a.actors,
                &a.at,
                &a.rationales,
                &a.imported,
                &rows.search_lengths,
                &rows.search_repeats,
                &rows.citation_of,
                &c.citations,
                &rows.turns.sessions,
                &rows.turns.indexes,
                &rows.turns.speakers,
                &rows.turns.at,
                &rows.turns.timed,
            ],
        )?;
        let mut keys = vec![None; records.len()];
        for row in &stored {
            let n: i64 = row.try_get(0)?;
            keys[n as usize - 1] = Some(row.try_get::<_, i64>(1)?);
        }
        for (record, key) in records.iter().zip(keys) {
            let Some(key) = key else {
                return Err(StoreError::AlreadyExists(record.id.clone()));
            };
            raise_bounds(self, record)?;
            if let Some(embedding) = &record.embedding {
                super::vectors::put(self, key, embedding, None)?;
            }
        }
        Ok(())
    }

    /// Rewrites a record read at `version`; `Changed` when anyone changed it
    /// since (the `UPDATE` is conditional on the version, and under read
    /// committed a concurrent writer's update is waited for and then seen),
    /// `NotFound` when it is gone.
    fn update_record(
        &mut self,
        version: &Version,
        record: &MemoryRecord,
        salience: SalienceChange,
    ) -> Result<(), StoreError> {
        let key = version.key;
        let set_at = match salience {
            SalienceChange::Unchanged => None,
            SalienceChange::SetAt(at) => Some(at),
        };
        let searchable = Searchable::of(record);
        let analysed = &searchable.analysed;
        let updated = self.execute(
            "UPDATE records SET layer = $3, sensitivity = $4, confidence = $5, scope = $6,
                 status = $7, created_by = $8, created_at = $9, updated_at = $10, about = $11,
                 search = to_tsvector('simple', $12) || engram_facets(key, $3, $4, $6, $7),
                 search_length = $13, search_repeats = $14, version = version + 1
             WHERE key = $1 AND version = $2",
            &[
                &key,
                &version.number,
                &layer(record),
                &rank(record.sensitivity),
                &record.confidence,
                &record.scope,
                &record.status.as_str(),
                &record.provenance.created_by,
                &to_micros(&record.created_at),
                &to_micros(&record.updated_at),
                &record.payload.about(),
                &analysed.text,
                &analysed.length,
                &analysed.repeats,
            ],
        )?;
        if updated == 0 {
            return Err(if record_key(self, &record.id)?.is_some() {
                StoreError::Changed(record.id.clone())
            } else {
                StoreError::NotFound(record.id.clone())
            });
        }
        let anchor = set_at.map(|at| Anchor {
            salience: record.salience,
            at,
        });
        update_lifecycle(self, key, record, anchor)?;
        self.execute(
            "UPDATE payloads SET payload_json = $2 WHERE record_key = $1",
            &[&key, &payload_json(&record.payload)?],
        )?;
        super::vectors::after_update(self, key, record, searchable.hash)?;
        for table in [
            "DELETE FROM tags WHERE record_key = $1",
            "DELETE FROM provenance_sources WHERE record_key = $1",
            "DELETE FROM relations WHERE source_key = $1",
            "DELETE FROM record_citations WHERE record_key = $1",
            "DELETE FROM competence_stats WHERE record_key = $1",
            "DELETE FROM conversation_turns WHERE record_key = $1",
        ] {
            self.execute(table, &[&key])?;
        }
        insert_children(self, key, record)?;
        append_audit(
            self,
            key,
            record
                .audit_log
                .get(version.audit_len..)
                .unwrap_or_default(),
        )
    }
}
