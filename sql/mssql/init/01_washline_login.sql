-- washline on SQL Server: the staging database and its owner login (least privilege).
--
-- Run once by the compose service `sqlserver-init` as sa (the only use of sa):
--   sqlcmd -C -S sqlserver -U sa -b -i /washline-init/01_washline_login.sql
-- The sa password comes from SQLCMDPASSWORD and the login's password from the
-- environment variable WASHLINE_MSSQL_PASSWORD (a sqlcmd scripting variable
-- read from the environment), so neither is in argv or in this file.
-- Safe to run again: it creates what is missing and resets the password.
--
-- The login `washline` owns the database `washline` and nothing else: it has
-- no server role and no user in any other database. As the owner it is the
-- database's dbo, which is what washline needs there:
--   * load_staging / publish: CREATE TABLE, INSERT / DELETE, TDS bulk copy
--     (pymssql bulk_copy; BULK INSERT from server files is not used, so no
--     ADMINISTER BULK OPERATIONS);
--   * check_integrity: DBCC CHECKDB on its own database (db_owner).
-- DBCC DBINFO (last known good CHECKDB) needs sysadmin on some versions; the
-- check then reports it as unknown and the verdict stands.

IF DB_ID(N'washline') IS NULL
    CREATE DATABASE washline;
GO

IF SUSER_ID(N'washline') IS NULL
    CREATE LOGIN washline WITH PASSWORD = N'$(WASHLINE_MSSQL_PASSWORD)',  -- secret-scan: allow (variable)
        DEFAULT_DATABASE = washline, CHECK_POLICY = ON, CHECK_EXPIRATION = OFF;
ELSE
    ALTER LOGIN washline WITH PASSWORD = N'$(WASHLINE_MSSQL_PASSWORD)';  -- secret-scan: allow (variable)
GO

-- a login cannot own a database in which it is also mapped to a user
USE washline;
GO
IF EXISTS (SELECT 1 FROM sys.database_principals WHERE name = N'washline' AND type = 'S')
    DROP USER washline;
GO
ALTER AUTHORIZATION ON DATABASE::washline TO washline;
GO
