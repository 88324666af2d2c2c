-- engram schema, version 24: document counts of the common terms by who
-- may see the records (store/term_counts.rs), so a caller's document
-- frequency of a term in most records is a sum over its partitions, not
-- a count of the term's matches. Kept in the transaction of each change
-- (store/sqlite/counted.rs); filled when this version is applied.

-- The counted terms, numbered from 1 in the order they were counted, and
-- the most times one record's text has had each (raised by writes, never
-- lowered: it bounds what the term adds to any record's relevance).
CREATE TABLE counted_terms (
    id   INTEGER PRIMARY KEY,
    term TEXT NOT NULL UNIQUE,
    most INTEGER NOT NULL DEFAULT 1
);

-- Per partition of `text_totals` (scope, '' for none; layer; sensitivity;
-- live = not retracted) and chunk of 256 term numbers (chunk c holds terms
-- 256c + 1 to 256c + 256), the number of records with each counted term:
-- little-endian 32-bit counts, the n-th for the chunk's n-th term,
-- missing ones 0.
CREATE TABLE term_counts (
    scope       TEXT    NOT NULL,
    layer       INTEGER NOT NULL,
    sensitivity INTEGER NOT NULL,
    live        INTEGER NOT NULL,
    chunk       INTEGER NOT NULL,
    counts      BLOB    NOT NULL,
    UNIQUE (scope, layer, sensitivity, live, chunk)
);

-- The same over every scope.
CREATE TABLE term_counts_all (
    layer       INTEGER NOT NULL,
    sensitivity INTEGER NOT NULL,
    live        INTEGER NOT NULL,
    chunk       INTEGER NOT NULL,
    counts      BLOB    NOT NULL,
    UNIQUE (layer, sensitivity, live, chunk)
);
