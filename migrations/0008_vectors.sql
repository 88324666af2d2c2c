-- engram schema, version 8: embeddings.
--
-- At most one vector per record, as little-endian 32-bit floats, with its
-- Euclidean norm (so a cosine is one dot product). `text_hash` is set when
-- engram's embedder made the vector from the record's search text (a hash
-- of that text): a change that alters the text drops the vector, and the
-- embedder makes a new one. A vector a client sent has none and stays
-- until the client replaces it. A deleted record takes its vector along.
CREATE TABLE record_vectors (
    record_key INTEGER PRIMARY KEY REFERENCES records (key) ON DELETE CASCADE,
    norm       REAL    NOT NULL CHECK (norm > 0),
    vector     BLOB    NOT NULL,
    text_hash  INTEGER
);

-- The number of dimensions of every vector of this database: fixed by the
-- first vector stored, or by `retrieval.embedding_dimensions`.
CREATE TABLE vector_space (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    dimensions INTEGER NOT NULL CHECK (dimensions > 0)
);
