-- Dashboard sessions (SPEC §11): a browser holds the session id in an HttpOnly cookie; only its
-- SHA-256 is kept here, like tokens. Writes must echo `csrf`. Rows go with their user.
CREATE TABLE sessions (
    id_hash BLOB    PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf    TEXT    NOT NULL,
    created INTEGER NOT NULL,
    expires INTEGER NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions(expires);
