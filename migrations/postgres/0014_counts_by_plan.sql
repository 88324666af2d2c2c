-- engram schema on PostgreSQL, version 14: the functions that keep
-- `text_totals` and `term_counts` in every write's transaction cost a
-- fraction of what they did.
--
-- As SQL functions they were planned again at every call (a statement of
-- many CTEs: about 0.4 ms and 1 ms a statement, however few its rows). As
-- PL/pgSQL they keep their plans (generic ones: the plans do not depend on
-- the arrays they are given) and return at once when there is nothing to
-- add (an update that changed no search text).
CREATE OR REPLACE FUNCTION engram_add_text_totals(scopes TEXT[], layers BIGINT[], sensitivities BIGINT[],
                                       lives BOOLEAN[], docs BIGINT[], tokens BIGINT[])
RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    IF COALESCE(cardinality(scopes), 0) = 0 THEN
        RETURN;
    END IF;
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
        tokens = text_totals_all.tokens + excluded.tokens;
END
$$;

CREATE OR REPLACE FUNCTION engram_add_term_counts(scopes TEXT[], layers BIGINT[], sensitivities BIGINT[],
                                       lives BOOLEAN[], signs INT[], searches TSVECTOR[])
RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    IF COALESCE(cardinality(scopes), 0) = 0 THEN
        RETURN;
    END IF;
    WITH c AS (
        SELECT * FROM unnest(scopes, layers, sensitivities, lives, signs, searches)
                      AS u(scope, layer, sensitivity, live, d, search)),
    t AS (
        SELECT c.scope, c.layer, c.sensitivity, c.live, n.id, SUM(c.d)::int AS d
        FROM c CROSS JOIN LATERAL unnest(tsvector_to_array(c.search)) AS w(term)
        JOIN counted_terms n ON n.term = w.term
        GROUP BY 1, 2, 3, 4, 5 HAVING SUM(c.d) <> 0),
    by_scope AS (
        SELECT scope, layer, sensitivity, live, (id - 1) / 256 AS chunk,
               array_agg((id - 1) % 256 + 1) AS positions, array_agg(d) AS deltas
        FROM t GROUP BY 1, 2, 3, 4, 5),
    every AS (
        SELECT layer, sensitivity, live, chunk, array_agg(p) AS positions, array_agg(d) AS deltas
        FROM (SELECT layer, sensitivity, live, (id - 1) / 256 AS chunk, (id - 1) % 256 + 1 AS p,
                     SUM(d)::int AS d
              FROM t GROUP BY 1, 2, 3, 4, 5 HAVING SUM(d) <> 0) a
        GROUP BY 1, 2, 3, 4),
    scope_changed AS (
        UPDATE term_counts k SET counts = engram_counts_add(k.counts, b.positions, b.deltas)
        FROM by_scope b
        WHERE k.scope = b.scope AND k.layer = b.layer AND k.sensitivity = b.sensitivity
          AND k.live = b.live AND k.shard = pg_backend_pid() % 16 AND k.chunk = b.chunk
        RETURNING k.scope, k.layer, k.sensitivity, k.live, k.chunk),
    every_changed AS (
        UPDATE term_counts_all k SET counts = engram_counts_add(k.counts, e.positions, e.deltas)
        FROM every e
        WHERE k.layer = e.layer AND k.sensitivity = e.sensitivity AND k.live = e.live
          AND k.shard = pg_backend_pid() % 16 AND k.chunk = e.chunk
        RETURNING k.layer, k.sensitivity, k.live, k.chunk),
    scope_new AS (
        INSERT INTO term_counts (scope, layer, sensitivity, live, shard, chunk, counts)
        SELECT scope, layer, sensitivity, live, pg_backend_pid() % 16, chunk,
               engram_counts_add('{}', positions, deltas)
        FROM by_scope b
        WHERE NOT EXISTS (SELECT 1 FROM scope_changed k
                          WHERE k.scope = b.scope AND k.layer = b.layer
                            AND k.sensitivity = b.sensitivity AND k.live = b.live
                            AND k.chunk = b.chunk)
        ON CONFLICT (scope, layer, sensitivity, live, shard, chunk) DO UPDATE
        SET counts = engram_counts_sum(term_counts.counts, excluded.counts))
    INSERT INTO term_counts_all (layer, sensitivity, live, shard, chunk, counts)
    SELECT layer, sensitivity, live, pg_backend_pid() % 16, chunk,
           engram_counts_add('{}', positions, deltas)
    FROM every e
    WHERE NOT EXISTS (SELECT 1 FROM every_changed k
                      WHERE k.layer = e.layer AND k.sensitivity = e.sensitivity
                        AND k.live = e.live AND k.chunk = e.chunk)
    ON CONFLICT (layer, sensitivity, live, shard, chunk) DO UPDATE
    SET counts = engram_counts_sum(term_counts_all.counts, excluded.counts);
END
$$;

ALTER FUNCTION engram_add_text_totals(TEXT[], BIGINT[], BIGINT[], BOOLEAN[], BIGINT[], BIGINT[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION engram_add_term_counts(TEXT[], BIGINT[], BIGINT[], BOOLEAN[], INT[], TSVECTOR[])
    SET plan_cache_mode = force_generic_plan;
