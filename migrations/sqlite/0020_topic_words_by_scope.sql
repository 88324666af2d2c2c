-- engram schema, version 20: topic words by scope.
--
-- `auto` placement and similar-topic hints read, for each word of an
-- observation, the newest topics that have it, up to a bound. Read across
-- every scope, another tenant's topics could fill that bound and keep a
-- caller's own topic from being compared, and made the lookup cost more
-- the more others wrote. The word index now leads with the topic's scope
-- ('' for unscoped topics; a topic's scope never changes), so a lookup
-- reads only the scopes the caller may see.
CREATE TABLE topic_words_by_scope (
    word      TEXT    NOT NULL,
    scope     TEXT    NOT NULL,
    topic_key INTEGER NOT NULL REFERENCES topics (key),
    PRIMARY KEY (word, scope, topic_key)
) WITHOUT ROWID;

INSERT INTO topic_words_by_scope (word, scope, topic_key)
SELECT w.word, COALESCE(t.scope, ''), w.topic_key
FROM topic_words w JOIN topics t ON t.key = w.topic_key;

DROP TABLE topic_words;
ALTER TABLE topic_words_by_scope RENAME TO topic_words;
