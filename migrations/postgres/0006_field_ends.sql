-- engram schema on PostgreSQL, version 6: a topic field can end. When a
-- field's current record is superseded through the revisions API by one
-- that no longer states the field (another subject or predicate), the
-- field gets a last version marked `ended`: it names the record that left,
-- and from its `valid_from` the field has no value, until an ingest states
-- it again.
ALTER TABLE topic_versions ADD COLUMN ended BOOLEAN NOT NULL DEFAULT FALSE;
