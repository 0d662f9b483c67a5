-- washline staging and published tables for PostgreSQL (idempotent).
-- One logical date (ds, 'YYYY-MM-DD') is one replaceable slice of every table.
-- Text is TEXT (no length trap), dates DATE, timestamps TIMESTAMPTZ.

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
    date_of_birth DATE,
    soc_sec_id    TEXT,
    source_file   TEXT,
    line_number   BIGINT,
    PRIMARY KEY (ds, source, record_id)
);

CREATE TABLE IF NOT EXISTS staging_links (
    ds           TEXT    NOT NULL,
    load_id      TEXT    NOT NULL,
    record_id    TEXT    NOT NULL,
    cluster_id   TEXT    NOT NULL,
    iteration    BIGINT NOT NULL,
    mu           DOUBLE PRECISION,
    quality      DOUBLE PRECISION    NOT NULL,
    cluster_size BIGINT NOT NULL,
    PRIMARY KEY (ds, record_id)
);
CREATE INDEX IF NOT EXISTS ix_staging_links_cluster ON staging_links (ds, cluster_id);

CREATE TABLE IF NOT EXISTS staging_clusters (
    ds           TEXT    NOT NULL,
    load_id      TEXT    NOT NULL,
    cluster_id   TEXT    NOT NULL,
    cluster_size BIGINT NOT NULL,
    quality      DOUBLE PRECISION    NOT NULL,
    iteration    BIGINT NOT NULL,
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
    date_of_birth DATE,
    soc_sec_id    TEXT,
    source_file   TEXT,
    line_number   BIGINT,
    PRIMARY KEY (ds, source, record_id)
);

CREATE TABLE IF NOT EXISTS published_links (
    ds           TEXT    NOT NULL,
    load_id      TEXT    NOT NULL,
    record_id    TEXT    NOT NULL,
    cluster_id   TEXT    NOT NULL,
    iteration    BIGINT NOT NULL,
    mu           DOUBLE PRECISION,
    quality      DOUBLE PRECISION    NOT NULL,
    cluster_size BIGINT NOT NULL,
    PRIMARY KEY (ds, record_id)
);
CREATE INDEX IF NOT EXISTS ix_published_links_cluster ON published_links (ds, cluster_id);

CREATE TABLE IF NOT EXISTS published_clusters (
    ds           TEXT    NOT NULL,
    load_id      TEXT    NOT NULL,
    cluster_id   TEXT    NOT NULL,
    cluster_size BIGINT NOT NULL,
    quality      DOUBLE PRECISION    NOT NULL,
    iteration    BIGINT NOT NULL,
    PRIMARY KEY (ds, cluster_id)
);

CREATE TABLE IF NOT EXISTS publish_log (
    ds           TEXT NOT NULL,
    load_id      TEXT NOT NULL,
    published_at TIMESTAMPTZ NOT NULL,
    records      BIGINT NOT NULL,
    links        BIGINT NOT NULL,
    clusters     BIGINT NOT NULL,
    PRIMARY KEY (ds, load_id)
);
