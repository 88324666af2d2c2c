-- engram schema on PostgreSQL, version 12: conversations.
--
-- conversation_turns: where each turn of a conversation stands (one row
-- per record whose payload holds a `turn`, kept in step with it by every
-- write). The conversation is the record's `about` too, so retrieval's
-- `conversation_id` filter is the same indexed lookup as a subject's; the
-- rows here order a conversation's turns, group them into sessions, name
-- their speakers and say which mention a time. Scope, sensitivity and
-- status stay on the record: what a caller may see is decided there.
CREATE TABLE conversation_turns (
    record_key      BIGINT  PRIMARY KEY REFERENCES records (key) ON DELETE CASCADE,
    conversation_id TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    turn_index      BIGINT  NOT NULL,
    speaker         TEXT    NOT NULL,
    at              BIGINT  NOT NULL,
    timed           BOOLEAN NOT NULL
);
CREATE INDEX conversation_turns_in_order
    ON conversation_turns (conversation_id, at, record_key);
CREATE INDEX conversation_turns_by_session
    ON conversation_turns (conversation_id, session_id, turn_index);
