-- One writer per session: a lease row names the process that holds a session (its
-- random owner token, pid and host) and when it last said it is alive (heartbeat, ms
-- since the Unix epoch). A fork records the session it was copied from.
ALTER TABLE sessions ADD COLUMN forked_from TEXT;

CREATE TABLE leases (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    owner      TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    heartbeat  INTEGER NOT NULL
);
