-- engram schema on PostgreSQL, version 5: the search columns hold the
-- terms of engram's own text analyser (domain/analysis.rs: Unicode folding,
-- lower-casing, Snowball English stems), the same terms SQLite holds,
-- under the `simple` configuration (no stemming of its own, no stop
-- words). Until version 4 they held the `english` configuration's stems.
--
-- The records' search text is made again when this version is applied
-- (from the record alone, in engram); the topics' when engram next starts
-- (their text depends on who may see each field's versions), from the
-- list below.
CREATE TABLE topics_to_index (topic_key BIGINT PRIMARY KEY);
INSERT INTO topics_to_index (topic_key) SELECT key FROM topics;

-- What BM25 needs of a record beyond the index: how many terms its text
-- has, and the terms it has more than once with how often
-- (domain/analysis.rs, `Analysed`); set when this version is applied.
ALTER TABLE records ADD COLUMN search_length BIGINT NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN search_repeats TEXT;

-- How many records, and how many terms their texts have together, by who
-- may see them (scope, '' for none; layer; sensitivity; live = not
-- retracted), and the same over every scope: what a caller may see is a
-- sum of these, so BM25's statistics count only what the caller may see.
-- Kept by the triggers below in the transaction of each change, each
-- connection adding to a shard of its own (its process id modulo 16), so
-- writers to the same scope never wait on one row; a caller's totals sum
-- the shards.
CREATE TABLE text_totals (
    scope       TEXT    NOT NULL,
    layer       BIGINT  NOT NULL,
    sensitivity BIGINT  NOT NULL,
    live        BOOLEAN NOT NULL,
    shard       INT     NOT NULL,
    docs        BIGINT  NOT NULL,
    tokens      BIGINT  NOT NULL,
    PRIMARY KEY (scope, layer, sensitivity, live, shard)
);

CREATE TABLE text_totals_all (
    layer       BIGINT  NOT NULL,
    sensitivity BIGINT  NOT NULL,
    live        BOOLEAN NOT NULL,
    shard       INT     NOT NULL,
    docs        BIGINT  NOT NULL,
    tokens      BIGINT  NOT NULL,
    PRIMARY KEY (layer, sensitivity, live, shard)
);

-- Adds the changes of one statement (rows counted -1 as they were, +1 as
-- they are) to the totals.
CREATE FUNCTION engram_add_text_totals(scopes TEXT[], layers BIGINT[], sensitivities BIGINT[],
                                       lives BOOLEAN[], docs BIGINT[], tokens BIGINT[])
RETURNS VOID LANGUAGE SQL AS $$
    WITH c AS (
        SELECT * FROM unnest(scopes, layers, sensitivities, lives, docs, tokens)
                      AS u(scope, layer, sensitivity, live, d, t)),
    by_scope AS (
        INSERT INTO text_totals (scope, layer, sensitivity, live, shard, docs, tokens)
        SELECT scope, layer, sensitivity, live, pg_backend_pid() % 16, SUM(d), SUM(t)
        FROM c GROUP BY 1, 2, 3, 4 HAVING SUM(d) <> 0 OR SUM(t) <> 0
        ON CONFLICT (scope, layer, sensitivity, live, shard) DO UPDATE
        SET docs = text_totals.docs + excluded.docs,
            tokens = text_totals.tokens + excluded.tokens)
    INSERT INTO text_totals_all (layer, sensitivity, live, shard, docs, tokens)
    SELECT layer, sensitivity, live, pg_backend_pid() % 16, SUM(d), SUM(t)
    FROM c GROUP BY 1, 2, 3 HAVING SUM(d) <> 0 OR SUM(t) <> 0
    ON CONFLICT (layer, sensitivity, live, shard) DO UPDATE
    SET docs = text_totals_all.docs + excluded.docs,
        tokens = text_totals_all.tokens + excluded.tokens
$$;

CREATE FUNCTION engram_text_totals() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM engram_add_text_totals(array_agg(COALESCE(scope, '')), array_agg(layer),
                    array_agg(sensitivity), array_agg(status <> 'retracted'),
                    array_agg(1::bigint), array_agg(search_length))
        FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM engram_add_text_totals(array_agg(COALESCE(scope, '')), array_agg(layer),
                    array_agg(sensitivity), array_agg(status <> 'retracted'),
                    array_agg(-1::bigint), array_agg(-search_length))
        FROM old_rows;
    ELSE
        PERFORM engram_add_text_totals(array_agg(s), array_agg(l), array_agg(v), array_agg(a),
                                       array_agg(d), array_agg(t))
        FROM (SELECT COALESCE(scope, '') s, layer l, sensitivity v, status <> 'retracted' a,
                     -1::bigint d, -search_length t FROM old_rows
              UNION ALL
              SELECT COALESCE(scope, ''), layer, sensitivity, status <> 'retracted',
                     1::bigint, search_length FROM new_rows) changes;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER text_totals_insert AFTER INSERT ON records
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_totals();
CREATE TRIGGER text_totals_update AFTER UPDATE ON records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_text_totals();
CREATE TRIGGER text_totals_delete AFTER DELETE ON records
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_totals();

-- The records stored so far, counted; their lengths are added as their
-- search text is made again (the update trigger).
SELECT engram_add_text_totals(array_agg(COALESCE(scope, '')), array_agg(layer),
                              array_agg(sensitivity), array_agg(status <> 'retracted'),
                              array_agg(1::bigint), array_agg(search_length))
FROM records;

-- A caller's vectors by its scopes (and the unscoped ones), so a vector
-- query reads the caller's vectors, not every vector of its types.
CREATE INDEX record_vectors_by_scope ON record_vectors (scope, live, layer, sensitivity);
