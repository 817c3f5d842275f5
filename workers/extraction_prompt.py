"""The chat messages that ask a model to fill in a schema.

Both routes show the model a JSON template made from the schema (the keys,
with an empty value of each type) rather than the schema itself: small models
copy a template far better than they read JSON Schema, and a template is the
form GLM-OCR's information-extraction prompts take. The schema itself travels
as `response_format`, where the engine's grammar enforces it.

- text route: a system message, then the document's text between fences;
- vision route: one user message with the page images first and the
  instruction after them (GLM-OCR's chat template has no system role).
"""
from __future__ import annotations

import base64
import io
import json
from typing import Any

from PIL import Image

SYSTEM_PROMPT = ("You extract information from documents into JSON. Copy each value exactly as it appears in "
                 "the document. When the document does not give a value, use an empty string for text and 0 "
                 "for numbers.")
TEXT_INSTRUCTION = "Fill in this JSON template with the values from the document above:"
VISION_INSTRUCTION = "Fill in this JSON template with the values from the document in the image(s):"
MAX_TEMPLATE_DEPTH = 12


def text_messages(document_text: str, schema: dict[str, Any]) -> list[dict[str, Any]]:
    user = f'Document:\n"""\n{document_text.strip()}\n"""\n\n{TEXT_INSTRUCTION}\n{_template_text(schema)}'
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def vision_messages(page_images: list[Image.Image], schema: dict[str, Any]) -> list[dict[str, Any]]:
    assert page_images, "the vision route needs at least one page image"
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": png_data_url(image)}}
                                     for image in page_images]
    content.append({"type": "text", "text": f"{VISION_INSTRUCTION}\n{_template_text(schema)}"})
    return [{"role": "user", "content": content}]


def schema_template(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """An example value of `schema`'s shape: objects with every property, one item per
    array, "" / 0 / false for scalars, the first choice of an enum or anyOf."""
    root = schema if root is None else root
    if not isinstance(schema, dict) or depth > MAX_TEMPLATE_DEPTH:
        return None
    if isinstance(schema.get("$ref"), str):
        return schema_template(_resolve_local(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for keyword in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(keyword), list) and schema[keyword]:
            return schema_template(schema[keyword][0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return {name: schema_template(child, root, depth + 1)
                for name, child in (schema.get("properties") or {}).items()}
    if kind == "array":
        items = schema.get("items")
        return [schema_template(items, root, depth + 1)] if isinstance(items, dict) else []
    return {"string": "", "number": 0, "integer": 0, "boolean": False}.get(kind)


def png_data_url(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _template_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema_template(schema), ensure_ascii=False)


def _resolve_local(ref: str, root: Any) -> Any:
    target = root
    for part in ref[2:].split("/") if ref.startswith("#/") else []:
        part = part.replace("~1", "/").replace("~0", "~")
        target = target.get(part) if isinstance(target, dict) else None
    return target
