-- engram schema, version 3: a row version on every record.
--
-- Every change to a record (a revision, an outcome, a consolidation step)
-- is made conditional on the version it read and moves it on by one, so a
-- change made since the read is detected in the statement itself rather
-- than by there being one writer. The decay sweep's rewrite of the stored
-- salience (a cache of a value computed from the decay anchor) and the
-- prune are conditional on it too, but the sweep does not move it: decay is
-- not a change a concurrent revision needs to hear about.
ALTER TABLE records ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
