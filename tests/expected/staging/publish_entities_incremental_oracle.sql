-- version  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT "BASE_DS", "PUBLISH_MODE", "REASON", "HELD_DS", "REFERENCES_TOTAL", "ENTITIES_TOTAL" FROM "WASHLINE"."STAGING_ENTITY_VERSIONS" WHERE ds = :ds AND load_id = :load_id;

-- held  params={}
SELECT ds, references_total, entities_total FROM "WASHLINE"."ENTITY_REGISTRY_STATE";

-- other_load_ids:staging_entity_members  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITY_MEMBERS" WHERE ds = :ds AND load_id <> :load_id;

-- staged:staging_entity_members  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITY_MEMBERS" WHERE ds = :ds;

-- other_load_ids:staging_entities  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITIES" WHERE ds = :ds AND load_id <> :load_id;

-- staged:staging_entities  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITIES" WHERE ds = :ds;

-- other_load_ids:staging_entity_changes  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITY_CHANGES" WHERE ds = :ds AND load_id <> :load_id;

-- staged:staging_entity_changes  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITY_CHANGES" WHERE ds = :ds;

-- new:entity_members  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITY_MEMBERS" s WHERE s.ds = :ds AND NOT EXISTS (SELECT 1 FROM "WASHLINE"."ENTITY_MEMBERS" p WHERE p.source = s.source AND p.record_id = s.record_id);

-- upsert:entity_members  params={'ds': '2025-01-01'}
MERGE INTO "WASHLINE"."ENTITY_MEMBERS" tgt USING (SELECT "SOURCE", "RECORD_ID", "ENTITY_ID", "FIRST_SEEN_DS", "LAST_CHANGED_DS" FROM "WASHLINE"."STAGING_ENTITY_MEMBERS" WHERE ds = :ds) src ON (tgt."SOURCE" = src."SOURCE" AND tgt."RECORD_ID" = src."RECORD_ID") WHEN MATCHED THEN UPDATE SET tgt."ENTITY_ID" = src."ENTITY_ID", tgt."FIRST_SEEN_DS" = src."FIRST_SEEN_DS", tgt."LAST_CHANGED_DS" = src."LAST_CHANGED_DS" WHEN NOT MATCHED THEN INSERT ("SOURCE", "RECORD_ID", "ENTITY_ID", "FIRST_SEEN_DS", "LAST_CHANGED_DS") VALUES (src."SOURCE", src."RECORD_ID", src."ENTITY_ID", src."FIRST_SEEN_DS", src."LAST_CHANGED_DS");

-- new:entities  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITIES" s WHERE s.ds = :ds AND s.removed = 0 AND NOT EXISTS (SELECT 1 FROM "WASHLINE"."ENTITIES" p WHERE p.entity_id = s.entity_id);

-- removed:entities  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."STAGING_ENTITIES" s WHERE s.ds = :ds AND s.removed = 1 AND EXISTS (SELECT 1 FROM "WASHLINE"."ENTITIES" p WHERE p.entity_id = s.entity_id);

-- upsert:entities  params={'ds': '2025-01-01'}
MERGE INTO "WASHLINE"."ENTITIES" tgt USING (SELECT "ENTITY_ID", "MEMBER_COUNT", "FIRST_SEEN_DS", "LAST_CHANGED_DS", "GOLDEN_RECORD" FROM "WASHLINE"."STAGING_ENTITIES" WHERE ds = :ds AND removed = 0) src ON (tgt."ENTITY_ID" = src."ENTITY_ID") WHEN MATCHED THEN UPDATE SET tgt."MEMBER_COUNT" = src."MEMBER_COUNT", tgt."FIRST_SEEN_DS" = src."FIRST_SEEN_DS", tgt."LAST_CHANGED_DS" = src."LAST_CHANGED_DS", tgt."GOLDEN_RECORD" = src."GOLDEN_RECORD" WHEN NOT MATCHED THEN INSERT ("ENTITY_ID", "MEMBER_COUNT", "FIRST_SEEN_DS", "LAST_CHANGED_DS", "GOLDEN_RECORD") VALUES (src."ENTITY_ID", src."MEMBER_COUNT", src."FIRST_SEEN_DS", src."LAST_CHANGED_DS", src."GOLDEN_RECORD");

-- delete_removed:entities  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."ENTITIES" WHERE entity_id IN (SELECT entity_id FROM "WASHLINE"."STAGING_ENTITIES" WHERE ds = :ds AND removed = 1);

-- delete:entity_changes  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."ENTITY_CHANGES" WHERE ds = :ds;

-- insert:entity_changes  params={'ds': '2025-01-01'}
INSERT INTO "WASHLINE"."ENTITY_CHANGES" ("DS", "ENTITY_ID", "CHANGE", "FROM_ENTITY_IDS", "MEMBER_COUNT") SELECT "DS", "ENTITY_ID", "CHANGE", "FROM_ENTITY_IDS", "MEMBER_COUNT" FROM "WASHLINE"."STAGING_ENTITY_CHANGES" WHERE ds = :ds;

-- count:entity_changes  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "WASHLINE"."ENTITY_CHANGES" WHERE ds = :ds;

-- delete:entity_registry_state  params={}
DELETE FROM "WASHLINE"."ENTITY_REGISTRY_STATE";

-- insert:entity_registry_state  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00', 'published_at': '2025-01-02T03:04:05.123456'}
INSERT INTO "WASHLINE"."ENTITY_REGISTRY_STATE" ("BASE_DS", "PUBLISH_MODE", "REASON", "HELD_DS", "REFERENCES_TOTAL", "ENTITIES_TOTAL", "DS", "LOAD_ID", "PUBLISHED_AT") SELECT "BASE_DS", "PUBLISH_MODE", "REASON", "HELD_DS", "REFERENCES_TOTAL", "ENTITIES_TOTAL", "DS", "LOAD_ID", :published_at FROM "WASHLINE"."STAGING_ENTITY_VERSIONS" WHERE ds = :ds AND load_id = :load_id;

-- prune:staging_entity_members  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."STAGING_ENTITY_MEMBERS" WHERE ds < :ds;

-- prune:staging_entities  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."STAGING_ENTITIES" WHERE ds < :ds;

-- prune:staging_entity_versions  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."STAGING_ENTITY_VERSIONS" WHERE ds < :ds;
