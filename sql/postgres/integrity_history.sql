-- Integrity-check history, one row per check (after Ola Hallengren's CommandLog).
CREATE TABLE IF NOT EXISTS washline_integrity_log (
    id BIGSERIAL PRIMARY KEY,
    database_name TEXT NOT NULL,
    engine TEXT NOT NULL,
    check_mode TEXT NOT NULL,
    command TEXT NOT NULL,
    start_time TIMESTAMPTZ NOT NULL,
    end_time TIMESTAMPTZ NOT NULL,
    duration_s DOUBLE PRECISION NOT NULL,
    verdict TEXT NOT NULL,
    allocation_errors INTEGER NOT NULL,
    consistency_errors INTEGER NOT NULL,
    findings INTEGER NOT NULL,
    error_message TEXT
);
