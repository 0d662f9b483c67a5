-- washline staging and published tables for oracle (idempotent: safe to run again).
-- GENERATED from src/washline/staging/spec.py by `python -m washline.staging.spec --write`;
-- edit the spec, not this file. {schema} is replaced by the quoted schema and a dot, or by nothing.
-- One logical date (ds, 'YYYY-MM-DD') is one replaceable slice of every staging table; load_id names
-- the load. entity_members and entities hold the whole published registry state (upserted by the night's
-- delta, or replaced by the merged version; entity_registry_state names the version they hold).
-- Statements are PL/SQL blocks separated by a line holding only '/'.

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}staging_records (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	record_id VARCHAR2(128 CHAR) NOT NULL,
	source VARCHAR2(64 CHAR) NOT NULL,
	truth_entity VARCHAR2(128 CHAR),
	given_name VARCHAR2(200 CHAR),
	surname VARCHAR2(200 CHAR),
	street_number VARCHAR2(50 CHAR),
	address_1 VARCHAR2(300 CHAR),
	address_2 VARCHAR2(300 CHAR),
	suburb VARCHAR2(200 CHAR),
	postcode VARCHAR2(16 CHAR),
	state VARCHAR2(64 CHAR),
	date_of_birth DATE,
	soc_sec_id VARCHAR2(64 CHAR),
	source_file VARCHAR2(1024 CHAR),
	line_number NUMBER(19),
	CONSTRAINT pk_staging_records PRIMARY KEY (ds, source, record_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/
BEGIN
  EXECUTE IMMEDIATE '
CREATE INDEX ix_staging_records_rid ON {schema}staging_records (ds, record_id)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}staging_links (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	record_id VARCHAR2(128 CHAR) NOT NULL,
	source VARCHAR2(64 CHAR) NOT NULL,
	cluster_id VARCHAR2(128 CHAR) NOT NULL,
	iteration NUMBER(10) NOT NULL,
	mu BINARY_DOUBLE,
	quality BINARY_DOUBLE NOT NULL,
	cluster_size NUMBER(10) NOT NULL,
	CONSTRAINT pk_staging_links PRIMARY KEY (ds, source, record_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/
BEGIN
  EXECUTE IMMEDIATE '
CREATE INDEX ix_staging_links_cluster ON {schema}staging_links (ds, cluster_id)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}staging_clusters (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	cluster_id VARCHAR2(128 CHAR) NOT NULL,
	cluster_size NUMBER(10) NOT NULL,
	quality BINARY_DOUBLE NOT NULL,
	iteration NUMBER(10) NOT NULL,
	CONSTRAINT pk_staging_clusters PRIMARY KEY (ds, cluster_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}published_records (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	record_id VARCHAR2(128 CHAR) NOT NULL,
	source VARCHAR2(64 CHAR) NOT NULL,
	truth_entity VARCHAR2(128 CHAR),
	given_name VARCHAR2(200 CHAR),
	surname VARCHAR2(200 CHAR),
	street_number VARCHAR2(50 CHAR),
	address_1 VARCHAR2(300 CHAR),
	address_2 VARCHAR2(300 CHAR),
	suburb VARCHAR2(200 CHAR),
	postcode VARCHAR2(16 CHAR),
	state VARCHAR2(64 CHAR),
	date_of_birth DATE,
	soc_sec_id VARCHAR2(64 CHAR),
	source_file VARCHAR2(1024 CHAR),
	line_number NUMBER(19),
	CONSTRAINT pk_published_records PRIMARY KEY (ds, source, record_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/
BEGIN
  EXECUTE IMMEDIATE '
CREATE INDEX ix_published_records_rid ON {schema}published_records (ds, record_id)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}published_links (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	record_id VARCHAR2(128 CHAR) NOT NULL,
	source VARCHAR2(64 CHAR) NOT NULL,
	cluster_id VARCHAR2(128 CHAR) NOT NULL,
	iteration NUMBER(10) NOT NULL,
	mu BINARY_DOUBLE,
	quality BINARY_DOUBLE NOT NULL,
	cluster_size NUMBER(10) NOT NULL,
	CONSTRAINT pk_published_links PRIMARY KEY (ds, source, record_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/
BEGIN
  EXECUTE IMMEDIATE '
CREATE INDEX ix_published_links_cluster ON {schema}published_links (ds, cluster_id)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}published_clusters (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	cluster_id VARCHAR2(128 CHAR) NOT NULL,
	cluster_size NUMBER(10) NOT NULL,
	quality BINARY_DOUBLE NOT NULL,
	iteration NUMBER(10) NOT NULL,
	CONSTRAINT pk_published_clusters PRIMARY KEY (ds, cluster_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}publish_log (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	published_at TIMESTAMP NOT NULL,
	records NUMBER(19) NOT NULL,
	links NUMBER(19) NOT NULL,
	clusters NUMBER(19) NOT NULL,
	CONSTRAINT pk_publish_log PRIMARY KEY (ds, load_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}staging_entity_members (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	source VARCHAR2(64 CHAR) NOT NULL,
	record_id VARCHAR2(128 CHAR) NOT NULL,
	entity_id VARCHAR2(32 CHAR) NOT NULL,
	first_seen_ds VARCHAR2(10 CHAR) NOT NULL,
	last_changed_ds VARCHAR2(10 CHAR) NOT NULL,
	CONSTRAINT pk_staging_entity_members PRIMARY KEY (ds, source, record_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/
BEGIN
  EXECUTE IMMEDIATE '
CREATE INDEX ix_staging_entity_members_entity ON {schema}staging_entity_members (ds, entity_id)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}staging_entities (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	entity_id VARCHAR2(32 CHAR) NOT NULL,
	member_count NUMBER(19) NOT NULL,
	first_seen_ds VARCHAR2(10 CHAR) NOT NULL,
	last_changed_ds VARCHAR2(10 CHAR) NOT NULL,
	golden_record VARCHAR2(4000 CHAR),
	removed NUMBER(10) NOT NULL,
	CONSTRAINT pk_staging_entities PRIMARY KEY (ds, entity_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}staging_entity_changes (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	entity_id VARCHAR2(32 CHAR) NOT NULL,
	change VARCHAR2(8 CHAR) NOT NULL,
	from_entity_ids VARCHAR2(4000 CHAR),
	member_count NUMBER(19) NOT NULL,
	CONSTRAINT pk_staging_entity_changes PRIMARY KEY (ds, entity_id, change)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}staging_entity_versions (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	base_ds VARCHAR2(10 CHAR),
	publish_mode VARCHAR2(16 CHAR) NOT NULL,
	reason VARCHAR2(500 CHAR),
	held_ds VARCHAR2(10 CHAR),
	references_total NUMBER(19) NOT NULL,
	entities_total NUMBER(19) NOT NULL,
	CONSTRAINT pk_staging_entity_versions PRIMARY KEY (ds)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}entity_registry_state (
	ds VARCHAR2(10 CHAR) NOT NULL,
	load_id VARCHAR2(250 CHAR) NOT NULL,
	base_ds VARCHAR2(10 CHAR),
	publish_mode VARCHAR2(16 CHAR) NOT NULL,
	reason VARCHAR2(500 CHAR),
	held_ds VARCHAR2(10 CHAR),
	references_total NUMBER(19) NOT NULL,
	entities_total NUMBER(19) NOT NULL,
	published_at TIMESTAMP NOT NULL,
	CONSTRAINT pk_entity_registry_state PRIMARY KEY (ds)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}entity_members (
	source VARCHAR2(64 CHAR) NOT NULL,
	record_id VARCHAR2(128 CHAR) NOT NULL,
	entity_id VARCHAR2(32 CHAR) NOT NULL,
	first_seen_ds VARCHAR2(10 CHAR) NOT NULL,
	last_changed_ds VARCHAR2(10 CHAR) NOT NULL,
	CONSTRAINT pk_entity_members PRIMARY KEY (source, record_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/
BEGIN
  EXECUTE IMMEDIATE '
CREATE INDEX ix_entity_members_entity ON {schema}entity_members (entity_id)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}entities (
	entity_id VARCHAR2(32 CHAR) NOT NULL,
	member_count NUMBER(19) NOT NULL,
	first_seen_ds VARCHAR2(10 CHAR) NOT NULL,
	last_changed_ds VARCHAR2(10 CHAR) NOT NULL,
	golden_record VARCHAR2(4000 CHAR),
	CONSTRAINT pk_entities PRIMARY KEY (entity_id)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/

BEGIN
  EXECUTE IMMEDIATE '
CREATE TABLE {schema}entity_changes (
	ds VARCHAR2(10 CHAR) NOT NULL,
	entity_id VARCHAR2(32 CHAR) NOT NULL,
	change VARCHAR2(8 CHAR) NOT NULL,
	from_entity_ids VARCHAR2(4000 CHAR),
	member_count NUMBER(19) NOT NULL,
	CONSTRAINT pk_entity_changes PRIMARY KEY (ds, entity_id, change)
)';
EXCEPTION
  -- ORA-00955: name is already used by an existing object (created before)
  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;
END;
/
