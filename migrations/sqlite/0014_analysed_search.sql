-- engram schema, version 14: the full-text indexes hold the terms of
-- engram's own text analyser (domain/analysis.rs: Unicode folding,
-- lower-casing, Snowball English stems), the same terms PostgreSQL holds,
-- and ranking counts only what the caller may see.
--
-- FTS5 only splits the terms at spaces; it no longer stems (its Porter
-- stemmer made `deploy` of "deployment" but `deploi` of "deploy").
-- Both indexes are made again: the records' when this version is applied
-- (their text derives from the record alone); the topics' when engram
-- next starts (their text depends on who may see each field's versions),
-- from `topics_to_index`.
DROP TABLE record_search;
-- `facets`: who may see the record, as tokens no text makes (the
-- analyser's terms are in the other column): `s`, a hash of its scope and
-- `v` with its sensitivity (`u` and `v…` unscoped); `l` and its layer;
-- `v` and its sensitivity. A lookup asks for the term and the facets the
-- caller may see, so it reads the caller's matches, never everyone's.
CREATE VIRTUAL TABLE record_search USING fts5(
    text,
    facets,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

DROP TABLE topic_search;
CREATE VIRTUAL TABLE topic_search USING fts5(
    text,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

-- Topics whose search text is still to be made.
CREATE TABLE topics_to_index (topic_key INTEGER PRIMARY KEY);
INSERT INTO topics_to_index (topic_key) SELECT key FROM topics;

-- What BM25 needs of a record beyond the index: how many terms its text
-- has, and the terms it has more than once with how often; and its
-- distinct terms, for a text query that reads a small caller's records
-- whole (domain/analysis.rs, `Analysed`; `retrieval.scan_records`).
ALTER TABLE records ADD COLUMN search_length INTEGER NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN search_repeats TEXT;
ALTER TABLE records ADD COLUMN search_terms TEXT NOT NULL DEFAULT '';

-- How many records, and how many terms their texts have together, by who
-- may see them (scope, '' for none; layer; sensitivity; live = not
-- retracted), and the same over every scope: what a caller may see is a
-- sum of these, so BM25's statistics count only what the caller may see.
-- Kept by the writes that change a record's text or who may see it, in
-- their transaction (store/sqlite/search.rs; triggers would make every
-- write of a record open a statement journal). Filled when this version
-- is applied.
CREATE TABLE text_totals (
    scope       TEXT    NOT NULL,
    layer       INTEGER NOT NULL,
    sensitivity INTEGER NOT NULL,
    live        INTEGER NOT NULL,
    docs        INTEGER NOT NULL,
    tokens      INTEGER NOT NULL,
    PRIMARY KEY (scope, layer, sensitivity, live)
) WITHOUT ROWID;

CREATE TABLE text_totals_all (
    layer       INTEGER NOT NULL,
    sensitivity INTEGER NOT NULL,
    live        INTEGER NOT NULL,
    docs        INTEGER NOT NULL,
    tokens      INTEGER NOT NULL,
    PRIMARY KEY (layer, sensitivity, live)
) WITHOUT ROWID;
