-- Integrity-check history, one row per check (after Ola Hallengren's dbo.CommandLog).
IF OBJECT_ID(N'dbo.washline_integrity_log', N'U') IS NULL
CREATE TABLE dbo.washline_integrity_log (
    id BIGINT IDENTITY(1, 1) PRIMARY KEY,
    database_name NVARCHAR(128) NOT NULL,
    engine NVARCHAR(16) NOT NULL,
    check_mode NVARCHAR(16) NOT NULL,
    command NVARCHAR(MAX) NOT NULL,
    start_time DATETIME2(3) NOT NULL,
    end_time DATETIME2(3) NOT NULL,
    duration_s FLOAT NOT NULL,
    verdict NVARCHAR(8) NOT NULL,
    allocation_errors INT NOT NULL,
    consistency_errors INT NOT NULL,
    findings INT NOT NULL,
    error_message NVARCHAR(MAX) NULL
);
