-- engram schema, version 19: citations.
--
-- record_citations: the records each record names as a provenance source
-- or a piece of evidence (ids in the form the service gives, a UUID; a
-- version it supersedes and its `derived_from` links, which relations
-- hold, are not repeated here). An erasure follows them to the records
-- that may repeat what it erases without reading every payload.
CREATE TABLE record_citations (
    cited_id   TEXT    NOT NULL,
    record_key INTEGER NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    PRIMARY KEY (cited_id, record_key)
) WITHOUT ROWID;
CREATE INDEX record_citations_by_record ON record_citations (record_key);

-- What is stored already: the same rule as for new records, in SQL.
WITH named (cited_id, record_key) AS (
    SELECT ref, record_key FROM provenance_sources
    UNION ALL
    SELECT json_extract(e.value, '$.source_id'), p.record_key
    FROM records r
    JOIN payloads p ON p.record_key = r.key
    JOIN json_each(p.payload_json, '$.evidence') e
    WHERE r.layer = 1
)
INSERT OR IGNORE INTO record_citations (cited_id, record_key)
SELECT c.cited_id, c.record_key
FROM named c JOIN records r ON r.key = c.record_key
WHERE length(c.cited_id) = 36
  AND lower(c.cited_id) GLOB
      '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
  AND c.cited_id <> r.id
  AND NOT EXISTS (SELECT 1 FROM relations l
                  WHERE l.source_key = c.record_key AND l.target_id = c.cited_id
                    AND l.predicate IN ('supersedes', 'derived_from'));
