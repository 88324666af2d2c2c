-- engram schema, version 18: erasure.
--
-- erased_records: what stays of an erased record that was part of a
-- revision chain, so its history shows a version was erased and what came
-- after it: its id, type and who may see it, when, by whom and why, and its
-- neighbours in the chain. No content, no subject.
CREATE TABLE erased_records (
    id          TEXT    PRIMARY KEY,
    layer       INTEGER NOT NULL,
    sensitivity INTEGER NOT NULL,
    scope       TEXT,
    erased_at   INTEGER NOT NULL,
    actor       TEXT    NOT NULL,
    rationale   TEXT    NOT NULL,
    older_id    TEXT,
    newer_id    TEXT
);
CREATE INDEX erased_records_older ON erased_records (older_id) WHERE older_id IS NOT NULL;
CREATE INDEX erased_records_newer ON erased_records (newer_id) WHERE newer_id IS NOT NULL;

-- erasures: who erased, when, why, by which selector (a scope or source
-- name; ids as a count; a subject not at all) and how many rows of each
-- kind, and the grant it erased within (its scopes as a JSON list, NULL
-- for every scope; its highest sensitivity), which decides who may read
-- the entry. Never erased content.
CREATE TABLE erasures (
    id             TEXT    PRIMARY KEY,
    at             INTEGER NOT NULL,
    actor          TEXT    NOT NULL,
    rationale      TEXT    NOT NULL,
    selector       TEXT    NOT NULL,
    name           TEXT,
    ids            INTEGER NOT NULL,
    erased         INTEGER NOT NULL,
    derived_erased INTEGER NOT NULL,
    tombstones     INTEGER NOT NULL,
    tables_json    TEXT    NOT NULL,
    took_ms        INTEGER NOT NULL,
    grant_scopes   TEXT,
    max_sensitivity INTEGER NOT NULL
);
CREATE INDEX erasures_by_time ON erasures (at);

