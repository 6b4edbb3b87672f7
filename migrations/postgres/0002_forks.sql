-- A fork records the session it was copied from. (PostgreSQL holds sessions with
-- session-scoped advisory locks, which need no table.)
ALTER TABLE sessions ADD COLUMN forked_from TEXT;
