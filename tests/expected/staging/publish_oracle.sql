-- load_ids  params={'ds': '2025-01-01'}
SELECT DISTINCT load_id FROM "WASHLINE"."STAGING_RECORDS" WHERE ds = :ds;

-- other_load_ids:staging_records  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_RECORDS" WHERE ds = :ds AND load_id <> :load_id;

-- staged:staging_records  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_RECORDS" WHERE ds = :ds;

-- other_load_ids:staging_links  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_LINKS" WHERE ds = :ds AND load_id <> :load_id;

-- staged:staging_links  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_LINKS" WHERE ds = :ds;

-- other_load_ids:staging_clusters  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_CLUSTERS" WHERE ds = :ds AND load_id <> :load_id;

-- staged:staging_clusters  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_CLUSTERS" WHERE ds = :ds;

-- delete:published_records  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."PUBLISHED_RECORDS" WHERE ds = :ds;

-- insert:published_records  params={'ds': '2025-01-01'}
INSERT INTO "WASHLINE"."PUBLISHED_RECORDS" ("DS", "LOAD_ID", "RECORD_ID", "SOURCE", "TRUTH_ENTITY", "GIVEN_NAME", "SURNAME", "STREET_NUMBER", "ADDRESS_1", "ADDRESS_2", "SUBURB", "POSTCODE", "STATE", "DATE_OF_BIRTH", "SOC_SEC_ID", "SOURCE_FILE", "LINE_NUMBER") SELECT "DS", "LOAD_ID", "RECORD_ID", "SOURCE", "TRUTH_ENTITY", "GIVEN_NAME", "SURNAME", "STREET_NUMBER", "ADDRESS_1", "ADDRESS_2", "SUBURB", "POSTCODE", "STATE", "DATE_OF_BIRTH", "SOC_SEC_ID", "SOURCE_FILE", "LINE_NUMBER" FROM "WASHLINE"."STAGING_RECORDS" WHERE ds = :ds;

-- count:published_records  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."PUBLISHED_RECORDS" WHERE ds = :ds;

-- delete:published_links  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."PUBLISHED_LINKS" WHERE ds = :ds;

-- insert:published_links  params={'ds': '2025-01-01'}
INSERT INTO "WASHLINE"."PUBLISHED_LINKS" ("DS", "LOAD_ID", "RECORD_ID", "SOURCE", "CLUSTER_ID", "ITERATION", "MU", "QUALITY", "CLUSTER_SIZE") SELECT "DS", "LOAD_ID", "RECORD_ID", "SOURCE", "CLUSTER_ID", "ITERATION", "MU", "QUALITY", "CLUSTER_SIZE" FROM "WASHLINE"."STAGING_LINKS" WHERE ds = :ds;

-- count:published_links  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."PUBLISHED_LINKS" WHERE ds = :ds;

-- delete:published_clusters  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."PUBLISHED_CLUSTERS" WHERE ds = :ds;

-- insert:published_clusters  params={'ds': '2025-01-01'}
INSERT INTO "WASHLINE"."PUBLISHED_CLUSTERS" ("DS", "LOAD_ID", "CLUSTER_ID", "CLUSTER_SIZE", "QUALITY", "ITERATION") SELECT "DS", "LOAD_ID", "CLUSTER_ID", "CLUSTER_SIZE", "QUALITY", "ITERATION" FROM "WASHLINE"."STAGING_CLUSTERS" WHERE ds = :ds;

-- count:published_clusters  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."PUBLISHED_CLUSTERS" WHERE ds = :ds;

-- delete:publish_log  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
DELETE FROM "WASHLINE"."PUBLISH_LOG" WHERE ds = :ds AND load_id = :load_id;

-- insert:publish_log  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00', 'published_at': '2025-01-02T03:04:05.123456', 'records': 1, 'links': 1, 'clusters': 1}
INSERT INTO "WASHLINE"."PUBLISH_LOG" (ds, load_id, published_at, records, links, clusters) VALUES (:ds, :load_id, :published_at, :records, :links, :clusters);
