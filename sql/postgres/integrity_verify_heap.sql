-- amcheck heap check of one table: one row per corrupt tuple (blkno, offnum, attnum, msg).
-- Parameter: %(rel)s table name. Source: PostgreSQL docs, amcheck "verify_heapam".
SELECT blkno, offnum, attnum, msg FROM verify_heapam(%(rel)s::regclass, on_error_stop => false, check_toast => true)
