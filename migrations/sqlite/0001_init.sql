-- Sessions and their events (one row per canonical message or marker), in order.
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    cwd        TEXT NOT NULL,
    provider   TEXT NOT NULL,
    model      TEXT NOT NULL,
    title      TEXT
);

CREATE INDEX sessions_by_updated ON sessions (updated_at);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at);

CREATE TABLE events (
    id         TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    content    TEXT NOT NULL DEFAULT '',
    data       TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (session_id, seq)
);
