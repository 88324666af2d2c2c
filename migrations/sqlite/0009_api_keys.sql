-- engram schema, version 9: API keys.
--
-- One row per key ever made. `hash` is the HMAC-SHA256 of the key's secret
-- under the pepper, which is kept outside the database (src/auth/secret.rs);
-- the secret itself is never stored. A revoked key keeps its row, and so
-- its name, which audit entries carry, is never given to another key.
CREATE TABLE api_keys (
    name            TEXT    PRIMARY KEY,
    hash            BLOB    NOT NULL UNIQUE,
    -- Comma-separated role names (domain/access.rs).
    roles           TEXT    NOT NULL,
    max_sensitivity INTEGER NOT NULL,
    -- JSON array of scope names; [] = every scope.
    scopes_json     TEXT    NOT NULL,
    -- Requests per second; NULL = the configured default.
    rate            REAL,
    created_at      INTEGER NOT NULL,
    revoked_at      INTEGER
) WITHOUT ROWID;
