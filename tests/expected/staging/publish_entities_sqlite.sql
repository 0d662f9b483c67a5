-- version  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
SELECT "base_ds", "publish_mode", "reason", "held_ds", "references_total", "entities_total" FROM "staging_entity_versions" WHERE ds = ? AND load_id = ?;

-- held  params=()
SELECT ds, references_total, entities_total FROM "entity_registry_state";

-- other_load_ids:staging_entity_members  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
SELECT COUNT(*) FROM "staging_entity_members" WHERE ds = ? AND load_id <> ?;

-- staged:staging_entity_members  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_entity_members" WHERE ds = ?;

-- other_load_ids:staging_entities  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
SELECT COUNT(*) FROM "staging_entities" WHERE ds = ? AND load_id <> ?;

-- staged:staging_entities  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_entities" WHERE ds = ?;

-- other_load_ids:staging_entity_changes  params=('2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
SELECT COUNT(*) FROM "staging_entity_changes" WHERE ds = ? AND load_id <> ?;

-- staged:staging_entity_changes  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_entity_changes" WHERE ds = ?;

-- delete:entity_members  params=()
DELETE FROM "entity_members";

-- insert:entity_members  params=('2025-01-01',)
INSERT INTO "entity_members" ("source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds") SELECT "source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds" FROM "staging_entity_members" WHERE ds = ?;

-- count:entity_members  params=()
SELECT COUNT(*) FROM "entity_members";

-- delete:entities  params=()
DELETE FROM "entities";

-- insert:entities  params=('2025-01-01',)
INSERT INTO "entities" ("entity_id", "member_count", "first_seen_ds", "last_changed_ds", "golden_record") SELECT "entity_id", "member_count", "first_seen_ds", "last_changed_ds", "golden_record" FROM "staging_entities" WHERE ds = ? AND removed = 0;

-- count:entities  params=()
SELECT COUNT(*) FROM "entities";

-- delete:entity_changes  params=('2025-01-01',)
DELETE FROM "entity_changes" WHERE ds >= ?;

-- insert:entity_changes  params=('2025-01-01',)
INSERT INTO "entity_changes" ("ds", "entity_id", "change", "from_entity_ids", "member_count") SELECT "ds", "entity_id", "change", "from_entity_ids", "member_count" FROM "staging_entity_changes" WHERE ds = ?;

-- count:entity_changes  params=('2025-01-01',)
SELECT COUNT(*) FROM "entity_changes" WHERE ds = ?;

-- delete:entity_registry_state  params=()
DELETE FROM "entity_registry_state";

-- insert:entity_registry_state  params=('2025-01-02T03:04:05.123456', '2025-01-01', 'scheduled__2025-01-01T02:00:00+00:00')
INSERT INTO "entity_registry_state" ("base_ds", "publish_mode", "reason", "held_ds", "references_total", "entities_total", "ds", "load_id", "published_at") SELECT "base_ds", "publish_mode", "reason", "held_ds", "references_total", "entities_total", "ds", "load_id", ? FROM "staging_entity_versions" WHERE ds = ? AND load_id = ?;

-- prune:staging_entity_members  params=('2025-01-01',)
DELETE FROM "staging_entity_members" WHERE ds < ?;

-- prune:staging_entities  params=('2025-01-01',)
DELETE FROM "staging_entities" WHERE ds < ?;

-- prune:staging_entity_versions  params=('2025-01-01',)
DELETE FROM "staging_entity_versions" WHERE ds < ?;
