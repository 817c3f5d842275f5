"""The embedded broker: kombu's SQLAlchemy transport on a SQLite file, tuned.

kombu hands every transport option to SQLAlchemy's `create_engine`, so the
transport's polling interval (how long an idle worker waits before looking
for new messages; 1 s by default) cannot be set as an option. This subclass
sets it, and gives SQLite a generous lock timeout: the API, the worker and its
pool processes all write to the same file. Registered under the URL scheme
`ocrserve-sqla+sqlite:///PATH`.
"""
from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport.sqlalchemy import Channel as SQLAlchemyChannel
from kombu.transport.sqlalchemy import Transport as SQLAlchemyTransport
from sqlalchemy import create_engine

SCHEME = "ocrserve-sqla"
POLL_INTERVAL_S = 0.25
SQLITE_LOCK_TIMEOUT_S = 30


class EmbeddedBrokerChannel(SQLAlchemyChannel):
    def _engine_from_config(self):
        return create_engine(self.connection.client.hostname, connect_args={"timeout": SQLITE_LOCK_TIMEOUT_S})


class EmbeddedBrokerTransport(SQLAlchemyTransport):
    Channel = EmbeddedBrokerChannel
    polling_interval = POLL_INTERVAL_S


def register() -> None:
    TRANSPORT_ALIASES[SCHEME] = f"{__name__}:EmbeddedBrokerTransport"
