-- engram schema, version 6: the full-text index.
--
-- One row per record (rowid = records.key) holding its search text: the
-- fields that say what it is about, by type, and its tags (see
-- domain/search.rs). Porter stemming over unicode61 tokens, ranked with
-- BM25. Written in the same transaction as the record; a deleted record
-- takes its row with it. Records stored before this version are indexed
-- when it is applied.
CREATE VIRTUAL TABLE record_search USING fts5(
    text,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER record_search_delete AFTER DELETE ON records BEGIN
    DELETE FROM record_search WHERE rowid = old.key;
END;
