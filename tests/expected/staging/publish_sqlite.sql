-- load_ids  params=('2025-01-01',)
SELECT DISTINCT load_id FROM "staging_records" WHERE ds = ?;

-- other_load_ids:staging_records  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
SELECT COUNT(*) FROM "staging_records" WHERE ds = ? AND load_id <> ?;

-- staged:staging_records  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_records" WHERE ds = ?;

-- other_load_ids:staging_links  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
SELECT COUNT(*) FROM "staging_links" WHERE ds = ? AND load_id <> ?;

-- staged:staging_links  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_links" WHERE ds = ?;

-- other_load_ids:staging_clusters  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
SELECT COUNT(*) FROM "staging_clusters" WHERE ds = ? AND load_id <> ?;

-- staged:staging_clusters  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_clusters" WHERE ds = ?;

-- delete:published_records  params=('2025-01-01',)
DELETE FROM "published_records" WHERE ds = ?;

-- insert:published_records  params=('2025-01-01',)
INSERT INTO "published_records" ("ds", "load_id", "record_id", "source", "truth_entity", "given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode", "state", "date_of_birth", "soc_sec_id", "source_file", "line_number") SELECT "ds", "load_id", "record_id", "source", "truth_entity", "given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode", "state", "date_of_birth", "soc_sec_id", "source_file", "line_number" FROM "staging_records" WHERE ds = ?;

-- count:published_records  params=('2025-01-01',)
SELECT COUNT(*) FROM "published_records" WHERE ds = ?;

-- delete:published_links  params=('2025-01-01',)
DELETE FROM "published_links" WHERE ds = ?;

-- insert:published_links  params=('2025-01-01',)
INSERT INTO "published_links" ("ds", "load_id", "record_id", "source", "cluster_id", "iteration", "mu", "quality", "cluster_size") SELECT "ds", "load_id", "record_id", "source", "cluster_id", "iteration", "mu", "quality", "cluster_size" FROM "staging_links" WHERE ds = ?;

-- count:published_links  params=('2025-01-01',)
SELECT COUNT(*) FROM "published_links" WHERE ds = ?;

-- delete:published_clusters  params=('2025-01-01',)
DELETE FROM "published_clusters" WHERE ds = ?;

-- insert:published_clusters  params=('2025-01-01',)
INSERT INTO "published_clusters" ("ds", "load_id", "cluster_id", "cluster_size", "quality", "iteration") SELECT "ds", "load_id", "cluster_id", "cluster_size", "quality", "iteration" FROM "staging_clusters" WHERE ds = ?;

-- count:published_clusters  params=('2025-01-01',)
SELECT COUNT(*) FROM "published_clusters" WHERE ds = ?;

-- delete:publish_log  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
DELETE FROM "publish_log" WHERE ds = ? AND load_id = ?;

-- insert:publish_log  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00', '2025-01-02T03:04:05.123456', 1, 1, 1)
INSERT INTO "publish_log" (ds, load_id, published_at, records, links, clusters) VALUES (?, ?, ?, ?, ?, ?);
