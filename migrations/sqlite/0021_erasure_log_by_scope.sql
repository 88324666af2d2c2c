-- engram schema, version 21: the erasure log by scope.
--
-- `GET /v1/erasures` lists the erasures whose grant the caller holds. It
-- read the newest entries of every tenant and filtered them afterwards,
-- so another tenant's erasures could push a caller's own out of the page.
-- Each entry's scopes are now rows of their own ('' for an entry made
-- within unscoped records only; none for one made within every scope),
-- led by the scope, so a scoped caller's page is read from its scopes
-- alone, newest first, and paged by time.
CREATE TABLE erasure_scopes (
    scope      TEXT    NOT NULL,
    at         INTEGER NOT NULL,
    erasure_id TEXT    NOT NULL,
    PRIMARY KEY (scope, at, erasure_id)
) WITHOUT ROWID;
CREATE INDEX erasure_scopes_by_erasure ON erasure_scopes (erasure_id);

INSERT INTO erasure_scopes (scope, at, erasure_id)
SELECT j.value, e.at, e.id FROM erasures e, json_each(e.grant_scopes) j
WHERE e.grant_scopes IS NOT NULL;
INSERT INTO erasure_scopes (scope, at, erasure_id)
SELECT '', at, id FROM erasures WHERE grant_scopes = '[]';

DROP INDEX erasures_by_time;
CREATE INDEX erasures_by_time ON erasures (at, id);
