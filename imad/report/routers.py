"""Which router scored the decisions a report card reads: one card per router, never a pool.

After a hot reload (or a restart with another checkpoint) one log holds decisions of several
routers. Their p's are not one distribution: pooled, the card averages two gates, and the
change of router reads as drift of the traffic. So the card names each router by its name and
content hash (`router_hash`, SHA-256 of its config.json: a recalibrated copy differs), splits
the volume by router, does not compare p across routers in its drift windows, and `imad report
--router NAME|HASH` reads one router's decisions alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from imad.errors import ConfigError

ROUTER_COLUMNS = ("router_name", "router_hash")
"""The columns the card reads to tell routers apart."""
HASH_SHOWN = 12
"""Hex digits of the content hash shown beside a router's name."""


def router_label(row: dict[str, Any]) -> str:
    """A row's router as the card names it: `name (hash prefix)`."""
    name = "(no router name)" if row.get("router_name") is None else str(row["router_name"])
    digest = row.get("router_hash")
    return name if not digest else f"{name} ({str(digest)[:HASH_SHOWN]})"


def select_router(rows: Sequence[dict[str, Any]], wanted: str) -> list[dict[str, Any]]:
    """The rows of the router named `wanted`, or whose content hash starts with it (at least
    6 hex digits); `ConfigError` naming the routers the rows hold when none matches."""
    wanted = wanted.strip()
    by_hash = len(wanted) >= 6 and all(c in "0123456789abcdef" for c in wanted.lower())
    chosen = [row for row in rows if row.get("router_name") == wanted or (
        by_hash and str(row.get("router_hash") or "").startswith(wanted.lower()))]
    if not chosen:
        present = sorted({router_label(row) for row in rows})
        raise ConfigError("--router", f"no decision in the selection was scored by {wanted!r}; "
                          f"the routers there: {', '.join(present) or 'none'} (give a name or "
                          "the start of a hash)")
    return chosen


def routers_note(rows: Sequence[dict[str, Any]]) -> str | None:
    """Words for a selection scored by several routers (None for one or none)."""
    labels = sorted({router_label(row) for row in rows})
    if len(labels) < 2:
        return None
    return (f"{len(labels)} routers scored these decisions ({', '.join(labels)}), after a reload "
            "or a restart with another checkpoint: the numbers pool different gates, and p's "
            "windows are compared only where the same router scored them; read one router with "
            "--router NAME|HASH")


__all__ = ["ROUTER_COLUMNS", "router_label", "routers_note", "select_router"]
