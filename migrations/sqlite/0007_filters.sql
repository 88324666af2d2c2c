-- engram schema, version 7: what retrieval filters on besides visibility,
-- and rank indexes that keep retracted records apart.
--
-- `about` names what a record is about where its type has one name for
-- it: a working state's thread id, a semantic fact's subject (NULL for
-- the other types). It is the working-state-per-thread lookup and the
-- `thread_id` / `subject` filters of retrieval. (The `sources` filter
-- narrows salience ranges and text matches on `created_by` as it goes,
-- with no index of its own: one more index on every insert would cost
-- ingest more than it saves there.)
ALTER TABLE records ADD COLUMN about TEXT;

UPDATE records SET about = (
    SELECT CASE records.layer
               WHEN 0 THEN json_extract(p.payload_json, '$.thread_id')
               WHEN 1 THEN json_extract(p.payload_json, '$.subject')
           END
    FROM payloads p WHERE p.record_key = records.key
)
WHERE layer IN (0, 1);

CREATE INDEX idx_records_about ON records (about, layer, scope, status) WHERE about IS NOT NULL;

-- The rank indexes of version 5, split by status: retrieval leaves
-- retracted records out unless asked, and every replaced working state
-- and superseded fact is one (at salience 0, the end of each range), so a
-- range that reads to its end would otherwise read the table row of each
-- to find it is retracted. Every record is in exactly one of each pair.
DROP INDEX idx_records_rank;
DROP INDEX idx_records_scope_rank;
CREATE INDEX idx_records_rank ON records (layer, sensitivity, salience DESC, decays_from DESC)
    WHERE status <> 'retracted';
CREATE INDEX idx_records_scope_rank ON records (scope, layer, sensitivity, salience DESC, decays_from DESC)
    WHERE status <> 'retracted';
CREATE INDEX idx_records_retracted_rank ON records (layer, sensitivity, salience DESC, decays_from DESC)
    WHERE status = 'retracted';
CREATE INDEX idx_records_retracted_scope_rank ON records (scope, layer, sensitivity, salience DESC, decays_from DESC)
    WHERE status = 'retracted';
