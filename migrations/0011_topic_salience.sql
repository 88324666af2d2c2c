-- engram schema, version 11: topic salience decays like a record's.
--
-- `salience` is the value as of the last decay sweep or reinforcement (what
-- the archive step orders by); the anchor is the salience a topic had at
-- its last reinforcement, from which reads compute the current value.
ALTER TABLE topics ADD COLUMN anchor_salience REAL NOT NULL DEFAULT 1.0;
ALTER TABLE topics ADD COLUMN anchor_at INTEGER NOT NULL DEFAULT 0;
UPDATE topics SET anchor_salience = salience, anchor_at = updated_at;
-- Topics that faded below the archive threshold, found without a scan.
CREATE INDEX topics_by_salience ON topics (salience) WHERE archived = 0;
