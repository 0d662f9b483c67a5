-- washline staging and published tables for SQLite (idempotent).
-- One logical date (ds, 'YYYY-MM-DD') is one replaceable slice of every table.
-- Dates are ISO-8601 TEXT; timestamps are ISO-8601 TEXT in UTC.

CREATE TABLE IF NOT EXISTS staging_records (
    ds            TEXT    NOT NULL,
    load_id       TEXT    NOT NULL,
    record_id     TEXT    NOT NULL,
    source        TEXT    NOT NULL,
    truth_entity  TEXT,
    given_name    TEXT,
    surname       TEXT,
    street_number TEXT,
    address_1     TEXT,
    address_2     TEXT,
    suburb        TEXT,
    postcode      TEXT,
    state         TEXT,
    date_of_birth TEXT,
    soc_sec_id    TEXT,
    source_file   TEXT,
    line_number   INTEGER,
    PRIMARY KEY (ds, source, record_id)
);

CREATE TABLE IF NOT EXISTS staging_links (
    ds           TEXT    NOT NULL,
    load_id      TEXT    NOT NULL,
    record_id    TEXT    NOT NULL,
    cluster_id   TEXT    NOT NULL,
    iteration    INTEGER NOT NULL,
    mu           REAL,
    quality      REAL    NOT NULL,
    cluster_size INTEGER NOT NULL,
    PRIMARY KEY (ds, record_id)
);
CREATE INDEX IF NOT EXISTS ix_staging_links_cluster ON staging_links (ds, cluster_id);

CREATE TABLE IF NOT EXISTS staging_clusters (
    ds           TEXT    NOT NULL,
    load_id      TEXT    NOT NULL,
    cluster_id   TEXT    NOT NULL,
    cluster_size INTEGER NOT NULL,
    quality      REAL    NOT NULL,
    iteration    INTEGER NOT NULL,
    PRIMARY KEY (ds, cluster_id)
);

CREATE TABLE IF NOT EXISTS published_records (
    ds            TEXT    NOT NULL,
    load_id       TEXT    NOT NULL,
    record_id     TEXT    NOT NULL,
    source        TEXT    NOT NULL,
    truth_entity  TEXT,
    given_name    TEXT,
    surname       TEXT,
    street_number TEXT,
    address_1     TEXT,
    address_2     TEXT,
    suburb        TEXT,
    postcode      TEXT,
    state         TEXT,
    date_of_birth TEXT,
    soc_sec_id    TEXT,
    source_file   TEXT,
    line_number   INTEGER,
    PRIMARY KEY (ds, source, record_id)
);

CREATE TABLE IF NOT EXISTS published_links (
    ds           TEXT    NOT NULL,
    load_id      TEXT    NOT NULL,
    record_id    TEXT    NOT NULL,
    cluster_id   TEXT    NOT NULL,
    iteration    INTEGER NOT NULL,
    mu           REAL,
    quality      REAL    NOT NULL,
    cluster_size INTEGER NOT NULL,
    PRIMARY KEY (ds, record_id)
);
CREATE INDEX IF NOT EXISTS ix_published_links_cluster ON published_links (ds, cluster_id);

CREATE TABLE IF NOT EXISTS published_clusters (
    ds           TEXT    NOT NULL,
    load_id      TEXT    NOT NULL,
    cluster_id   TEXT    NOT NULL,
    cluster_size INTEGER NOT NULL,
    quality      REAL    NOT NULL,
    iteration    INTEGER NOT NULL,
    PRIMARY KEY (ds, cluster_id)
);

CREATE TABLE IF NOT EXISTS publish_log (
    ds           TEXT NOT NULL,
    load_id      TEXT NOT NULL,
    published_at TEXT NOT NULL,
    records      INTEGER NOT NULL,
    links        INTEGER NOT NULL,
    clusters     INTEGER NOT NULL,
    PRIMARY KEY (ds, load_id)
);
