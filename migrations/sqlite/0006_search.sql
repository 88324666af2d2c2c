-- engram schema, version 6: the full-text index.
--
-- One row per record (rowid = records.key) holding its search text: the
-- fields that say what it is about, by type, and its tags (see
-- domain/search.rs). Porter stemming over unicode61 tokens, ranked with
-- BM25. Written in the same transaction as the record (collected while the
-- transaction's writes run and added in one statement before it commits:
-- see store/sqlite/search.rs); a deleted record takes its row with it.
-- Records stored before this version are indexed when it is applied.
-- Contentless: the text is derived from the record and never read back,
-- so it is not stored a second time; rows are deleted by rowid.
CREATE VIRTUAL TABLE record_search USING fts5(
    text,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
