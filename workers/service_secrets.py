"""Secrets the API and the workers must both read, kept in the job store's
database (the one thing every host shares): each API key's webhook signing
secret, and the key that signs the web page's event-stream tokens.

A secret is made on first use by whichever process asks first (an insert that
loses a race to another keeps the other's), so every host signs and checks with
the same bytes without a setting to copy between them. They are stored as they
are, not hashed: a signer needs the secret itself. Whoever reads the job store's
database can read them, as they can read every job's text.

| name                  | used for                                          |
|-----------------------|---------------------------------------------------|
| `webhook:<owner>`     | HMAC-SHA256 of the key's webhook bodies (workers/webhooks.py); shown to the key at `GET /v1/webhooks/secret`, replaced by `POST /v1/webhooks/secret` |
| `event-stream-token`  | the short tokens that let `EventSource` (which sends no headers) open a job's stream (app/routes_events.py) |
"""
from __future__ import annotations

import secrets
import time

from sqlalchemy import Column, Connection, Double, Engine, MetaData, Table, Text, text

from workers import database

METADATA = MetaData()
SERVICE_SECRETS = Table("service_secrets", METADATA, Column("name", Text, primary_key=True),
                        Column("secret", Text, nullable=False), Column("created_at", Double, nullable=False))
WEBHOOK_SECRET_PREFIX = "whsec_"
EVENT_TOKEN_SECRET = "event-stream-token"


def create_tables(conn: Connection) -> None:
    METADATA.create_all(conn, tables=[SERVICE_SECRETS], checkfirst=True)


def webhook_secret_name(owner: str) -> str:
    return f"webhook:{owner}"


def get_secret(engine: Engine, name: str, prefix: str = "") -> str:
    """The named secret, made (32 random bytes) if there is none yet."""
    with database.read(engine) as db:
        found = db.execute(text("SELECT secret FROM service_secrets WHERE name = :name"), {"name": name}).scalar()
    if found is not None:
        return found
    with database.write(engine) as db:
        db.execute(text("INSERT INTO service_secrets (name, secret, created_at) VALUES (:name, :secret, :now) "
                        "ON CONFLICT (name) DO NOTHING"),
                   {"name": name, "secret": prefix + secrets.token_hex(32), "now": time.time()})
        return db.execute(text("SELECT secret FROM service_secrets WHERE name = :name"), {"name": name}).scalar_one()


def replace_secret(engine: Engine, name: str, prefix: str = "") -> str:
    """A new secret under `name`; the old one signs nothing from now on."""
    secret = prefix + secrets.token_hex(32)
    with database.write(engine) as db:
        db.execute(text("INSERT INTO service_secrets (name, secret, created_at) VALUES (:name, :secret, :now) "
                        "ON CONFLICT (name) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at"),
                   {"name": name, "secret": secret, "now": time.time()})
    return secret
