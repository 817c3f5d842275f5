#!/bin/sh
# Run once by the postgres image on an empty data directory (mounted into
# /docker-entrypoint-initdb.d/ by docker-compose.yml): the application's own role, no superuser,
# owning its database so the job store's migrations can create their tables. The api and the
# workers (worker hosts too) connect as it, never as the superuser. Names and password come
# from the environment (OCRSERVE_DB_USER, OCRSERVE_DB_NAME, OCRSERVE_DB_PASSWORD), never from a
# command line; psql reads them with \getenv.
set -eu
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER}" --dbname postgres <<'SQL'
\getenv app_role OCRSERVE_DB_USER
\getenv app_password OCRSERVE_DB_PASSWORD
\getenv app_database OCRSERVE_DB_NAME
CREATE ROLE :"app_role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'app_password';
CREATE DATABASE :"app_database" OWNER :"app_role";
SQL
