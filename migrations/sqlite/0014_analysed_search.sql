-- engram schema, version 14: the full-text indexes hold the terms of
-- engram's own text analyser (domain/analysis.rs: Unicode folding,
-- lower-casing, Snowball English stems), the same terms PostgreSQL holds.
-- FTS5 only splits them at spaces; it no longer stems (its Porter stemmer
-- made `deploy` of "deployment" but `deploi` of "deploy").
--
-- Both indexes are made again: the records' when this version is applied
-- (their text derives from the record alone); the topics' when engram
-- next starts (their text depends on who may see each field's versions),
-- from the list below.
DROP TABLE record_search;
CREATE VIRTUAL TABLE record_search USING fts5(
    text,
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
