-- Sessions and their events (one row per canonical message or marker), in order.
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    cwd        TEXT NOT NULL,
    provider   TEXT NOT NULL,
    model      TEXT NOT NULL,
    title      TEXT
);

CREATE INDEX sessions_by_updated ON sessions (updated_at);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at);

CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    kind       TEXT NOT NULL,
    content    TEXT NOT NULL DEFAULT '',
    data       JSONB,
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (session_id, seq)
);
