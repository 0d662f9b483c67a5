-- B-tree indexes of one table (amcheck's bt_index_check only handles B-tree).
-- Parameter: %(rel)s table name.
SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = %(rel)s::regclass AND a.amname = 'btree' AND i.indisvalid ORDER BY c.relname
