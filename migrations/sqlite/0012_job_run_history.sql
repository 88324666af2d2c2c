-- engram schema, version 12: the newest runs of each job, not only its last
-- one, so operators see how a job has been doing. The writer keeps a bounded
-- number per job (the scheduler's `RUNS_KEPT`).
CREATE TABLE job_run_log (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    result_json TEXT,
    error       TEXT
);
CREATE INDEX job_run_log_by_name ON job_run_log (name, id);
INSERT INTO job_run_log (name, started_at, finished_at, duration_ms, result_json, error)
    SELECT name, started_at, finished_at, duration_ms, result_json, error FROM job_runs ORDER BY started_at;
DROP TABLE job_runs;
