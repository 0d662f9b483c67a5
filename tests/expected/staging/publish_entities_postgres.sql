-- version  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT "base_ds", "publish_mode", "reason", "held_ds", "references_total", "entities_total" FROM "washline"."staging_entity_versions" WHERE ds = %(ds)s AND load_id = %(load_id)s;

-- held  params={}
SELECT ds, references_total, entities_total FROM "washline"."entity_registry_state";

-- other_load_ids:staging_entity_members  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "washline"."staging_entity_members" WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_entity_members  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "washline"."staging_entity_members" WHERE ds = %(ds)s;

-- other_load_ids:staging_entities  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "washline"."staging_entities" WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_entities  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "washline"."staging_entities" WHERE ds = %(ds)s;

-- other_load_ids:staging_entity_changes  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00'}
SELECT COUNT(*) FROM "washline"."staging_entity_changes" WHERE ds = %(ds)s AND load_id <> %(load_id)s;

-- staged:staging_entity_changes  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "washline"."staging_entity_changes" WHERE ds = %(ds)s;

-- delete:entity_members  params={}
DELETE FROM "washline"."entity_members";

-- insert:entity_members  params={'ds': '2025-01-01'}
INSERT INTO "washline"."entity_members" ("source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds") SELECT "source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds" FROM "washline"."staging_entity_members" WHERE ds = %(ds)s;

-- count:entity_members  params={}
SELECT COUNT(*) FROM "washline"."entity_members";

-- delete:entities  params={}
DELETE FROM "washline"."entities";

-- insert:entities  params={'ds': '2025-01-01'}
INSERT INTO "washline"."entities" ("entity_id", "member_count", "first_seen_ds", "last_changed_ds", "golden_record") SELECT "entity_id", "member_count", "first_seen_ds", "last_changed_ds", "golden_record" FROM "washline"."staging_entities" WHERE ds = %(ds)s AND removed = 0;

-- count:entities  params={}
SELECT COUNT(*) FROM "washline"."entities";

-- delete:entity_changes  params={'ds': '2025-01-01'}
DELETE FROM "washline"."entity_changes" WHERE ds >= %(ds)s;

-- insert:entity_changes  params={'ds': '2025-01-01'}
INSERT INTO "washline"."entity_changes" ("ds", "entity_id", "change", "from_entity_ids", "member_count") SELECT "ds", "entity_id", "change", "from_entity_ids", "member_count" FROM "washline"."staging_entity_changes" WHERE ds = %(ds)s;

-- count:entity_changes  params={'ds': '2025-01-01'}
SELECT COUNT(*) FROM "washline"."entity_changes" WHERE ds = %(ds)s;

-- delete:entity_registry_state  params={}
DELETE FROM "washline"."entity_registry_state";

-- insert:entity_registry_state  params={'ds': '2025-01-01', 'load_id': 'scheduled__2025-01-01T02:00:00+00:00', 'published_at': '2025-01-02T03:04:05.123456'}
INSERT INTO "washline"."entity_registry_state" ("base_ds", "publish_mode", "reason", "held_ds", "references_total", "entities_total", "ds", "load_id", "published_at") SELECT "base_ds", "publish_mode", "reason", "held_ds", "references_total", "entities_total", "ds", "load_id", %(published_at)s FROM "washline"."staging_entity_versions" WHERE ds = %(ds)s AND load_id = %(load_id)s;

-- prune:staging_entity_members  params={'ds': '2025-01-01'}
DELETE FROM "washline"."staging_entity_members" WHERE ds < %(ds)s;

-- prune:staging_entities  params={'ds': '2025-01-01'}
DELETE FROM "washline"."staging_entities" WHERE ds < %(ds)s;

-- prune:staging_entity_versions  params={'ds': '2025-01-01'}
DELETE FROM "washline"."staging_entity_versions" WHERE ds < %(ds)s;
