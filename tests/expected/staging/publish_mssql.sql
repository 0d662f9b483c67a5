-- load_ids  params={'ds': '2025-01-01'}
SELECT DISTINCT load_id FROM [washline].[staging_records] WHERE ds = %(ds)s;

-- other_load_ids:staging_records  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM [washline].[staging_records] WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_records  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_records] WHERE ds = %(ds)s;

-- other_load_ids:staging_links  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM [washline].[staging_links] WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_links  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_links] WHERE ds = %(ds)s;

-- other_load_ids:staging_clusters  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM [washline].[staging_clusters] WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_clusters  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_clusters] WHERE ds = %(ds)s;

-- delete:published_records  params={'ds': '2025-01-01'}
DELETE FROM [washline].[published_records] WHERE ds = %(ds)s;

-- insert:published_records  params={'ds': '2025-01-01'}
INSERT INTO [washline].[published_records] ([ds], [load_id], [record_id], [source], [truth_entity], [given_name], [surname], [street_number], [address_1], [address_2], [suburb], [postcode], [state], [date_of_birth], [soc_sec_id], [source_file], [line_number]) SELECT [ds], [load_id], [record_id], [source], [truth_entity], [given_name], [surname], [street_number], [address_1], [address_2], [suburb], [postcode], [state], [date_of_birth], [soc_sec_id], [source_file], [line_number] FROM [washline].[staging_records] WHERE ds = %(ds)s;

-- count:published_records  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[published_records] WHERE ds = %(ds)s;

-- delete:published_links  params={'ds': '2025-01-01'}
DELETE FROM [washline].[published_links] WHERE ds = %(ds)s;

-- insert:published_links  params={'ds': '2025-01-01'}
INSERT INTO [washline].[published_links] ([ds], [load_id], [record_id], [source], [cluster_id], [iteration], [mu], [quality], [cluster_size]) SELECT [ds], [load_id], [record_id], [source], [cluster_id], [iteration], [mu], [quality], [cluster_size] FROM [washline].[staging_links] WHERE ds = %(ds)s;

-- count:published_links  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[published_links] WHERE ds = %(ds)s;

-- delete:published_clusters  params={'ds': '2025-01-01'}
DELETE FROM [washline].[published_clusters] WHERE ds = %(ds)s;

-- insert:published_clusters  params={'ds': '2025-01-01'}
INSERT INTO [washline].[published_clusters] ([ds], [load_id], [cluster_id], [cluster_size], [quality], [iteration]) SELECT [ds], [load_id], [cluster_id], [cluster_size], [quality], [iteration] FROM [washline].[staging_clusters] WHERE ds = %(ds)s;

-- count:published_clusters  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[published_clusters] WHERE ds = %(ds)s;

-- delete:publish_log  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
DELETE FROM [washline].[publish_log] WHERE ds = %(ds)s AND load_id = %(load_id)s;

-- insert:publish_log  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00', 'published_at': '2025-01-02T03:04:05.123456', 'records': 1, 'links': 1, 'clusters': 1}
INSERT INTO [washline].[publish_log] (ds, load_id, published_at, records, links, clusters) VALUES (%(ds)s, %(load_id)s, %(published_at)s, %(records)s, %(links)s, %(clusters)s);
