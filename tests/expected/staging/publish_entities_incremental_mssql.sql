-- version  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT [base_ds], [publish_mode], [reason], [held_ds], [references_total], [entities_total] FROM [washline].[staging_entity_versions] WHERE ds = %(ds)s AND load_id = %(load_id)s;

-- held  params={}
SELECT ds, references_total, entities_total FROM [washline].[entity_registry_state];

-- other_load_ids:staging_entity_members  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM [washline].[staging_entity_members] WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_entity_members  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_entity_members] WHERE ds = %(ds)s;

-- other_load_ids:staging_entities  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM [washline].[staging_entities] WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_entities  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_entities] WHERE ds = %(ds)s;

-- other_load_ids:staging_entity_changes  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM [washline].[staging_entity_changes] WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_entity_changes  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_entity_changes] WHERE ds = %(ds)s;

-- new:entity_members  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_entity_members] s WHERE s.ds = %(ds)s AND NOT EXISTS (SELECT 1 FROM [washline].[entity_members] p WHERE p.source = s.source AND p.record_id = s.record_id);

-- upsert:entity_members  params={'ds': '2025-01-01'}
MERGE INTO [washline].[entity_members] WITH (HOLDLOCK) AS tgt USING (SELECT [source], [record_id], [entity_id], [first_seen_ds], [last_changed_ds] FROM [washline].[staging_entity_members] WHERE ds = %(ds)s) AS src ON (tgt.[source] = src.[source] AND tgt.[record_id] = src.[record_id]) WHEN MATCHED THEN UPDATE SET tgt.[entity_id] = src.[entity_id], tgt.[first_seen_ds] = src.[first_seen_ds], tgt.[last_changed_ds] = src.[last_changed_ds] WHEN NOT MATCHED BY TARGET THEN INSERT ([source], [record_id], [entity_id], [first_seen_ds], [last_changed_ds]) VALUES (src.[source], src.[record_id], src.[entity_id], src.[first_seen_ds], src.[last_changed_ds]);;

-- new:entities  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_entities] s WHERE s.ds = %(ds)s AND s.removed = 0 AND NOT EXISTS (SELECT 1 FROM [washline].[entities] p WHERE p.entity_id = s.entity_id);

-- removed:entities  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[staging_entities] s WHERE s.ds = %(ds)s AND s.removed = 1 AND EXISTS (SELECT 1 FROM [washline].[entities] p WHERE p.entity_id = s.entity_id);

-- upsert:entities  params={'ds': '2025-01-01'}
MERGE INTO [washline].[entities] WITH (HOLDLOCK) AS tgt USING (SELECT [entity_id], [member_count], [first_seen_ds], [last_changed_ds], [golden_record] FROM [washline].[staging_entities] WHERE ds = %(ds)s AND removed = 0) AS src ON (tgt.[entity_id] = src.[entity_id]) WHEN MATCHED THEN UPDATE SET tgt.[member_count] = src.[member_count], tgt.[first_seen_ds] = src.[first_seen_ds], tgt.[last_changed_ds] = src.[last_changed_ds], tgt.[golden_record] = src.[golden_record] WHEN NOT MATCHED BY TARGET THEN INSERT ([entity_id], [member_count], [first_seen_ds], [last_changed_ds], [golden_record]) VALUES (src.[entity_id], src.[member_count], src.[first_seen_ds], src.[last_changed_ds], src.[golden_record]);;

-- delete_removed:entities  params={'ds': '2025-01-01'}
DELETE FROM [washline].[entities] WHERE entity_id IN (SELECT entity_id FROM [washline].[staging_entities] WHERE ds = %(ds)s AND removed = 1);

-- delete:entity_changes  params={'ds': '2025-01-01'}
DELETE FROM [washline].[entity_changes] WHERE ds = %(ds)s;

-- insert:entity_changes  params={'ds': '2025-01-01'}
INSERT INTO [washline].[entity_changes] ([ds], [entity_id], [change], [from_entity_ids], [member_count]) SELECT [ds], [entity_id], [change], [from_entity_ids], [member_count] FROM [washline].[staging_entity_changes] WHERE ds = %(ds)s;

-- count:entity_changes  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM [washline].[entity_changes] WHERE ds = %(ds)s;

-- delete:entity_registry_state  params={}
DELETE FROM [washline].[entity_registry_state];

-- insert:entity_registry_state  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00', 'published_at': '2025-01-02T03:04:05.123456'}
INSERT INTO [washline].[entity_registry_state] ([base_ds], [publish_mode], [reason], [held_ds], [references_total], [entities_total], [ds], [load_id], [published_at]) SELECT [base_ds], [publish_mode], [reason], [held_ds], [references_total], [entities_total], [ds], [load_id], %(published_at)s FROM [washline].[staging_entity_versions] WHERE ds = %(ds)s AND load_id = %(load_id)s;

-- prune:staging_entity_members  params={'ds': '2025-01-01'}
DELETE FROM [washline].[staging_entity_members] WHERE ds < %(ds)s;

-- prune:staging_entities  params={'ds': '2025-01-01'}
DELETE FROM [washline].[staging_entities] WHERE ds < %(ds)s;

-- prune:staging_entity_versions  params={'ds': '2025-01-01'}
DELETE FROM [washline].[staging_entity_versions] WHERE ds < %(ds)s;
