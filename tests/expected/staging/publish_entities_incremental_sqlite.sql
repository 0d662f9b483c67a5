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

-- new:entity_members  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_entity_members" s WHERE s.ds = ? AND NOT EXISTS (SELECT 1 FROM "entity_members" p WHERE p.source = s.source AND p.record_id = s.record_id);

-- upsert:entity_members  params=('2025-01-01',)
INSERT INTO "entity_members" ("source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds") SELECT "source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds" FROM "staging_entity_members" WHERE ds = ? ON CONFLICT ("source", "record_id") DO UPDATE SET "entity_id" = excluded."entity_id", "first_seen_ds" = excluded."first_seen_ds", "last_changed_ds" = excluded."last_changed_ds";

-- new:entities  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_entities" s WHERE s.ds = ? AND s.removed = 0 AND NOT EXISTS (SELECT 1 FROM "entities" p WHERE p.entity_id = s.entity_id);

-- removed:entities  params=('2025-01-01',)
SELECT COUNT(*) FROM "staging_entities" s WHERE s.ds = ? AND s.removed = 1 AND EXISTS (SELECT 1 FROM "entities" p WHERE p.entity_id = s.entity_id);

-- upsert:entities  params=('2025-01-01',)
INSERT INTO "entities" ("entity_id", "member_count", "first_seen_ds", "last_changed_ds", "golden_record") SELECT "entity_id", "member_count", "first_seen_ds", "last_changed_ds", "golden_record" FROM "staging_entities" WHERE ds = ? AND removed = 0 ON CONFLICT ("entity_id") DO UPDATE SET "member_count" = excluded."member_count", "first_seen_ds" = excluded."first_seen_ds", "last_changed_ds" = excluded."last_changed_ds", "golden_record" = excluded."golden_record";

-- delete_removed:entities  params=('2025-01-01',)
DELETE FROM "entities" WHERE entity_id IN (SELECT entity_id FROM "staging_entities" WHERE ds = ? AND removed = 1);

-- delete:entity_changes  params=('2025-01-01',)
DELETE FROM "entity_changes" WHERE ds = ?;

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
