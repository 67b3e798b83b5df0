"""The Grafana dashboard of `imad serve`'s `/metrics`, shipped as package data.

`imad.json` is an importable Grafana dashboard: its panels query the families of
`imad.serve.metrics` (tests/serve/test_dashboard.py checks each name and label against a live
server's `/metrics`). Its data source is the templated variable `datasource`, whose default is
the import input `${DS_PROMETHEUS}`, the form Grafana's "Import dashboard" asks to fill; a
provisioned dashboard has no import step, so `datasource_uid` writes the uid in its place.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

from imad.errors import ConfigError

DASHBOARD_FILE = "imad.json"
IMPORT_INPUT = "${DS_PROMETHEUS}"
UID = re.compile(r"[A-Za-z0-9_-]{1,40}")
"""Grafana's data-source uids: at most 40 letters, digits, `-` or `_`."""


def dashboard(datasource_uid: str | None = None) -> dict[str, Any]:
    """The dashboard as a dict; with `datasource_uid`, bound to that Prometheus data source
    (no import input left) instead of asking for one at import."""
    text = resources.files(__package__).joinpath(DASHBOARD_FILE).read_text(encoding="utf-8")
    board = json.loads(text)
    if datasource_uid is None:
        return board
    if UID.fullmatch(datasource_uid) is None:
        raise ConfigError("--datasource-uid", f"{datasource_uid!r} is not a Grafana data-source uid "
                                              "(1 to 40 letters, digits, '-' or '_')")
    del board["__inputs"]
    for variable in board["templating"]["list"]:
        if variable["current"].get("value") == IMPORT_INPUT:
            variable["current"] = {"text": datasource_uid, "value": datasource_uid}
    return board


def dashboard_text(datasource_uid: str | None = None) -> str:
    """The dashboard as the JSON text `imad serve --print-dashboard` prints."""
    return json.dumps(dashboard(datasource_uid), indent=2, ensure_ascii=False) + "\n"
