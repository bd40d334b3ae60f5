-- Zones, records, users and API tokens. Names and rdata are kept in DNS wire format so that
-- loading needs no text parsing; booleans are INTEGER and times BIGINT seconds so the same
-- schema works on PostgreSQL.
CREATE TABLE zones (
    id          INTEGER PRIMARY KEY,
    name        BLOB    NOT NULL UNIQUE,
    default_ttl INTEGER NOT NULL,
    mname       BLOB    NOT NULL,
    rname       BLOB    NOT NULL,
    serial      BIGINT  NOT NULL,
    refresh     BIGINT  NOT NULL,
    retry       BIGINT  NOT NULL,
    expire      BIGINT  NOT NULL,
    minimum     BIGINT  NOT NULL,
    created     BIGINT  NOT NULL
);

CREATE TABLE records (
    id      INTEGER PRIMARY KEY,
    zone_id INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
    name    BLOB    NOT NULL,
    rtype   INTEGER NOT NULL,
    ttl     BIGINT  NOT NULL,
    rdata   BLOB    NOT NULL
);
CREATE INDEX records_by_zone ON records(zone_id);

CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL UNIQUE,
    password_hash TEXT    NOT NULL,
    role          TEXT    NOT NULL,
    created       BIGINT  NOT NULL
);

CREATE TABLE tokens (
    id      INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name    TEXT    NOT NULL,
    hash    BLOB    NOT NULL UNIQUE,
    created BIGINT  NOT NULL
);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
