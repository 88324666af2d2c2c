-- engram schema, version 11: topic salience decays like a record's, an
-- index of the words of topic titles, and topic vectors.
--
-- `salience` is the value as of the last decay sweep or reinforcement (what
-- the archive step orders by); the anchor is the salience a topic had at
-- its last reinforcement, from which reads compute the current value.
ALTER TABLE topics ADD COLUMN anchor_salience REAL NOT NULL DEFAULT 1.0;
ALTER TABLE topics ADD COLUMN anchor_at INTEGER NOT NULL DEFAULT 0;
UPDATE topics SET anchor_salience = salience, anchor_at = updated_at;
-- Topics that faded below the archive threshold, found without a scan.
CREATE INDEX topics_by_salience ON topics (salience) WHERE archived = 0;

-- The distinct words of each topic's title and summary: what `auto`
-- placement and similar-topic hints compare (the share of words in
-- common). One B-tree seek per word finds the topics that have it.
CREATE TABLE topic_words (
    word      TEXT NOT NULL,
    topic_key INTEGER NOT NULL REFERENCES topics (key),
    PRIMARY KEY (word, topic_key)
) WITHOUT ROWID;

-- A topic's vector (the latest `embedding` an ingest gave it), little-endian
-- f32 values with their norm; the same dimensions as every vector of the
-- database (vector_space).
CREATE TABLE topic_vectors (
    topic_key INTEGER PRIMARY KEY REFERENCES topics (key),
    norm      REAL NOT NULL,
    vector    BLOB NOT NULL
);
