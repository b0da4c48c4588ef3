"""The report as a document: sections of paragraphs, tables and charts, with every number already written out.

The HTML page and its Markdown twin are two renderings of one `Document`, so they cannot carry different
content. Text may quote code in backticks (`` `--policy` ``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

__all__ = ["Cell", "Table", "Para", "Items", "Kpis", "Chart", "Section", "Document", "Block", "cell"]


@dataclass(frozen=True, slots=True)
class Cell:
    """A table cell: its text and its CSS classes (``over`` past a limit, ``sev-<severity>``, ``ok``)."""

    text: str
    cls: str = ""


@dataclass(frozen=True, slots=True)
class Table:
    """A table: ``left`` lists the columns of text (left-aligned); ``details`` adds under each row a line that
    spans the table (a command), headed ``detail_header`` where a format cannot span (the Markdown twin's last
    column)."""

    id: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    left: frozenset[int] = frozenset()
    details: tuple[str, ...] | None = None
    detail_header: str = ""


@dataclass(frozen=True, slots=True)
class Para:
    """A paragraph; ``cls`` ``missing`` marks what a missing stage output leaves out."""

    text: str
    cls: str = ""


@dataclass(frozen=True, slots=True)
class Items:
    """A bulleted list with a lead-in line (``cls`` as for `Para`)."""

    title: str
    items: tuple[str, ...]
    cls: str = ""


@dataclass(frozen=True, slots=True)
class Kpis:
    """The headline figures: (label, value) pairs."""

    items: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Chart:
    """A chart by name (``charts/<name>.svg``) with its caption."""

    name: str
    alt: str
    caption: str


Block = Union[Table, Para, Items, Kpis, Chart]


@dataclass(frozen=True, slots=True)
class Section:
    """A titled section of blocks (``id`` is its anchor)."""

    id: str
    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class Document:
    """The whole report: a title, a line under it and the sections."""

    title: str
    subtitle: str
    sections: tuple[Section, ...]


def cell(text: object, cls: str = "") -> Cell:
    """A `Cell` of ``text`` (anything printable; ``None`` prints as ``—``).

    Examples
    --------
    >>> cell(None), cell(3, "over")
    (Cell(text='—', cls=''), Cell(text='3', cls='over'))
    """
    return Cell("—" if text is None else str(text), cls)
