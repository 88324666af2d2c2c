-- engram schema, version 10: topic words by scope.
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
-- first).
DELETE FROM topic_words w USING topics t WHERE t.key = w.topic_key AND t.archived;
ALTER TABLE topic_words ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE topic_words ADD COLUMN sensitivity BIGINT NOT NULL DEFAULT 0;
UPDATE topic_words w SET scope = COALESCE(t.scope, ''), sensitivity = t.sensitivity
FROM topics t WHERE t.key = w.topic_key;
ALTER TABLE topic_words ALTER COLUMN scope DROP DEFAULT;
ALTER TABLE topic_words ALTER COLUMN sensitivity DROP DEFAULT;
ALTER TABLE topic_words DROP CONSTRAINT topic_words_pkey;
ALTER TABLE topic_words ADD PRIMARY KEY (word, scope, topic_key);
ALTER TABLE topic_words DROP CONSTRAINT topic_words_topic_key_fkey;
