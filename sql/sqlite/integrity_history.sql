-- Integrity-check history, one row per check (after Ola Hallengren's CommandLog).
-- Times are ISO-8601 UTC text; duration_s wall seconds.
CREATE TABLE IF NOT EXISTS washline_integrity_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    database_name TEXT NOT NULL,
    engine TEXT NOT NULL,
    check_mode TEXT NOT NULL,
    command TEXT NOT NULL,
    start_time TEXT NOT NULL,
    end_time TEXT NOT NULL,
    duration_s REAL NOT NULL,
    verdict TEXT NOT NULL,
    allocation_errors INTEGER NOT NULL,
    consistency_errors INTEGER NOT NULL,
    findings INTEGER NOT NULL,
    error_message TEXT
);
