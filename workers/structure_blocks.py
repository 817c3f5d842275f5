"""The structure of a region's text: blocks in reading order, each saying which
of the region's lines it covers (indices into `RegionResult.lines`), so every
heading, list item or code line can be traced back to its boxes.

| type | carries |
|---|---|
| `heading`   | `text`, `level` (1-6: `#` .. `######`) |
| `paragraph` | `text`: its lines joined, words hyphenated at a line end joined back |
| `list`      | `items` (each: `marker` as printed, `text`, `lines`, `depth` of nesting), `ordered`, `start` |
| `code`      | `text` with its line breaks and indentation (spaces) kept; `language` when guessed |
| `equation`  | `text`; `number` when the line carried one, e.g. "(3)" -> "3" |
| `caption`   | `text`; `caption_of`: the `reading_index` of its figure or table, None when none was found |
| `table`     | `text`: the region's Markdown table |

`workers.structure` makes them; `workers.document_result` renders them.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class BlockType(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    CODE = "code"
    EQUATION = "equation"
    CAPTION = "caption"
    TABLE = "table"


@dataclass(frozen=True)
class ListItem:
    marker: str                  # as printed: "•", "4.", "(a)", "[2]"; "" for table-of-contents entries
    text: str
    lines: tuple[int, ...]
    depth: int = 0               # 0: outermost

    def to_dict(self) -> dict[str, Any]:
        return {"marker": self.marker, "text": self.text, "lines": list(self.lines), "depth": self.depth}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ListItem:
        return cls(data["marker"], data["text"], tuple(int(i) for i in data["lines"]), int(data.get("depth", 0)))


@dataclass(frozen=True)
class Block:
    type: BlockType
    text: str
    lines: tuple[int, ...] = ()
    level: int | None = None            # heading
    items: tuple[ListItem, ...] = ()    # list
    ordered: bool | None = None         # list
    start: int | None = None            # list: the first item's number, when ordered
    language: str | None = None         # code
    number: str | None = None           # equation
    caption_of: int | None = None       # caption

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type.value, "text": self.text, "lines": list(self.lines)}
        if self.type is BlockType.HEADING:
            data["level"] = self.level
        elif self.type is BlockType.LIST:
            data.update(ordered=self.ordered, start=self.start, items=[item.to_dict() for item in self.items])
        elif self.type is BlockType.CODE:
            data["language"] = self.language
        elif self.type is BlockType.EQUATION:
            data["number"] = self.number
        elif self.type is BlockType.CAPTION:
            data["caption_of"] = self.caption_of
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Block:
        return cls(BlockType(data["type"]), data["text"], tuple(int(i) for i in data.get("lines", ())),
                   data.get("level"), tuple(ListItem.from_dict(item) for item in data.get("items", ())),
                   data.get("ordered"), data.get("start"), data.get("language"), data.get("number"),
                   data.get("caption_of"))
