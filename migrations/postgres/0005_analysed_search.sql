-- engram schema on PostgreSQL, version 5: the search columns hold the
-- terms of engram's own text analyser (domain/analysis.rs: Unicode folding,
-- lower-casing, Snowball English stems), the same terms SQLite holds,
-- under the `simple` configuration (no stemming of its own, no stop
-- words). Until version 4 they held the `english` configuration's stems.
--
-- The records' search text is made again when this version is applied
-- (from the record alone, in engram); the topics' when engram next starts
-- (their text depends on who may see each field's versions), from the
-- list below.
CREATE TABLE topics_to_index (topic_key BIGINT PRIMARY KEY);
INSERT INTO topics_to_index (topic_key) SELECT key FROM topics;
