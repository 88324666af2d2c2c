-- engram schema on PostgreSQL, version 2: the stored salience moves from
-- `records` to `decay_profiles`, with copies of what retrieval by salience
-- filters on.
--
-- The decay sweep rewrites the stored salience of most records every hour.
-- In `records` each rewrite made a new version of the whole row (its search
-- text too) with new entries in every index of the table, the search index
-- included: the newest matches of a text query came to lie on more pages
-- after every sweep. In `decay_profiles`, a narrow table, a sweep rewrites
-- only the profile and its indexes, and `records` stays as written.
--
-- `salience` is still the salience as of `decays_from` (the last sweep,
-- change or reinforcement), which bounds what the record can have now; a
-- record has exactly one profile. `layer`, `sensitivity`, `scope`, `status`
-- and `created_at` are the record's own, written by the same statements
-- that write the record: retrieval by salience reads who may see a record
-- and its place in the answer from the profile alone.
ALTER TABLE decay_profiles
    ADD COLUMN salience    DOUBLE PRECISION,
    ADD COLUMN decays_from BIGINT,
    ADD COLUMN layer       BIGINT,
    ADD COLUMN sensitivity BIGINT,
    ADD COLUMN scope       TEXT,
    ADD COLUMN status      TEXT,
    ADD COLUMN created_at  BIGINT;

UPDATE decay_profiles d
SET salience = r.salience, decays_from = r.decays_from, layer = r.layer,
    sensitivity = r.sensitivity, scope = r.scope, status = r.status, created_at = r.created_at
FROM records r WHERE r.key = d.record_key;

ALTER TABLE decay_profiles
    ALTER COLUMN salience SET NOT NULL,
    ALTER COLUMN decays_from SET NOT NULL,
    ALTER COLUMN decays_from SET DEFAULT 9223372036854775807,
    ALTER COLUMN layer SET NOT NULL,
    ALTER COLUMN sensitivity SET NOT NULL,
    ALTER COLUMN status SET NOT NULL,
    ALTER COLUMN created_at SET NOT NULL,
    ADD CONSTRAINT decay_profiles_salience_check CHECK (salience >= 0);

DROP INDEX records_by_salience;
ALTER TABLE records DROP COLUMN salience, DROP COLUMN decays_from;

-- Retrieval by salience reads the visible records in stored salience
-- order (see store/postgres/ranking.rs).
CREATE INDEX profiles_by_salience ON decay_profiles (salience, decays_from, record_key);
