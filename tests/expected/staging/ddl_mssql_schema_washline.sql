IF OBJECT_ID(N'[washline].staging_records', N'U') IS NULL
CREATE TABLE [washline].staging_records (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	record_id NVARCHAR(128) NOT NULL,
	source NVARCHAR(64) NOT NULL,
	truth_entity NVARCHAR(128) NULL,
	given_name NVARCHAR(200) NULL,
	surname NVARCHAR(200) NULL,
	street_number NVARCHAR(50) NULL,
	address_1 NVARCHAR(300) NULL,
	address_2 NVARCHAR(300) NULL,
	suburb NVARCHAR(200) NULL,
	postcode NVARCHAR(16) NULL,
	state NVARCHAR(64) NULL,
	date_of_birth DATE NULL,
	soc_sec_id NVARCHAR(64) NULL,
	source_file NVARCHAR(1024) NULL,
	line_number BIGINT NULL,
	CONSTRAINT pk_staging_records PRIMARY KEY (ds, source, record_id)
);
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'ix_staging_records_rid' AND object_id = OBJECT_ID(N'[washline].staging_records'))
CREATE INDEX ix_staging_records_rid ON [washline].staging_records (ds, record_id);
IF OBJECT_ID(N'[washline].staging_links', N'U') IS NULL
CREATE TABLE [washline].staging_links (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	record_id NVARCHAR(128) NOT NULL,
	source NVARCHAR(64) NOT NULL,
	cluster_id NVARCHAR(128) NOT NULL,
	iteration INTEGER NOT NULL,
	mu FLOAT(53) NULL,
	quality FLOAT(53) NOT NULL,
	cluster_size INTEGER NOT NULL,
	CONSTRAINT pk_staging_links PRIMARY KEY (ds, source, record_id)
);
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'ix_staging_links_cluster' AND object_id = OBJECT_ID(N'[washline].staging_links'))
CREATE INDEX ix_staging_links_cluster ON [washline].staging_links (ds, cluster_id);
IF OBJECT_ID(N'[washline].staging_clusters', N'U') IS NULL
CREATE TABLE [washline].staging_clusters (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	cluster_id NVARCHAR(128) NOT NULL,
	cluster_size INTEGER NOT NULL,
	quality FLOAT(53) NOT NULL,
	iteration INTEGER NOT NULL,
	CONSTRAINT pk_staging_clusters PRIMARY KEY (ds, cluster_id)
);
IF OBJECT_ID(N'[washline].published_records', N'U') IS NULL
CREATE TABLE [washline].published_records (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	record_id NVARCHAR(128) NOT NULL,
	source NVARCHAR(64) NOT NULL,
	truth_entity NVARCHAR(128) NULL,
	given_name NVARCHAR(200) NULL,
	surname NVARCHAR(200) NULL,
	street_number NVARCHAR(50) NULL,
	address_1 NVARCHAR(300) NULL,
	address_2 NVARCHAR(300) NULL,
	suburb NVARCHAR(200) NULL,
	postcode NVARCHAR(16) NULL,
	state NVARCHAR(64) NULL,
	date_of_birth DATE NULL,
	soc_sec_id NVARCHAR(64) NULL,
	source_file NVARCHAR(1024) NULL,
	line_number BIGINT NULL,
	CONSTRAINT pk_published_records PRIMARY KEY (ds, source, record_id)
);
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'ix_published_records_rid' AND object_id = OBJECT_ID(N'[washline].published_records'))
CREATE INDEX ix_published_records_rid ON [washline].published_records (ds, record_id);
IF OBJECT_ID(N'[washline].published_links', N'U') IS NULL
CREATE TABLE [washline].published_links (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	record_id NVARCHAR(128) NOT NULL,
	source NVARCHAR(64) NOT NULL,
	cluster_id NVARCHAR(128) NOT NULL,
	iteration INTEGER NOT NULL,
	mu FLOAT(53) NULL,
	quality FLOAT(53) NOT NULL,
	cluster_size INTEGER NOT NULL,
	CONSTRAINT pk_published_links PRIMARY KEY (ds, source, record_id)
);
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'ix_published_links_cluster' AND object_id = OBJECT_ID(N'[washline].published_links'))
CREATE INDEX ix_published_links_cluster ON [washline].published_links (ds, cluster_id);
IF OBJECT_ID(N'[washline].published_clusters', N'U') IS NULL
CREATE TABLE [washline].published_clusters (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	cluster_id NVARCHAR(128) NOT NULL,
	cluster_size INTEGER NOT NULL,
	quality FLOAT(53) NOT NULL,
	iteration INTEGER NOT NULL,
	CONSTRAINT pk_published_clusters PRIMARY KEY (ds, cluster_id)
);
IF OBJECT_ID(N'[washline].publish_log', N'U') IS NULL
CREATE TABLE [washline].publish_log (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	published_at DATETIME2(6) NOT NULL,
	records BIGINT NOT NULL,
	links BIGINT NOT NULL,
	clusters BIGINT NOT NULL,
	CONSTRAINT pk_publish_log PRIMARY KEY (ds, load_id)
);
IF OBJECT_ID(N'[washline].staging_entity_members', N'U') IS NULL
CREATE TABLE [washline].staging_entity_members (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	source NVARCHAR(64) NOT NULL,
	record_id NVARCHAR(128) NOT NULL,
	entity_id NVARCHAR(32) NOT NULL,
	first_seen_ds NVARCHAR(10) NOT NULL,
	last_changed_ds NVARCHAR(10) NOT NULL,
	CONSTRAINT pk_staging_entity_members PRIMARY KEY (ds, source, record_id)
);
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'ix_staging_entity_members_entity' AND object_id = OBJECT_ID(N'[washline].staging_entity_members'))
CREATE INDEX ix_staging_entity_members_entity ON [washline].staging_entity_members (ds, entity_id);
IF OBJECT_ID(N'[washline].staging_entities', N'U') IS NULL
CREATE TABLE [washline].staging_entities (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	entity_id NVARCHAR(32) NOT NULL,
	member_count BIGINT NOT NULL,
	first_seen_ds NVARCHAR(10) NOT NULL,
	last_changed_ds NVARCHAR(10) NOT NULL,
	golden_record NVARCHAR(4000) NULL,
	removed INTEGER NOT NULL,
	CONSTRAINT pk_staging_entities PRIMARY KEY (ds, entity_id)
);
IF OBJECT_ID(N'[washline].staging_entity_changes', N'U') IS NULL
CREATE TABLE [washline].staging_entity_changes (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	entity_id NVARCHAR(32) NOT NULL,
	change NVARCHAR(8) NOT NULL,
	from_entity_ids NVARCHAR(4000) NULL,
	member_count BIGINT NOT NULL,
	CONSTRAINT pk_staging_entity_changes PRIMARY KEY (ds, entity_id, change)
);
IF OBJECT_ID(N'[washline].staging_entity_versions', N'U') IS NULL
CREATE TABLE [washline].staging_entity_versions (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	base_ds NVARCHAR(10) NULL,
	publish_mode NVARCHAR(16) NOT NULL,
	reason NVARCHAR(500) NULL,
	held_ds NVARCHAR(10) NULL,
	references_total BIGINT NOT NULL,
	entities_total BIGINT NOT NULL,
	CONSTRAINT pk_staging_entity_versions PRIMARY KEY (ds)
);
IF OBJECT_ID(N'[washline].entity_registry_state', N'U') IS NULL
CREATE TABLE [washline].entity_registry_state (
	ds NVARCHAR(10) NOT NULL,
	load_id NVARCHAR(250) NOT NULL,
	base_ds NVARCHAR(10) NULL,
	publish_mode NVARCHAR(16) NOT NULL,
	reason NVARCHAR(500) NULL,
	held_ds NVARCHAR(10) NULL,
	references_total BIGINT NOT NULL,
	entities_total BIGINT NOT NULL,
	published_at DATETIME2(6) NOT NULL,
	CONSTRAINT pk_entity_registry_state PRIMARY KEY (ds)
);
IF OBJECT_ID(N'[washline].entity_members', N'U') IS NULL
CREATE TABLE [washline].entity_members (
	source NVARCHAR(64) NOT NULL,
	record_id NVARCHAR(128) NOT NULL,
	entity_id NVARCHAR(32) NOT NULL,
	first_seen_ds NVARCHAR(10) NOT NULL,
	last_changed_ds NVARCHAR(10) NOT NULL,
	CONSTRAINT pk_entity_members PRIMARY KEY (source, record_id)
);
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'ix_entity_members_entity' AND object_id = OBJECT_ID(N'[washline].entity_members'))
CREATE INDEX ix_entity_members_entity ON [washline].entity_members (entity_id);
IF OBJECT_ID(N'[washline].entities', N'U') IS NULL
CREATE TABLE [washline].entities (
	entity_id NVARCHAR(32) NOT NULL,
	member_count BIGINT NOT NULL,
	first_seen_ds NVARCHAR(10) NOT NULL,
	last_changed_ds NVARCHAR(10) NOT NULL,
	golden_record NVARCHAR(4000) NULL,
	CONSTRAINT pk_entities PRIMARY KEY (entity_id)
);
IF OBJECT_ID(N'[washline].entity_changes', N'U') IS NULL
CREATE TABLE [washline].entity_changes (
	ds NVARCHAR(10) NOT NULL,
	entity_id NVARCHAR(32) NOT NULL,
	change NVARCHAR(8) NOT NULL,
	from_entity_ids NVARCHAR(4000) NULL,
	member_count BIGINT NOT NULL,
	CONSTRAINT pk_entity_changes PRIMARY KEY (ds, entity_id, change)
);
