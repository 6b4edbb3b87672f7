-- A sub-agent's session records the session whose `task` call ran it and that call's id
-- (both NULL for every other session, as for every session stored before).
ALTER TABLE sessions ADD COLUMN parent_id TEXT;
ALTER TABLE sessions ADD COLUMN parent_call TEXT;
