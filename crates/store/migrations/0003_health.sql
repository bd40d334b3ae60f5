-- Health of checked targets. A target is identified by its check key (address + check
-- settings), shared by every record that names it; its last known state survives restarts.
CREATE TABLE health_states (
    key     BIGINT  PRIMARY KEY,
    state   TEXT    NOT NULL,
    since   BIGINT  NOT NULL,
    reason  TEXT
);

-- State changes per record, newest last; trimmed to a bounded history per record.
CREATE TABLE health_events (
    id         INTEGER PRIMARY KEY,
    record_id  INTEGER NOT NULL,
    time       BIGINT  NOT NULL,
    old_state  TEXT    NOT NULL,
    new_state  TEXT    NOT NULL,
    reason     TEXT,
    status     INTEGER,
    latency_ms BIGINT
);
CREATE INDEX health_events_by_record ON health_events(record_id, id);
