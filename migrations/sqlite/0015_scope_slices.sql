-- engram schema, version 15: a scope's records read together, and a
-- thread's current working state found without its history.
--
-- A caller that sees a few scopes reads its whole slice for a text query
-- (`retrieval.scan_records`). Its records are spread over the table among
-- everyone else's, one table page per record; the scope rank index now
-- also holds what that read takes (the status and the analysed text's
-- length, repeats and distinct terms), so the slice is one walk over
-- adjacent index pages.
DROP INDEX idx_records_scope_rank;
CREATE INDEX idx_records_scope_rank ON records (scope, layer, sensitivity, salience DESC,
    decays_from DESC, status, search_length, search_repeats, search_terms)
    WHERE status <> 'retracted';

-- A new working state retracts its thread's current one. The `about`
-- index holds every state the thread ever had, retracted ones too, so
-- finding the current one read its whole history: one more entry for
-- each state written. This index holds only the states not retracted.
CREATE INDEX idx_records_current ON records (about, layer)
    WHERE about IS NOT NULL AND status <> 'retracted';
