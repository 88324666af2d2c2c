-- engram schema, version 8: embeddings.
--
-- At most one vector per record, as little-endian 32-bit floats, with its
-- Euclidean norm (so a cosine is one dot product). `text_hash` is set when
-- engram's embedder made the vector from the record's search text (a hash
-- of that text): a change that alters the text drops the vector, and the
-- embedder makes a new one. A vector a client sent has none and stays
-- until the client replaces it. A deleted record takes its vector along.
--
-- For retrieval by vector, each row also holds the record's visibility
-- (scope, type, sensitivity, whether it is live: not retracted), kept in
-- step with the record by every write that changes them (a trigger would
-- make every update of a record pay for a statement journal), and a
-- one-byte-per-dimension copy of
-- the vector scaled to length 1 (`q`, value i is q[i]·scale). The scan
-- index holds them all, so the vectors a caller may see are read as a
-- few contiguous ranges, without touching the records table; only the
-- few that can make the answer are then read whole.
CREATE TABLE record_vectors (
    record_key  INTEGER PRIMARY KEY REFERENCES records (key) ON DELETE CASCADE,
    norm        REAL    NOT NULL CHECK (norm > 0),
    vector      BLOB    NOT NULL,
    text_hash   INTEGER,
    scope       TEXT,
    layer       INTEGER NOT NULL,
    sensitivity INTEGER NOT NULL,
    live        INTEGER NOT NULL CHECK (live IN (0, 1)),
    scale       REAL    NOT NULL,
    q           BLOB    NOT NULL
);

CREATE INDEX idx_vectors_scan
    ON record_vectors (live, scope, layer, sensitivity, record_key, scale, q);

-- The number of dimensions of every vector of this database: fixed by the
-- first vector stored, or by `retrieval.embedding_dimensions`.
CREATE TABLE vector_space (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    dimensions INTEGER NOT NULL CHECK (dimensions > 0)
);
