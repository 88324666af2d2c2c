-- engram schema, version 13: which engram process runs a job. A run takes
-- the job's row (holder, until when) and gives it back when it ends; a
-- scheduled run also records the scheduled time it is for (`tick`,
-- microseconds), so one scheduled time is run once however many
-- processes fire for it. Kept on SQLite too, where one process holds the
-- database, so both backends run jobs by the same rules.
-- The engram processes on the database, each as last seen (a heartbeat
-- every jobs.sync_interval_ms): rate limits are shared out among the
-- live ones.
CREATE TABLE instances (
    id      TEXT    PRIMARY KEY,
    seen_at INTEGER NOT NULL
);

CREATE TABLE job_leases (
    name       TEXT    PRIMARY KEY,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    tick       INTEGER NOT NULL DEFAULT 0
);
