-- washline staging and published tables for sqlite (idempotent: safe to run again).
-- GENERATED from src/washline/staging/spec.py by `python -m washline.staging.spec --write`;
-- edit the spec, not this file. {schema} is replaced by the quoted schema and a dot, or by nothing.
-- One logical date (ds, 'YYYY-MM-DD') is one replaceable slice of every staging table; load_id names
-- the load. entity_members and entities hold the whole published registry state (upserted by the night's
-- delta, or replaced by the merged version; entity_registry_state names the version they hold).

CREATE TABLE IF NOT EXISTS {schema}staging_records (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	record_id TEXT NOT NULL,
	source TEXT NOT NULL,
	truth_entity TEXT,
	given_name TEXT,
	surname TEXT,
	street_number TEXT,
	address_1 TEXT,
	address_2 TEXT,
	suburb TEXT,
	postcode TEXT,
	state TEXT,
	date_of_birth TEXT,
	soc_sec_id TEXT,
	source_file TEXT,
	line_number INTEGER,
	CONSTRAINT pk_staging_records PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_staging_records_rid ON {schema}staging_records (ds, record_id);

CREATE TABLE IF NOT EXISTS {schema}staging_links (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	record_id TEXT NOT NULL,
	source TEXT NOT NULL,
	cluster_id TEXT NOT NULL,
	iteration INTEGER NOT NULL,
	mu REAL,
	quality REAL NOT NULL,
	cluster_size INTEGER NOT NULL,
	CONSTRAINT pk_staging_links PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_staging_links_cluster ON {schema}staging_links (ds, cluster_id);

CREATE TABLE IF NOT EXISTS {schema}staging_clusters (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	cluster_id TEXT NOT NULL,
	cluster_size INTEGER NOT NULL,
	quality REAL NOT NULL,
	iteration INTEGER NOT NULL,
	CONSTRAINT pk_staging_clusters PRIMARY KEY (ds, cluster_id)
);

CREATE TABLE IF NOT EXISTS {schema}published_records (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	record_id TEXT NOT NULL,
	source TEXT NOT NULL,
	truth_entity TEXT,
	given_name TEXT,
	surname TEXT,
	street_number TEXT,
	address_1 TEXT,
	address_2 TEXT,
	suburb TEXT,
	postcode TEXT,
	state TEXT,
	date_of_birth TEXT,
	soc_sec_id TEXT,
	source_file TEXT,
	line_number INTEGER,
	CONSTRAINT pk_published_records PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_published_records_rid ON {schema}published_records (ds, record_id);

CREATE TABLE IF NOT EXISTS {schema}published_links (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	record_id TEXT NOT NULL,
	source TEXT NOT NULL,
	cluster_id TEXT NOT NULL,
	iteration INTEGER NOT NULL,
	mu REAL,
	quality REAL NOT NULL,
	cluster_size INTEGER NOT NULL,
	CONSTRAINT pk_published_links PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_published_links_cluster ON {schema}published_links (ds, cluster_id);

CREATE TABLE IF NOT EXISTS {schema}published_clusters (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	cluster_id TEXT NOT NULL,
	cluster_size INTEGER NOT NULL,
	quality REAL NOT NULL,
	iteration INTEGER NOT NULL,
	CONSTRAINT pk_published_clusters PRIMARY KEY (ds, cluster_id)
);

CREATE TABLE IF NOT EXISTS {schema}publish_log (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	published_at TEXT NOT NULL,
	records INTEGER NOT NULL,
	links INTEGER NOT NULL,
	clusters INTEGER NOT NULL,
	CONSTRAINT pk_publish_log PRIMARY KEY (ds, load_id)
);

CREATE TABLE IF NOT EXISTS {schema}staging_entity_members (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	source TEXT NOT NULL,
	record_id TEXT NOT NULL,
	entity_id TEXT NOT NULL,
	first_seen_ds TEXT NOT NULL,
	last_changed_ds TEXT NOT NULL,
	CONSTRAINT pk_staging_entity_members PRIMARY KEY (ds, source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_staging_entity_members_entity ON {schema}staging_entity_members (ds, entity_id);

CREATE TABLE IF NOT EXISTS {schema}staging_entities (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	entity_id TEXT NOT NULL,
	member_count INTEGER NOT NULL,
	first_seen_ds TEXT NOT NULL,
	last_changed_ds TEXT NOT NULL,
	golden_record TEXT,
	removed INTEGER NOT NULL,
	CONSTRAINT pk_staging_entities PRIMARY KEY (ds, entity_id)
);

CREATE TABLE IF NOT EXISTS {schema}staging_entity_changes (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	entity_id TEXT NOT NULL,
	change TEXT NOT NULL,
	from_entity_ids TEXT,
	member_count INTEGER NOT NULL,
	CONSTRAINT pk_staging_entity_changes PRIMARY KEY (ds, entity_id, change)
);

CREATE TABLE IF NOT EXISTS {schema}staging_entity_versions (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	base_ds TEXT,
	publish_mode TEXT NOT NULL,
	reason TEXT,
	held_ds TEXT,
	references_total INTEGER NOT NULL,
	entities_total INTEGER NOT NULL,
	CONSTRAINT pk_staging_entity_versions PRIMARY KEY (ds)
);

CREATE TABLE IF NOT EXISTS {schema}entity_registry_state (
	ds TEXT NOT NULL,
	load_id TEXT NOT NULL,
	base_ds TEXT,
	publish_mode TEXT NOT NULL,
	reason TEXT,
	held_ds TEXT,
	references_total INTEGER NOT NULL,
	entities_total INTEGER NOT NULL,
	published_at TEXT NOT NULL,
	CONSTRAINT pk_entity_registry_state PRIMARY KEY (ds)
);

CREATE TABLE IF NOT EXISTS {schema}entity_members (
	source TEXT NOT NULL,
	record_id TEXT NOT NULL,
	entity_id TEXT NOT NULL,
	first_seen_ds TEXT NOT NULL,
	last_changed_ds TEXT NOT NULL,
	CONSTRAINT pk_entity_members PRIMARY KEY (source, record_id)
);
CREATE INDEX IF NOT EXISTS ix_entity_members_entity ON {schema}entity_members (entity_id);

CREATE TABLE IF NOT EXISTS {schema}entities (
	entity_id TEXT NOT NULL,
	member_count INTEGER NOT NULL,
	first_seen_ds TEXT NOT NULL,
	last_changed_ds TEXT NOT NULL,
	golden_record TEXT,
	CONSTRAINT pk_entities PRIMARY KEY (entity_id)
);

CREATE TABLE IF NOT EXISTS {schema}entity_changes (
	ds TEXT NOT NULL,
	entity_id TEXT NOT NULL,
	change TEXT NOT NULL,
	from_entity_ids TEXT,
	member_count INTEGER NOT NULL,
	CONSTRAINT pk_entity_changes PRIMARY KEY (ds, entity_id, change)
);
