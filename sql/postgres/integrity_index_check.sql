-- amcheck B-tree check of one index; heapallindexed also verifies that every heap tuple has an index entry.
-- Parameters: %(idx)s index name, %(heapallindexed)s boolean (false in physical-only mode).
SELECT bt_index_check(%(idx)s::regclass, %(heapallindexed)s)
