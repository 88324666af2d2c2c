-- engram schema, version 20: topic words by scope.
--
-- `auto` placement and similar-topic hints read, for each word of an
-- observation, the newest topics that have it, up to a bound. Read across
-- every scope and sensitivity, topics the caller may not see could fill
-- that bound and keep its own from being compared, and made the lookup
-- cost more the more others wrote. The word index now leads with the
-- topic's scope ('' for unscoped topics) and holds its sensitivity (a
-- topic's scope and sensitivity never change), so a lookup reads the
-- scopes the caller may see and skips what is above its ceiling without
-- reading the topics. Archived topics, which placement never compares,
-- leave the index.
--
-- No foreign key to `topics`: the index is the service's own, a word
-- found for a topic no longer there is skipped, and the check would read
-- the whole table for every topic deleted (it is not keyed by topic
-- first), which made erasing 2,000 topics take seconds.
CREATE TABLE topic_words_by_scope (
    word        TEXT    NOT NULL,
    scope       TEXT    NOT NULL,
    topic_key   INTEGER NOT NULL,
    sensitivity INTEGER NOT NULL,
    PRIMARY KEY (word, scope, topic_key)
) WITHOUT ROWID;

INSERT INTO topic_words_by_scope (word, scope, topic_key, sensitivity)
SELECT w.word, COALESCE(t.scope, ''), w.topic_key, t.sensitivity
FROM topic_words w JOIN topics t ON t.key = w.topic_key
WHERE t.archived = 0;

DROP TABLE topic_words;
ALTER TABLE topic_words_by_scope RENAME TO topic_words;
