-- engram schema, version 10: topic words by scope.
--
-- `auto` placement and similar-topic hints read, for each word of an
-- observation, the newest topics that have it, up to a bound. Read across
-- every scope, another tenant's topics could fill that bound and keep a
-- caller's own topic from being compared, and made the lookup cost more
-- the more others wrote. The word index now leads with the topic's scope
-- ('' for unscoped topics; a topic's scope never changes), so a lookup
-- reads only the scopes the caller may see.
ALTER TABLE topic_words ADD COLUMN scope TEXT NOT NULL DEFAULT '';
UPDATE topic_words w SET scope = t.scope
FROM topics t WHERE t.key = w.topic_key AND t.scope IS NOT NULL;
ALTER TABLE topic_words ALTER COLUMN scope DROP DEFAULT;
ALTER TABLE topic_words DROP CONSTRAINT topic_words_pkey;
ALTER TABLE topic_words ADD PRIMARY KEY (word, scope, topic_key);
