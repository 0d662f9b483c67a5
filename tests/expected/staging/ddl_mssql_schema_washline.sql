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
	cluster_id NVARCHAR(128) NOT NULL,
	iteration INTEGER NOT NULL,
	mu FLOAT(53) NULL,
	quality FLOAT(53) NOT NULL,
	cluster_size INTEGER NOT NULL,
	CONSTRAINT pk_staging_links PRIMARY KEY (ds, record_id)
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
	cluster_id NVARCHAR(128) NOT NULL,
	iteration INTEGER NOT NULL,
	mu FLOAT(53) NULL,
	quality FLOAT(53) NOT NULL,
	cluster_size INTEGER NOT NULL,
	CONSTRAINT pk_published_links PRIMARY KEY (ds, record_id)
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
