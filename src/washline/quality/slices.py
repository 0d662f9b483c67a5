"""The slice under validation, as SQL: one query per suite, per dialect.

What it owns: the slice queries (:data:`SLICE_QUERIES`, each restricted to one
``ds`` and joining the neighbouring staging tables so that referential
integrity is an ordinary column expectation), the per-dialect pieces they
need (:data:`DATE_TEXT`, :data:`CONCAT`) and :func:`query_for`, which fills
them in for a date, a dialect and a schema. The per-run views over these
queries are :mod:`washline.quality.views`'.
"""

from __future__ import annotations

from washline.paths import validate_ds

#: String concatenation per dialect (the continuity check matches an id inside
#: the comma-separated ``from_entity_ids``).
CONCAT = {"sqlite": "||", "postgres": "||", "mssql": "+", "oracle": "||"}

#: ``date_of_birth`` as ISO ``YYYY-MM-DD`` text, per dialect (PostgreSQL,
#: SQL Server and Oracle store DATE; SQLite stores the ISO text already).
DATE_TEXT = {
    "sqlite": "r.date_of_birth",
    "postgres": "TO_CHAR(r.date_of_birth, 'YYYY-MM-DD')",
    "mssql": "CONVERT(VARCHAR(10), r.date_of_birth, 23)",
    "oracle": "TO_CHAR(r.date_of_birth, 'YYYY-MM-DD')",
}

