-- engram schema, version 10: topics.
--
-- A topic is a thing agents know about: a title, a summary, a kind, the
-- trust of a record (sensitivity, scope) and a salience. Its fields are
-- semantic records (subject = the topic id, predicate = the field name);
-- topic_versions lists each field's versions in order, with a copy of the
-- value and source (so views, histories and the topic's search text read
-- no records) and what the record does not say (why the value changed). Edges are typed links
-- between topics; a removed edge keeps its row with the time it was
-- removed, so a view as of an earlier instant shows the edges of then.
CREATE TABLE topics (
    key         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    title       TEXT NOT NULL,
    -- The title lowercased with its words single-spaced: what `auto`
    -- placement matches on.
    norm_title  TEXT NOT NULL,
    summary     TEXT NOT NULL,
    kind        TEXT,
    sensitivity INTEGER NOT NULL,
    scope       TEXT,
    tags_json   TEXT NOT NULL,
    salience    REAL NOT NULL,
    archived    INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX topics_by_title ON topics (norm_title, scope) WHERE archived = 0;

CREATE TABLE topic_versions (
    topic_key   INTEGER NOT NULL REFERENCES topics (key),
    name        TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    record_key  INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    valid_from  INTEGER NOT NULL,
    value_json  TEXT NOT NULL,
    source      TEXT NOT NULL,
    why_changed TEXT,
    PRIMARY KEY (topic_key, name, seq)
) WITHOUT ROWID;
-- Which topic a record is a field of (graph retrieval), and what a pruned
-- record's cascade looks up.
CREATE INDEX topic_versions_by_record ON topic_versions (record_key);

CREATE TABLE topic_edges (
    from_key   INTEGER NOT NULL REFERENCES topics (key),
    to_key     INTEGER NOT NULL REFERENCES topics (key),
    kind       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    removed_at INTEGER,
    PRIMARY KEY (from_key, to_key, kind, created_at)
) WITHOUT ROWID;
-- At most one standing edge per (from, to, kind).
CREATE UNIQUE INDEX topic_edges_standing ON topic_edges (from_key, to_key, kind)
    WHERE removed_at IS NULL;
CREATE INDEX topic_edges_to ON topic_edges (to_key, from_key);

-- Title, summary and current field values of each topic (rowid =
-- topics.key), for `auto` placement, similar topics and topic queries.
CREATE VIRTUAL TABLE topic_search USING fts5(
    text,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
