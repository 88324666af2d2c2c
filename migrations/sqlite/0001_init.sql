-- engram schema, version 1.
--
-- One row per record in `records`, its parts in child tables keyed by the
-- record's integer key (smaller and faster to join than the text id).
-- Memory type and sensitivity are stored as small integers in their natural
-- order (type = retrieval layer: 0 working, 1 semantic, 2 competence,
-- 3 plan_graph, 4 episodic; sensitivity: 0 public .. 4 hyper), so
-- "sensitivity <= max" and "layer order" are plain index ranges.
-- Timestamps are microseconds since the Unix epoch, UTC.

CREATE TABLE records (
    key         INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    layer       INTEGER NOT NULL CHECK (layer BETWEEN 0 AND 4),
    sensitivity INTEGER NOT NULL CHECK (sensitivity BETWEEN 0 AND 4),
    confidence  REAL    NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    salience    REAL    NOT NULL CHECK (salience >= 0),
    scope       TEXT,
    status      TEXT    NOT NULL CHECK (status IN ('active', 'contested', 'retracted')),
    created_by  TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- Retrieval walks one (type, sensitivity) range, or one (scope, type,
-- sensitivity) range, in salience order and stops at the limit, so its cost
-- follows what the caller may see, not the table size.
CREATE INDEX idx_records_rank ON records (layer, sensitivity, salience DESC, created_at DESC);
CREATE INDEX idx_records_scope_rank ON records (scope, layer, sensitivity, salience DESC, created_at DESC);

CREATE TABLE decay_profiles (
    record_key         INTEGER PRIMARY KEY REFERENCES records (key) ON DELETE CASCADE,
    curve              TEXT    NOT NULL CHECK (curve IN ('exponential', 'linear', 'custom')),
    half_life_seconds  INTEGER NOT NULL CHECK (half_life_seconds > 0),
    min_salience       REAL    NOT NULL DEFAULT 0 CHECK (min_salience >= 0),
    max_age_seconds    INTEGER CHECK (max_age_seconds > 0),
    reinforcement_gain REAL    NOT NULL DEFAULT 0.1,
    last_reinforced_at INTEGER NOT NULL,
    pinned             INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    deletion_policy    TEXT    NOT NULL DEFAULT 'auto_prune'
                       CHECK (deletion_policy IN ('auto_prune', 'manual_only', 'never'))
);

CREATE TABLE payloads (
    record_key   INTEGER PRIMARY KEY REFERENCES records (key) ON DELETE CASCADE,
    payload_json TEXT NOT NULL
);

CREATE TABLE tags (
    record_key INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    tag        TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    PRIMARY KEY (record_key, tag)
) WITHOUT ROWID;
CREATE INDEX idx_tags_tag ON tags (tag, record_key);

CREATE TABLE provenance_sources (
    id         INTEGER PRIMARY KEY,
    record_key INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    kind       TEXT    NOT NULL CHECK (kind IN ('event', 'artifact', 'tool_call', 'observation', 'outcome')),
    ref        TEXT    NOT NULL,
    hash       TEXT,
    created_by TEXT,
    timestamp  INTEGER NOT NULL
);
CREATE INDEX idx_provenance_record ON provenance_sources (record_key);

-- Edges point from a stored record to a record id; an edge whose target is
-- deleted goes with it (see the trigger below).
CREATE TABLE relations (
    id         INTEGER PRIMARY KEY,
    source_key INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    predicate  TEXT    NOT NULL,
    target_id  TEXT    NOT NULL,
    weight     REAL    NOT NULL DEFAULT 1.0 CHECK (weight >= 0 AND weight <= 1),
    created_at INTEGER NOT NULL
);
CREATE INDEX idx_relations_source ON relations (source_key, predicate);
CREATE INDEX idx_relations_target ON relations (target_id, predicate);

CREATE TRIGGER records_drop_incoming_relations AFTER DELETE ON records
BEGIN
    DELETE FROM relations WHERE target_id = OLD.id;
END;

-- Append-only.
CREATE TABLE audit_log (
    id                  INTEGER PRIMARY KEY,
    record_key          INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    action              TEXT    NOT NULL
                        CHECK (action IN ('create', 'revise', 'fork', 'merge', 'delete', 'reinforce', 'decay')),
    actor               TEXT    NOT NULL,
    timestamp           INTEGER NOT NULL,
    rationale           TEXT    NOT NULL,
    previous_state_json TEXT
);
CREATE INDEX idx_audit_record ON audit_log (record_key);

CREATE TABLE competence_stats (
    record_key    INTEGER PRIMARY KEY REFERENCES records (key) ON DELETE CASCADE,
    success_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0
);
