-- engram schema, version 5: what retrieval needs to rank by current
-- salience without reading every record.
--
-- `records.salience` is the salience as of `decays_from` (microseconds):
-- the last sweep, change or reinforcement. Decay only lowers it, and no
-- faster than the slowest half-life of the record's memory type allows, so
-- `salience` and `decays_from` bound what an unread record can have now.
-- Pinned records never decay: their `decays_from` is the largest integer.
-- Rows written before this version get that value too, which claims
-- nothing (the bound is then the stored salience itself).
ALTER TABLE records ADD COLUMN decays_from INTEGER NOT NULL DEFAULT 9223372036854775807;

DROP INDEX idx_records_rank;
DROP INDEX idx_records_scope_rank;
CREATE INDEX idx_records_rank ON records (layer, sensitivity, salience DESC, decays_from DESC);
CREATE INDEX idx_records_scope_rank ON records (scope, layer, sensitivity, salience DESC, decays_from DESC);

-- Per memory type, the longest half-life and the highest salience floor
-- any of its records has had: high-water marks, never lowered (a bound
-- that is too loose costs reading, one too tight would lose records).
CREATE TABLE decay_bounds (
    layer                 INTEGER PRIMARY KEY,
    max_half_life_seconds INTEGER NOT NULL,
    max_min_salience      REAL    NOT NULL
);
INSERT INTO decay_bounds (layer, max_half_life_seconds, max_min_salience)
SELECT r.layer, MAX(d.half_life_seconds), MAX(d.min_salience)
FROM records r JOIN decay_profiles d ON d.record_key = r.key
GROUP BY r.layer;
