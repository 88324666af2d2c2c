-- engram schema, version 22: full-text indexes that forget at once.
--
-- With `contentless_delete`, deleting a row from an FTS5 index only marks
-- it deleted: its terms stay in the index's segments until they are
-- merged, so an erasure had to merge whole indexes (a cost that grew with
-- everything stored) before it could answer that no erased word was left.
-- Now a row is deleted by FTS5's `delete` command with the terms it was
-- indexed with, and `secure-delete` removes them from the segments there
-- and then: what a deletion costs follows what is deleted.
--
-- The terms a row was indexed with: a record's are in its row
-- (`search_terms`, `search_repeats`); a topic's now in `topics.search_text`
-- (NULL: the topic has no row in the index). Both indexes are made again:
-- the records' when this version is applied, the topics' when engram next
-- starts (`topics_to_index`).
DROP TABLE record_search;
CREATE VIRTUAL TABLE record_search USING fts5(
    text,
    facets,
    content = '',
    tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO record_search (record_search, rank) VALUES ('secure-delete', 1);

DROP TABLE topic_search;
CREATE VIRTUAL TABLE topic_search USING fts5(
    text,
    content = '',
    tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO topic_search (topic_search, rank) VALUES ('secure-delete', 1);

ALTER TABLE topics ADD COLUMN search_text TEXT;
INSERT OR IGNORE INTO topics_to_index (topic_key) SELECT key FROM topics;

-- An erasure of many records deletes their index rows the plain way
-- (cheaper per row than `secure-delete` when there are thousands) and
-- leaves this mark in the same transaction: the next scrub merges the
-- index, which takes the deleted terms out, and clears it.
CREATE TABLE search_merge_due (index_name TEXT PRIMARY KEY);
