-- engram schema on PostgreSQL, version 3: two costs of writing records.
--
-- `engram_facets` as one expression the planner inlines into the statement
-- that calls it. Version 1's body had sub-selects (the retracted mark, the sensitivities
-- from the record's up to 3) and concatenated numbers without casts, which
-- are only stable. Either keeps PostgreSQL from inlining a SQL function, so
-- every record written parsed and planned the body again: about a seventh
-- of the server's time under single-record ingest. The tokens are the same
-- for every argument, so records written before keep their search text.
CREATE OR REPLACE FUNCTION engram_facets(key BIGINT, layer BIGINT, sensitivity BIGINT,
                                         scope TEXT, status TEXT)
RETURNS TSVECTOR LANGUAGE SQL IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_to_tsvector(
        ARRAY['L ' || layer::text, 'E ' || (key >> 12)::text]
        || CASE WHEN status = 'retracted' THEN ARRAY['R -'] ELSE '{}'::text[] END
        || (ARRAY['V 0', 'V 1', 'V 2', 'V 3'])[sensitivity + 1:4]
        || ARRAY['V ' || sensitivity::text || ' ' || COALESCE(left(md5(scope), 16), '-'),
                 'EV ' || (key >> 12)::text || ' ' || sensitivity::text || ' '
                     || COALESCE(left(md5(scope), 16), '-'),
                 'EW ' || (key >> 16)::text || ' ' || sensitivity::text || ' '
                     || COALESCE(left(md5(scope), 16), '-')])
$$;

-- A new working state looks up its thread's current state. The index on
-- `about` holds every state the thread ever had, retracted ones too, and
-- the scope test (IS NOT DISTINCT FROM) cannot bound it: each lookup read
-- the thread's whole history. This index holds the states that are not
-- retracted, about one per thread and scope.
CREATE INDEX records_current ON records (about, layer) WHERE about IS NOT NULL AND status <> 'retracted';
