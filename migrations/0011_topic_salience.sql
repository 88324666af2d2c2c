-- engram schema, version 11: topic salience decays like a record's, and
-- a search index of topic titles.
--
-- `salience` is the value as of the last decay sweep or reinforcement (what
-- the archive step orders by); the anchor is the salience a topic had at
-- its last reinforcement, from which reads compute the current value.
ALTER TABLE topics ADD COLUMN anchor_salience REAL NOT NULL DEFAULT 1.0;
ALTER TABLE topics ADD COLUMN anchor_at INTEGER NOT NULL DEFAULT 0;
UPDATE topics SET anchor_salience = salience, anchor_at = updated_at;
-- Topics that faded below the archive threshold, found without a scan.
CREATE INDEX topics_by_salience ON topics (salience) WHERE archived = 0;

-- Title and summary of each topic (rowid = topics.key): what `auto`
-- placement and similar-topic hints compare, without the field values
-- (most topics share some of those, which would make every lookup long).
CREATE VIRTUAL TABLE topic_titles USING fts5(
    text,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO topic_titles (rowid, text) SELECT key, title || ' ' || summary FROM topics;
