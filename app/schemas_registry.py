"""Registered extraction schemas, and `/v1/schemas` to list them.

A registered schema is a `NAME.json` file in `OCRSERVE_SCHEMAS_DIR` or among
the examples shipped in the repository's `schemas/` folder (the configured
folder wins when both have a name). Files are read when asked for, so a schema
dropped into the folder is usable without a restart; one that fails the checks
of `workers.extraction_schema` is left out of the listing (and logged) and
refused by name.

A job's `schema` option (form field or `ocrserve run --schema`) is either such
a name or a whole inline schema; `resolve_schema` tells them apart by the
leading `{`. Names never reach the file system unchecked: they must match
`NAME_PATTERN`, and only files found by listing the folders are opened.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.deps import Context, Owner
from app.errors import ApiError
from workers.extraction_schema import ExtractionSchema, SchemaError, parse_schema
from workers.settings import Settings

logger = logging.getLogger("ocrserve.app")

SHIPPED_SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class UnknownSchemaError(SchemaError):
    code = "unknown_schema"


class SchemaRegistry:
    def __init__(self, folders: list[Path], max_bytes: int):
        self.folders = folders        # first wins for a name found in several
        self.max_bytes = max_bytes

    @classmethod
    def from_settings(cls, settings: Settings) -> SchemaRegistry:
        folders = [settings.schemas_dir] if settings.schemas_dir else []
        return cls([*folders, SHIPPED_SCHEMAS_DIR], settings.max_schema_bytes)

    def paths(self) -> dict[str, Path]:
        """Registered name -> file, sorted by name."""
        found: dict[str, Path] = {}
        for folder in self.folders:
            if not folder.is_dir():
                continue
            for path in sorted(folder.glob("*.json")):
                if NAME_PATTERN.match(path.stem) and path.is_file():
                    found.setdefault(path.stem, path)
        return dict(sorted(found.items()))

    def load(self, name: str) -> ExtractionSchema:
        """The registered schema `name` (a trailing `.json` is allowed); `SchemaError` if missing or invalid."""
        name = name.strip().removesuffix(".json")
        path = self.paths().get(name) if NAME_PATTERN.match(name) else None
        if path is None:
            known = ", ".join(schema.name for schema in self.list()) or "none"
            raise UnknownSchemaError(f"no schema is registered as {name[:64]!r}; registered: {known}. "
                                     "Send a whole JSON schema instead, or register one in OCRSERVE_SCHEMAS_DIR")
        if path.stat().st_size > self.max_bytes:
            raise SchemaError(f"registered schema {name!r} is larger than the {self.max_bytes:,}-byte limit")
        return parse_schema(path.read_bytes(), self.max_bytes, name)

    def list(self) -> list[ExtractionSchema]:
        """Every registered schema that passes the checks."""
        schemas = []
        for name in self.paths():
            try:
                schemas.append(self.load(name))
            except (SchemaError, OSError) as exc:
                logger.warning("registered schema %r is left out: %s", name, exc)
        return schemas


def resolve_schema(value: str, registry: SchemaRegistry) -> ExtractionSchema:
    """A `schema` option: an inline JSON schema (starts with '{') or a registered name."""
    text = value.strip()
    if not text:
        raise SchemaError("the schema option is empty: give a registered name or a JSON schema")
    if text.startswith("{"):
        return parse_schema(text, registry.max_bytes)
    return registry.load(text)


class SchemaSummary(BaseModel):
    name: str
    title: str | None = Field(None, description="the schema's own title, when it has one")
    description: str | None = None
    properties: list[str] = Field(description="the top-level fields an extraction fills in")


class SchemaList(BaseModel):
    schemas: list[SchemaSummary]


router = APIRouter(prefix="/v1/schemas", tags=["schemas"])


@router.get("", response_model=SchemaList, summary="Schemas registered for extraction, by name")
def list_schemas(context: Context, _: Owner) -> SchemaList:
    registry = SchemaRegistry.from_settings(context.settings)
    return SchemaList(schemas=[_summary(schema) for schema in registry.list()])


@router.get("/{name}", summary="One registered schema, as JSON Schema")
def get_schema(name: str, context: Context, _: Owner) -> dict[str, Any]:
    try:
        return SchemaRegistry.from_settings(context.settings).load(name).schema
    except UnknownSchemaError as exc:
        raise ApiError(404, "not_found", str(exc)) from None


def _summary(schema: ExtractionSchema) -> SchemaSummary:
    title, description = schema.schema.get("title"), schema.schema.get("description")
    return SchemaSummary(name=schema.name, title=title if isinstance(title, str) else None,
                         description=description if isinstance(description, str) else None,
                         properties=list(schema.schema.get("properties") or {}))
