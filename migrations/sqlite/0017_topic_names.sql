-- engram schema, version 17: what `auto` placement knows of a topic's
-- names, and its summary's history.
--
-- norm_title is made again by engram when this version is applied: a title
-- is now compared without punctuation and without a leading article
-- (domain/resolution.rs).
--
-- topic_aliases: the other titles an observation named a topic by when it
-- was placed on it; an observation with one of them as its title goes to
-- that topic.
CREATE TABLE topic_aliases (
    topic_key  INTEGER NOT NULL REFERENCES topics (key),
    norm_alias TEXT    NOT NULL,
    alias      TEXT    NOT NULL,
    added_at   INTEGER NOT NULL,
    PRIMARY KEY (topic_key, norm_alias)
);
CREATE INDEX topic_aliases_by_name ON topic_aliases (norm_alias);

-- topic_summaries: each summary a topic has had, in order; the topic's
-- `summary` column is the current one. A topic made before this version
-- starts with its summary of now, from when it was made.
CREATE TABLE topic_summaries (
    topic_key   INTEGER NOT NULL REFERENCES topics (key),
    seq         INTEGER NOT NULL,
    summary     TEXT    NOT NULL,
    valid_from  INTEGER NOT NULL,
    source      TEXT    NOT NULL,
    why_changed TEXT,
    PRIMARY KEY (topic_key, seq)
);
INSERT INTO topic_summaries (topic_key, seq, summary, valid_from, source, why_changed)
SELECT key, 1, summary, created_at, 'engram:upgrade', NULL FROM topics WHERE summary <> '';