#: The slice under validation, one query per suite. ``{ds}`` is a validated
#: ``YYYY-MM-DD`` literal; ``{dob}`` comes from :data:`DATE_TEXT`;
#: ``{records}``, ``{links}``, ``{clusters}`` are the quoted (optionally
#: schema-qualified) staging tables. Subquery aliases are written without
#: ``AS`` so the same text runs on Oracle.
SLICE_QUERIES = {
    # Each reference with its link-index rows counted (exactly one expected).
    "staging_records": (
        "SELECT r.ds AS ds, r.record_id AS record_id, r.source AS source, r.surname AS surname, "
        "r.postcode AS postcode, r.state AS state, {dob} AS date_of_birth, r.soc_sec_id AS soc_sec_id, "
        "l.cluster_id AS cluster_id, COALESCE(l.n_links, 0) AS cluster_links "
        "FROM {records} r LEFT JOIN ("
        "SELECT source, record_id, MIN(cluster_id) AS cluster_id, COUNT(*) AS n_links "
        "FROM {links} WHERE ds = '{ds}' GROUP BY source, record_id) l "
        "ON l.source = r.source AND l.record_id = r.record_id "
        "WHERE r.ds = '{ds}'"
    ),
    # Each link row with its cluster and record looked up (NULL = orphan).
    "staging_links": (
        "SELECT l.ds AS ds, l.source AS source, l.record_id AS record_id, l.cluster_id AS cluster_id, "
        "l.cluster_size AS cluster_size, c.cluster_id AS cluster_in_clusters, "
        "r.record_id AS record_in_records "
        "FROM {links} l "
        "LEFT JOIN (SELECT DISTINCT cluster_id FROM {clusters} WHERE ds = '{ds}') c "
        "ON c.cluster_id = l.cluster_id "
        "LEFT JOIN (SELECT DISTINCT source, record_id FROM {records} WHERE ds = '{ds}') r "
        "ON r.source = l.source AND r.record_id = l.record_id "
        "WHERE l.ds = '{ds}'"
    ),
    # Each cluster with the number of references it holds and a 0/1 singleton
    # flag. Linked in isolation, that is the night's link rows naming it; with
    # the entity registry a cluster is an entity and its cluster_size counts
    # every member up to ds, so it is reconciled with the members the entity
    # has after publish: the staged members, plus on an incremental publish the
    # published members the night did not restage ({kept_c}: counted per
    # cluster through the published members' entity index, so the query reads
    # the night's entities, not the registry).
    "staging_clusters": (
        "SELECT c.ds AS ds, c.cluster_id AS cluster_id, c.cluster_size AS cluster_size, "
        "COALESCE(m.members + {kept_c}, l.linked_records, 0) AS linked_records, "
        "CASE WHEN c.cluster_size = 1 THEN 1 ELSE 0 END AS singleton "
        "FROM {clusters} c LEFT JOIN ("
        "SELECT cluster_id, COUNT(*) AS linked_records FROM {links} WHERE ds = '{ds}' "
        "GROUP BY cluster_id) l ON l.cluster_id = c.cluster_id "
        "LEFT JOIN (SELECT entity_id, COUNT(*) AS members FROM {members} WHERE ds = '{ds}' "
        "GROUP BY entity_id) m ON m.entity_id = c.cluster_id "
        "WHERE c.ds = '{ds}'"
    ),
    # Entity registry. What is staged is what the night publishes: its delta (an
    # incremental publish: the members it added or changed, the entities it
    # created, changed or removed, ``removed`` = 1) or the merged version (a full
    # publish); ``staging_entity_versions`` says which. The published tables
    # complete a delta. Each staged member with its entity looked up in the
    # state after publish (NULL = orphan: not a live staged entity, nor on an
    # incremental publish a published entity the night left alone), a 0/1 flag
    # "first seen this night", and for those, 0/1 "joined an entity that existed
    # before" (NULL otherwise, so the column's mean is the share of the night's
    # new references that joined).
    "staging_entity_members": (
        "SELECT m.ds AS ds, m.source AS source, m.record_id AS record_id, m.entity_id AS entity_id, "
        "m.first_seen_ds AS first_seen_ds, m.last_changed_ds AS last_changed_ds, "
        "CASE WHEN e.removed = 0 THEN m.entity_id WHEN e.entity_id IS NULL AND {incremental} AND EXISTS "
        "(SELECT 1 FROM {published_entities} p WHERE p.entity_id = m.entity_id) THEN m.entity_id "
        "END AS entity_in_entities, "
        "CASE WHEN m.first_seen_ds = '{ds}' THEN 1 ELSE 0 END AS new_reference, "
        "CASE WHEN m.first_seen_ds = '{ds}' THEN "
        "CASE WHEN e.first_seen_ds < '{ds}' THEN 1 ELSE 0 END END AS joined_existing "
        "FROM {members} m LEFT JOIN ("
        "SELECT entity_id, first_seen_ds, removed FROM {entities} WHERE ds = '{ds}') e ON e.entity_id = m.entity_id "
        "WHERE m.ds = '{ds}'"
    ),
    # Each staged entity with the members naming it after publish (staged ones,
    # plus on an incremental publish the published ones not restaged, {kept_e}:
    # counted per staged entity, as {kept_c} above), its
    # member_count when live (NULL when removed) and a 0/1 flag for a removed
    # row that still carries members or a golden record.
    "staging_entities": (
        "SELECT e.ds AS ds, e.entity_id AS entity_id, e.member_count AS member_count, e.removed AS removed, "
        "e.first_seen_ds AS first_seen_ds, e.last_changed_ds AS last_changed_ds, "
        "CASE WHEN e.removed = 1 THEN NULL ELSE e.member_count END AS live_member_count, "
        "CASE WHEN e.removed = 1 AND (e.member_count <> 0 OR e.golden_record IS NOT NULL) THEN 1 ELSE 0 END "
        "AS bad_removed, "
        "COALESCE(m.members, 0) + {kept_e} AS counted_members "
        "FROM {entities} e LEFT JOIN ("
        "SELECT entity_id, COUNT(*) AS members FROM {members} WHERE ds = '{ds}' GROUP BY entity_id) m "
        "ON m.entity_id = e.entity_id "
        "WHERE e.ds = '{ds}'"
    ),
    # Each of the night's change rows with its entity looked up among the live
    # staged entities (a changed entity is always in the night's delta), and a
    # 0/1 flag for a merge/split that names no source entity.
    "staging_entity_changes": (
        "SELECT c.ds AS ds, c.entity_id AS entity_id, c.change AS change, c.member_count AS member_count, "
        "e.entity_id AS entity_in_entities, "
        "CASE WHEN c.change IN ('merge', 'split') AND (c.from_entity_ids IS NULL OR c.from_entity_ids = '') "
        "THEN 1 ELSE 0 END AS missing_sources "
        "FROM {changes} c LEFT JOIN (SELECT entity_id FROM {entities} WHERE ds = '{ds}' AND removed = 0) e "
        "ON e.entity_id = c.entity_id "
        "WHERE c.ds = '{ds}'"
    ),
    # Each PUBLISHED entity of the state the night linked against that the
    # publish may remove: vanished_id is its id when it is gone after publish (no
    # live staged row, and not left alone by an incremental publish) and not
    # named by a merge or split row of the night, else NULL. A full publish
    # replaces the tables, so every published entity is checked; an incremental
    # one deletes only the entities staged with removed = 1 and leaves the
    # others alone, so only those are read (the query costs the night's delta,
    # not the registry's size; the other branch is skipped by its constant
    # filter). On a rerun of the latest published date (always a full publish)
    # the published state is that date's earlier result, so the ids that result
    # minted (a published change row of the date: ``new``, or a ``split`` part
    # that is not its own source) are left out: they were not in the
    # predecessor's state, and a rerun may mint others.
    "entity_continuity": (
        "SELECT p.entity_id AS entity_id, "
        "CASE WHEN EXISTS (SELECT 1 FROM {entities} s WHERE s.ds = '{ds}' AND s.entity_id = p.entity_id "
        "AND s.removed = 0) OR {named} THEN NULL ELSE p.entity_id END AS vanished_id "
        "FROM {published_entities} p "
        "WHERE NOT {incremental} AND {not_minted} "
        "UNION ALL "
        "SELECT p.entity_id AS entity_id, CASE WHEN {named} THEN NULL ELSE p.entity_id END AS vanished_id "
        "FROM {published_entities} p "
        "WHERE {incremental} AND p.entity_id IN (SELECT s.entity_id FROM {entities} s WHERE s.ds = '{ds}' "
        "AND s.removed = 1) AND {not_minted}"
    ),
    # One row: the registry's totals before and after the publish the night
    # staged. Incremental: before = the totals of the version the published
    # tables hold (entity_registry_state, reconciled when it was published;
    # counted only when the state names another version than the night's base),
    # new = staged live entities / members the published tables lack (looked up
    # by key), removed = staged removed rows of published entities; nothing reads
    # the whole registry. Full: before = 0 and everything staged is new.
    # entities_after / members_after must equal the manifest's entities_total /
    # references_total (no row = the version row is missing).
    "entity_reconciliation": (
        "SELECT r.ds AS ds, r.publish_mode AS publish_mode, r.entities_before AS entities_before, "
        "r.entities_new AS entities_new, r.entities_removed AS entities_removed, "
        "r.entities_before + r.entities_new - r.entities_removed AS entities_after, "
        "r.members_before AS members_before, r.members_new AS members_new, "
        "r.members_before + r.members_new AS members_after "
        "FROM (SELECT v.ds AS ds, v.publish_mode AS publish_mode, "
        "CASE WHEN v.publish_mode = 'incremental' THEN COALESCE((SELECT st.entities_total FROM {state} st "
        "WHERE st.ds = v.base_ds), (SELECT COUNT(*) FROM {published_entities})) ELSE 0 END "
        "AS entities_before, "
        "(SELECT COUNT(*) FROM {entities} s WHERE s.ds = v.ds AND s.removed = 0 AND (v.publish_mode <> 'incremental' "
        "OR NOT EXISTS (SELECT 1 FROM {published_entities} p WHERE p.entity_id = s.entity_id))) AS entities_new, "
        "(SELECT COUNT(*) FROM {entities} s WHERE s.ds = v.ds AND s.removed = 1 AND v.publish_mode = 'incremental' "
        "AND EXISTS (SELECT 1 FROM {published_entities} p WHERE p.entity_id = s.entity_id)) AS entities_removed, "
        "CASE WHEN v.publish_mode = 'incremental' THEN COALESCE((SELECT st.references_total FROM {state} st "
        "WHERE st.ds = v.base_ds), (SELECT COUNT(*) FROM {published_members})) ELSE 0 END "
        "AS members_before, "
        "(SELECT COUNT(*) FROM {members} s WHERE s.ds = v.ds AND (v.publish_mode <> 'incremental' "
        "OR NOT EXISTS (SELECT 1 FROM {published_members} p WHERE p.source = s.source "
        "AND p.record_id = s.record_id))) AS members_new "
        "FROM {versions} v WHERE v.ds = '{ds}') r"
    ),
}


