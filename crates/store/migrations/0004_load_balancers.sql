-- Load balancers and pools of origins (SPEC §7). Pools belong to a zone and are named uniquely
-- in it; origins keep their ids across edits so that their health history stays attached
-- (health_events.record_id holds minus the origin id). A load balancer's pool lists and rules
-- are JSON (pool names), as the API writes them.
CREATE TABLE pools (
    id        INTEGER PRIMARY KEY,
    zone_id   INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
    name      TEXT    NOT NULL,
    enabled   INTEGER NOT NULL,
    algorithm TEXT    NOT NULL,
    latitude  DOUBLE PRECISION,
    longitude DOUBLE PRECISION,
    UNIQUE (zone_id, name)
);

CREATE TABLE origins (
    id       INTEGER PRIMARY KEY,
    pool_id  INTEGER NOT NULL REFERENCES pools(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    address  TEXT    NOT NULL,
    enabled  INTEGER NOT NULL,
    weight   INTEGER NOT NULL,
    priority BIGINT  NOT NULL,
    -- The check's spec as JSON; NULL when the origin has none.
    health_check TEXT
);
CREATE INDEX origins_by_pool ON origins(pool_id, position);

CREATE TABLE load_balancers (
    id        INTEGER PRIMARY KEY,
    zone_id   INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
    name      BLOB    NOT NULL,
    enabled   INTEGER NOT NULL,
    ttl       INTEGER NOT NULL,
    pools     TEXT    NOT NULL,
    rules     TEXT    NOT NULL,
    fallback  TEXT,
    steering  TEXT    NOT NULL,
    locate_by TEXT    NOT NULL,
    affinity  TEXT    NOT NULL,
    UNIQUE (zone_id, name)
);
