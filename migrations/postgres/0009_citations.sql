-- engram schema on PostgreSQL, version 9: citations.
--
-- record_citations: the records each record names as a provenance source
-- or a piece of evidence (ids in the form the service gives, a UUID; a
-- version it supersedes and its `derived_from` links, which relations
-- hold, are not repeated here). An erasure follows them to the records
-- that may repeat what it erases without reading every payload.
CREATE TABLE record_citations (
    cited_id   TEXT   NOT NULL,
    record_key BIGINT NOT NULL REFERENCES records (key) ON DELETE CASCADE,
    PRIMARY KEY (cited_id, record_key)
);
CREATE INDEX record_citations_by_record ON record_citations (record_key);

-- What is stored already: the same rule as for new records, in SQL.
INSERT INTO record_citations (cited_id, record_key)
SELECT c.cited_id, c.record_key
FROM (
    SELECT ref AS cited_id, record_key FROM provenance_sources
    UNION
    SELECT e.value ->> 'source_id', p.record_key
    FROM records r
    JOIN payloads p ON p.record_key = r.key
    CROSS JOIN LATERAL jsonb_array_elements(
        COALESCE(p.payload_json::jsonb -> 'evidence', '[]'::jsonb)) e
    WHERE r.layer = 1
) c
JOIN records r ON r.key = c.record_key
WHERE c.cited_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
  AND c.cited_id <> r.id
  AND NOT EXISTS (SELECT 1 FROM relations l
                  WHERE l.source_key = c.record_key AND l.target_id = c.cited_id
                    AND l.predicate IN ('supersedes', 'derived_from'))
ON CONFLICT DO NOTHING;
