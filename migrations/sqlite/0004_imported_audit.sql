-- Audit entries a client sent along with a whole record are kept, marked
-- as imported, so they can never pass for the service's own.
ALTER TABLE audit_log ADD COLUMN imported INTEGER NOT NULL DEFAULT 0 CHECK (imported IN (0, 1));