def query_for(suite: str, ds: str, dialect: str, schema: str | None = None, registry: bool = False) -> str:
    """The slice query of ``suite`` for ``ds`` on ``dialect``.

    Args:
        schema: schema of the staging tables (validated, quoted); None = the
            connection's default schema.
        registry: a registry night: ``staging_clusters`` then also counts the
            published members an incremental publish keeps. Without it that
            query reads staging tables only, so a login that may read nothing
            else validates a night without the registry.

    Raises:
        ValueError: ``ds`` is not a ``YYYY-MM-DD`` date, no query for
            ``suite``, or ``schema`` is not a plain identifier.
    """
    from washline.staging.dialects import qualify

    validate_ds(ds)
    if suite not in SLICE_QUERIES:
        raise ValueError(f"no slice query for suite {suite!r}; known: {sorted(SLICE_QUERIES)}")
    versions = qualify("staging_entity_versions", dialect, schema)
    incremental = (f"EXISTS (SELECT 1 FROM {versions} v WHERE v.ds = '{ds}' "
                   "AND v.publish_mode = 'incremental')")
    members = qualify("staging_entity_members", dialect, schema)
    published_members = qualify("entity_members", dialect, schema)

    # the published members of entity {outer} that an incremental publish keeps as they are (not restaged):
    # a correlated count per staged row (the entity index of entity_members; never a scan of the registry)
    def kept(outer: str) -> str:
        return (f"CASE WHEN {incremental} THEN (SELECT COUNT(*) FROM {published_members} pm "
                f"WHERE pm.entity_id = {outer} AND NOT EXISTS (SELECT 1 FROM {members} sm WHERE sm.ds = '{ds}' "
                "AND sm.source = pm.source AND sm.record_id = pm.record_id)) ELSE 0 END")

    kept_c = kept("c.cluster_id") if registry else "0"  # no registry: staging tables only
    # a night's merge or split row names p (continuity), and p is not an id the date's earlier publish minted
    cat = CONCAT.get(dialect, "||")
    named = (f"EXISTS (SELECT 1 FROM {{changes}} c WHERE c.ds = '{ds}' AND c.change IN ('merge', 'split') "
             f"AND ',' {cat} c.from_entity_ids {cat} ',' LIKE '%,' {cat} p.entity_id {cat} ',%')")
    not_minted = (f"NOT EXISTS (SELECT 1 FROM {{published_changes}} m WHERE m.ds = '{ds}' "
                  f"AND m.entity_id = p.entity_id AND (m.change = 'new' OR (m.change = 'split' "
                  f"AND ',' {cat} COALESCE(m.from_entity_ids, '') {cat} ',' NOT LIKE '%,' {cat} p.entity_id {cat} ',%')))")
    text = SLICE_QUERIES[suite]
    if suite == "entity_continuity":
        text = text.replace("{named}", named).replace("{not_minted}", not_minted)
    return text.format(
        ds=ds, versions=versions, incremental=incremental, kept_c=kept_c, kept_e=kept("e.entity_id"),
        state=qualify("entity_registry_state", dialect, schema),
        published_members=published_members, dob=DATE_TEXT.get(dialect, "r.date_of_birth"), cat=cat,
        records=qualify("staging_records", dialect, schema), links=qualify("staging_links", dialect, schema),
        clusters=qualify("staging_clusters", dialect, schema),
        members=qualify("staging_entity_members", dialect, schema),
        entities=qualify("staging_entities", dialect, schema),
        changes=qualify("staging_entity_changes", dialect, schema),
        published_entities=qualify("entities", dialect, schema),
        published_changes=qualify("entity_changes", dialect, schema))
