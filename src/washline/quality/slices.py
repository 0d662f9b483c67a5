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
    # every member up to ds, so it is reconciled with the staged members of the
    # version (staging_entity_members of ds, empty without the registry).
    "staging_clusters": (
        "SELECT c.ds AS ds, c.cluster_id AS cluster_id, c.cluster_size AS cluster_size, "
        "COALESCE(m.members, l.linked_records, 0) AS linked_records, "
        "CASE WHEN c.cluster_size = 1 THEN 1 ELSE 0 END AS singleton "
        "FROM {clusters} c LEFT JOIN ("
        "SELECT cluster_id, COUNT(*) AS linked_records FROM {links} WHERE ds = '{ds}' "
        "GROUP BY cluster_id) l ON l.cluster_id = c.cluster_id "
        "LEFT JOIN (SELECT entity_id, COUNT(*) AS members FROM {members} WHERE ds = '{ds}' "
        "GROUP BY entity_id) m ON m.entity_id = c.cluster_id "
        "WHERE c.ds = '{ds}'"
    ),
    # Entity registry. Each staged member with its entity looked up in the
    # staged entities (NULL = orphan), a 0/1 flag "first seen this night", and
    # for those, 0/1 "joined an entity that existed before" (NULL otherwise, so
    # the column's mean is the share of the night's new references that joined).
    "staging_entity_members": (
        "SELECT m.ds AS ds, m.source AS source, m.record_id AS record_id, m.entity_id AS entity_id, "
        "m.first_seen_ds AS first_seen_ds, m.last_changed_ds AS last_changed_ds, "
        "e.entity_id AS entity_in_entities, "
        "CASE WHEN m.first_seen_ds = '{ds}' THEN 1 ELSE 0 END AS new_reference, "
        "CASE WHEN m.first_seen_ds = '{ds}' THEN "
        "CASE WHEN e.first_seen_ds < '{ds}' THEN 1 ELSE 0 END END AS joined_existing "
        "FROM {members} m LEFT JOIN ("
        "SELECT entity_id, first_seen_ds FROM {entities} WHERE ds = '{ds}') e ON e.entity_id = m.entity_id "
        "WHERE m.ds = '{ds}'"
    ),
    # Each staged entity with the number of staged members naming it.
    "staging_entities": (
        "SELECT e.ds AS ds, e.entity_id AS entity_id, e.member_count AS member_count, "
        "e.first_seen_ds AS first_seen_ds, e.last_changed_ds AS last_changed_ds, "
        "COALESCE(m.members, 0) AS counted_members "
        "FROM {entities} e LEFT JOIN ("
        "SELECT entity_id, COUNT(*) AS members FROM {members} WHERE ds = '{ds}' GROUP BY entity_id) m "
        "ON m.entity_id = e.entity_id "
        "WHERE e.ds = '{ds}'"
    ),
    # Each of the night's change rows with its entity looked up in the staged
    # state, and a 0/1 flag for a merge/split that names no source entity.
    "staging_entity_changes": (
        "SELECT c.ds AS ds, c.entity_id AS entity_id, c.change AS change, c.member_count AS member_count, "
        "e.entity_id AS entity_in_entities, "
        "CASE WHEN c.change IN ('merge', 'split') AND (c.from_entity_ids IS NULL OR c.from_entity_ids = '') "
        "THEN 1 ELSE 0 END AS missing_sources "
        "FROM {changes} c LEFT JOIN (SELECT entity_id FROM {entities} WHERE ds = '{ds}') e "
        "ON e.entity_id = c.entity_id "
        "WHERE c.ds = '{ds}'"
    ),
    # Each PUBLISHED entity of the state the night linked against: vanished_id
    # is its id when it is neither in the staged state nor named by a merge or
    # split row of the night, else NULL. On a rerun of the latest published
    # date the published state is that date's earlier result, so the ids that
    # result minted (a published change row of the date: ``new``, or a
    # ``split`` part that is not its own source) are left out: they were not
    # in the predecessor's state, and a rerun may mint others.
    "entity_continuity": (
        "SELECT p.entity_id AS entity_id, "
        "CASE WHEN EXISTS (SELECT 1 FROM {entities} s WHERE s.ds = '{ds}' AND s.entity_id = p.entity_id) "
        "OR EXISTS (SELECT 1 FROM {changes} c WHERE c.ds = '{ds}' AND c.change IN ('merge', 'split') "
        "AND ',' {cat} c.from_entity_ids {cat} ',' LIKE '%,' {cat} p.entity_id {cat} ',%') "
        "THEN NULL ELSE p.entity_id END AS vanished_id "
        "FROM {published_entities} p "
        "WHERE NOT EXISTS (SELECT 1 FROM {published_changes} m WHERE m.ds = '{ds}' "
        "AND m.entity_id = p.entity_id AND (m.change = 'new' OR (m.change = 'split' "
        "AND ',' {cat} COALESCE(m.from_entity_ids, '') {cat} ',' NOT LIKE '%,' {cat} p.entity_id {cat} ',%')))"
    ),
}


def query_for(suite: str, ds: str, dialect: str, schema: str | None = None) -> str:
    """The slice query of ``suite`` for ``ds`` on ``dialect``.

    Args:
        schema: schema of the staging tables (validated, quoted); None = the
            connection's default schema.

    Raises:
        ValueError: ``ds`` is not a ``YYYY-MM-DD`` date, no query for
            ``suite``, or ``schema`` is not a plain identifier.
    """
    from washline.staging.dialects import qualify

    validate_ds(ds)
    if suite not in SLICE_QUERIES:
        raise ValueError(f"no slice query for suite {suite!r}; known: {sorted(SLICE_QUERIES)}")
    return SLICE_QUERIES[suite].format(
        ds=ds, dob=DATE_TEXT.get(dialect, "r.date_of_birth"), cat=CONCAT.get(dialect, "||"),
        records=qualify("staging_records", dialect, schema), links=qualify("staging_links", dialect, schema),
        clusters=qualify("staging_clusters", dialect, schema),
        members=qualify("staging_entity_members", dialect, schema),
        entities=qualify("staging_entities", dialect, schema),
        changes=qualify("staging_entity_changes", dialect, schema),
        published_entities=qualify("entities", dialect, schema),
        published_changes=qualify("entity_changes", dialect, schema))
