-- washline staging and published tables for postgres (idempotent: safe to run again).
-- GENERATED from src/washline/staging/spec.py by `python -m washline.staging.spec --write`;
-- edit the spec, not this file. {schema} is replaced by the quoted schema and a dot, or by nothing.
-- One logical date (ds, 'YYYY-MM-DD') is one replaceable slice of every staging table; load_id names
-- the load. entity_members and entities hold the whole published registry state (upserted by the night's
-- delta, or replaced by the merged version; entity_registry_state names the version they hold).

CREATE TABLE IF NOT EXISTS {schema}staging_records (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	record_id VARCHAR(128) NOT NULL,
	source VARCHAR(64) NOT NULL,
	truth_entity VARCHAR(128),
	given_name VARCHAR(200),
	surname VARCHAR(200),
	street_number VARCHAR(50),
	address_1 VARCHAR(300),
	address_2 VARCHAR(300),
	suburb VARCHAR(200),
	postcode VARCHAR(16),
	state VARCHAR(64),
	date_of_birth DATE,
	soc_sec_id VARCHAR(64),
	source_file VARCHAR(1024),
	line_number BIGINT,
	CONSTRAINT pk_staging_records PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_staging_records_rid ON {schema}staging_records (ds, record_id);

CREATE TABLE IF NOT EXISTS {schema}staging_links (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	record_id VARCHAR(128) NOT NULL,
	source VARCHAR(64) NOT NULL,
	cluster_id VARCHAR(128) NOT NULL,
	iteration INTEGER NOT NULL,
	mu DOUBLE PRECISION,
	quality DOUBLE PRECISION NOT NULL,
	cluster_size INTEGER NOT NULL,
	CONSTRAINT pk_staging_links PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_staging_links_cluster ON {schema}staging_links (ds, cluster_id);

CREATE TABLE IF NOT EXISTS {schema}staging_clusters (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	cluster_id VARCHAR(128) NOT NULL,
	cluster_size INTEGER NOT NULL,
	quality DOUBLE PRECISION NOT NULL,
	iteration INTEGER NOT NULL,
	CONSTRAINT pk_staging_clusters PRIMARY KEY (ds, cluster_id)
);

CREATE TABLE IF NOT EXISTS {schema}published_records (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	record_id VARCHAR(128) NOT NULL,
	source VARCHAR(64) NOT NULL,
	truth_entity VARCHAR(128),
	given_name VARCHAR(200),
	surname VARCHAR(200),
	street_number VARCHAR(50),
	address_1 VARCHAR(300),
	address_2 VARCHAR(300),
	suburb VARCHAR(200),
	postcode VARCHAR(16),
	state VARCHAR(64),
	date_of_birth DATE,
	soc_sec_id VARCHAR(64),
	source_file VARCHAR(1024),
	line_number BIGINT,
	CONSTRAINT pk_published_records PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_published_records_rid ON {schema}published_records (ds, record_id);

CREATE TABLE IF NOT EXISTS {schema}published_links (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	record_id VARCHAR(128) NOT NULL,
	source VARCHAR(64) NOT NULL,
	cluster_id VARCHAR(128) NOT NULL,
	iteration INTEGER NOT NULL,
	mu DOUBLE PRECISION,
	quality DOUBLE PRECISION NOT NULL,
	cluster_size INTEGER NOT NULL,
	CONSTRAINT pk_published_links PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_published_links_cluster ON {schema}published_links (ds, cluster_id);

CREATE TABLE IF NOT EXISTS {schema}published_clusters (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	cluster_id VARCHAR(128) NOT NULL,
	cluster_size INTEGER NOT NULL,
	quality DOUBLE PRECISION NOT NULL,
	iteration INTEGER NOT NULL,
	CONSTRAINT pk_published_clusters PRIMARY KEY (ds, cluster_id)
);

CREATE TABLE IF NOT EXISTS {schema}publish_log (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	published_at TIMESTAMP WITH TIME ZONE NOT NULL,
	records BIGINT NOT NULL,
	links BIGINT NOT NULL,
	clusters BIGINT NOT NULL,
	CONSTRAINT pk_publish_log PRIMARY KEY (ds, load_id)
);

CREATE TABLE IF NOT EXISTS {schema}staging_entity_members (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	source VARCHAR(64) NOT NULL,
	record_id VARCHAR(128) NOT NULL,
	entity_id VARCHAR(32) NOT NULL,
	first_seen_ds VARCHAR(10) NOT NULL,
	last_changed_ds VARCHAR(10) NOT NULL,
	CONSTRAINT pk_staging_entity_members PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_staging_entity_members_entity ON {schema}staging_entity_members (ds, entity_id);

CREATE TABLE IF NOT EXISTS {schema}staging_entities (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	entity_id VARCHAR(32) NOT NULL,
	member_count BIGINT NOT NULL,
	first_seen_ds VARCHAR(10) NOT NULL,
	last_changed_ds VARCHAR(10) NOT NULL,
	golden_record VARCHAR(4000),
	removed INTEGER NOT NULL,
	CONSTRAINT pk_staging_entities PRIMARY KEY (ds, entity_id)
);

CREATE TABLE IF NOT EXISTS {schema}staging_entity_changes (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	entity_id VARCHAR(32) NOT NULL,
	change VARCHAR(8) NOT NULL,
	from_entity_ids VARCHAR(4000),
	member_count BIGINT NOT NULL,
	CONSTRAINT pk_staging_entity_changes PRIMARY KEY (ds, entity_id, change)
);

CREATE TABLE IF NOT EXISTS {schema}staging_entity_versions (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	base_ds VARCHAR(10),
	publish_mode VARCHAR(16) NOT NULL,
	reason VARCHAR(500),
	held_ds VARCHAR(10),
	references_total BIGINT NOT NULL,
	entities_total BIGINT NOT NULL,
	CONSTRAINT pk_staging_entity_versions PRIMARY KEY (ds)
);

CREATE TABLE IF NOT EXISTS {schema}entity_registry_state (
	ds VARCHAR(10) NOT NULL,
	load_id VARCHAR(250) NOT NULL,
	base_ds VARCHAR(10),
	publish_mode VARCHAR(16) NOT NULL,
	reason VARCHAR(500),
	held_ds VARCHAR(10),
	references_total BIGINT NOT NULL,
	entities_total BIGINT NOT NULL,
	published_at TIMESTAMP WITH TIME ZONE NOT NULL,
	CONSTRAINT pk_entity_registry_state PRIMARY KEY (ds)
);

CREATE TABLE IF NOT EXISTS {schema}entity_members (
	source VARCHAR(64) NOT NULL,
	record_id VARCHAR(128) NOT NULL,
	entity_id VARCHAR(32) NOT NULL,
	first_seen_ds VARCHAR(10) NOT NULL,
	last_changed_ds VARCHAR(10) NOT NULL,
	CONSTRAINT pk_entity_members PRIMARY KEY (source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_entity_members_entity ON {schema}entity_members (entity_id);

CREATE TABLE IF NOT EXISTS {schema}entities (
	entity_id VARCHAR(32) NOT NULL,
	member_count BIGINT NOT NULL,
	first_seen_ds VARCHAR(10) NOT NULL,
	last_changed_ds VARCHAR(10) NOT NULL,
	golden_record VARCHAR(4000),
	CONSTRAINT pk_entities PRIMARY KEY (entity_id)
);

CREATE TABLE IF NOT EXISTS {schema}entity_changes (
	ds VARCHAR(10) NOT NULL,
	entity_id VARCHAR(32) NOT NULL,
	change VARCHAR(8) NOT NULL,
	from_entity_ids VARCHAR(4000),
	member_count BIGINT NOT NULL,
	CONSTRAINT pk_entity_changes PRIMARY KEY (ds, entity_id, change)
);
