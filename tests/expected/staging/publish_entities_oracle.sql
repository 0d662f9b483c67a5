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

-- delete:entity_members  params={}
DELETE FROM "WASHLINE"."ENTITY_MEMBERS";

-- insert:entity_members  params={'ds': '2025-01-01'}
INSERT INTO "WASHLINE"."ENTITY_MEMBERS" ("SOURCE", "RECORD_ID", "ENTITY_ID", "FIRST_SEEN_DS", "LAST_CHANGED_DS") SELECT "SOURCE", "RECORD_ID", "ENTITY_ID", "FIRST_SEEN_DS", "LAST_CHANGED_DS" FROM "WASHLINE"."STAGING_ENTITY_MEMBERS" WHERE ds = :ds;

-- count:entity_members  params={}
SELECT COUNT(*) FROM "WASHLINE"."ENTITY_MEMBERS";

-- delete:entities  params={}
DELETE FROM "WASHLINE"."ENTITIES";

-- insert:entities  params={'ds': '2025-01-01'}
INSERT INTO "WASHLINE"."ENTITIES" ("ENTITY_ID", "MEMBER_COUNT", "FIRST_SEEN_DS", "LAST_CHANGED_DS", "GOLDEN_RECORD") SELECT "ENTITY_ID", "MEMBER_COUNT", "FIRST_SEEN_DS", "LAST_CHANGED_DS", "GOLDEN_RECORD" FROM "WASHLINE"."STAGING_ENTITIES" WHERE ds = :ds AND removed = 0;

-- count:entities  params={}
SELECT COUNT(*) FROM "WASHLINE"."ENTITIES";

-- delete:entity_changes  params={'ds': '2025-01-01'}
DELETE FROM "WASHLINE"."ENTITY_CHANGES" WHERE ds >= :ds;

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
