#!/bin/bash
# washline on Oracle: the staging user with only the grants washline uses.
#
# gvenzl/oracle-free runs the files of /container-entrypoint-initdb.d once,
# when it creates the database; the compose service `oracle` mounts this
# folder there. The password comes from the environment (ORACLE_APP_PASSWORD)
# and reaches sqlplus on stdin, never in argv; sqlplus logs in with operating
# system authentication (/ as sysdba), so no SYS password is used either.
# Substitution is off (SET DEFINE OFF), so a "&" in the password is kept as it
# is; a double quote is refused (it would end the quoted password).
#
# Grants (README "Grants each check needs"):
#   CREATE SESSION                 connect
#   CREATE TABLE + quota on USERS  load_staging / publish create and fill the tables
#                                  the user owns; as their owner it may ANALYZE
#                                  ... VALIDATE STRUCTURE them (check_integrity):
#                                  no ANALYZE ANY
#   CREATE VIEW                    check_quality's slice views (without it GX falls
#                                  back to query assets)
#   SELECT ON SYS.V_$DATABASE_BLOCK_CORRUPTION
#                                  check_integrity reads the corrupt-block view;
#                                  the narrow grant instead of SELECT_CATALOG_ROLE
#   EXECUTE ON SYS.DBMS_HM         check_integrity runs the Health Monitor checks
#                                  (DB Structure, Dictionary, Data Block Integrity);
#                                  the package runs with its owner's rights
#   SELECT ON SYS.V_$HM_RUN, SYS.V_$HM_FINDING
#                                  check_integrity reads each run's status and findings
set -euo pipefail
: "${ORACLE_APP_PASSWORD:?ORACLE_APP_PASSWORD is not set}"
case "${ORACLE_APP_PASSWORD}" in
  *'"'*) echo "ORACLE_APP_PASSWORD must not contain a double quote (it is quoted in CREATE USER)" >&2; exit 1 ;;
esac
PDB=FREEPDB1  # the service name of the washline connection

sqlplus -s -L / as sysdba <<SQL
WHENEVER SQLERROR EXIT SQL.SQLCODE
SET DEFINE OFF
ALTER SESSION SET CONTAINER = ${PDB};
CREATE USER washline IDENTIFIED BY "${ORACLE_APP_PASSWORD}" DEFAULT TABLESPACE USERS QUOTA UNLIMITED ON USERS;
GRANT CREATE SESSION TO washline;
GRANT CREATE TABLE TO washline;
GRANT CREATE VIEW TO washline;
GRANT SELECT ON SYS.V_\$DATABASE_BLOCK_CORRUPTION TO washline;
GRANT EXECUTE ON SYS.DBMS_HM TO washline;
GRANT SELECT ON SYS.V_\$HM_RUN TO washline;
GRANT SELECT ON SYS.V_\$HM_FINDING TO washline;
EXIT
SQL
echo "washline: user washline created in ${PDB}"
