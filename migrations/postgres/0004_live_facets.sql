-- engram schema on PostgreSQL, version 4: a retracted record's facets are
-- its own tokens, so a query of current records needs no negation.
--
-- Until version 3 a retracted record kept the facets of a current one and
-- had 'R -' as well; queries of current records asked for `!'R -'`. The
-- index cannot skip through a negated list: every scan walked the whole
-- list of retracted records (a quarter of the table under working-state
-- churn), 2-4 ms a statement at 1,000,000 records. Now a retracted record
-- has 'R -', its type 'L n', and the other facets with an R in front
-- ('RE n', 'RV n', 'RV v s', 'REV n v s', 'REW n v s'); a current record's
-- facets are as before. Queries of current records ask for the facets of
-- current ones only; queries with retracted records ask for both kinds.
CREATE OR REPLACE FUNCTION engram_facets(key BIGINT, layer BIGINT, sensitivity BIGINT,
                                         scope TEXT, status TEXT)
RETURNS TSVECTOR LANGUAGE SQL IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_to_tsvector(
        ARRAY['L ' || layer::text]
        || CASE WHEN status = 'retracted'
                THEN ARRAY['R -', 'RE ' || (key >> 12)::text]
                     || (ARRAY['RV 0', 'RV 1', 'RV 2', 'RV 3'])[sensitivity + 1:4]
                ELSE ARRAY['E ' || (key >> 12)::text]
                     || (ARRAY['V 0', 'V 1', 'V 2', 'V 3'])[sensitivity + 1:4]
           END
        || ARRAY[CASE WHEN status = 'retracted' THEN 'RV ' ELSE 'V ' END
                     || sensitivity::text || ' ' || COALESCE(left(md5(scope), 16), '-'),
                 CASE WHEN status = 'retracted' THEN 'REV ' ELSE 'EV ' END
                     || (key >> 12)::text || ' ' || sensitivity::text || ' '
                     || COALESCE(left(md5(scope), 16), '-'),
                 CASE WHEN status = 'retracted' THEN 'REW ' ELSE 'EW ' END
                     || (key >> 16)::text || ' ' || sensitivity::text || ' '
                     || COALESCE(left(md5(scope), 16), '-')])
$$;

-- The retracted records' facets of a current record give way to their
-- own (a current record's facets are what the function gives 'active').
UPDATE records
SET search = ts_delete(search, tsvector_to_array(engram_facets(key, layer, sensitivity, scope, 'active')))
             || engram_facets(key, layer, sensitivity, scope, status)
WHERE status = 'retracted';
