-- engram schema, version 2: what scheduled maintenance needs.

-- Decay is computed from an anchor: the salience a record had at a moment
-- (creation, last reinforcement, or the last explicit change such as a
-- penalty). The `salience` column of `records` holds the decayed value as
-- of the last sweep, for ordering; reads compute the current value from the
-- anchor.
ALTER TABLE decay_profiles ADD COLUMN anchor_salience REAL;
ALTER TABLE decay_profiles ADD COLUMN anchor_at INTEGER;
UPDATE decay_profiles
SET anchor_salience = (SELECT salience FROM records WHERE records.key = decay_profiles.record_key),
    anchor_at = last_reinforced_at;

-- Operator changes to job schedules; they win over the configuration file.
CREATE TABLE job_settings (
    name       TEXT    PRIMARY KEY,
    schedule   TEXT    NOT NULL,
    enabled    INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    updated_at INTEGER NOT NULL
);

-- The last run of each job, kept across restarts.
CREATE TABLE job_runs (
    name        TEXT    PRIMARY KEY,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    result_json TEXT,
    error       TEXT
);

-- Which consolidation steps have used a record, so a rerun on unchanged
-- data changes nothing.
CREATE TABLE consolidation_marks (
    record_key INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    step       TEXT    NOT NULL,
    PRIMARY KEY (record_key, step)
) WITHOUT ROWID;

-- What consolidation has seen so far, grouped by what it would extract (a
-- fact, a tool sequence): each episode is read once, and a group becomes a
-- fact or skill once it has been seen often enough, however many runs that
-- took.
CREATE TABLE consolidation_sightings (
    step       TEXT    NOT NULL,
    group_key  TEXT    NOT NULL,
    record_key INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    detail     TEXT,
    PRIMARY KEY (step, group_key, record_key)
) WITHOUT ROWID;
CREATE INDEX idx_sightings_record ON consolidation_sightings (record_key);

-- What consolidation made of each group (the fact for an observed event,
-- the skill for a tool sequence), so later sightings find it by key. Kept
-- apart from the records so ingest pays nothing for it.
CREATE TABLE consolidation_outputs (
    step       TEXT    NOT NULL,
    group_key  TEXT    NOT NULL,
    record_key INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    PRIMARY KEY (step, group_key)
) WITHOUT ROWID;
CREATE INDEX idx_outputs_record ON consolidation_outputs (record_key);
