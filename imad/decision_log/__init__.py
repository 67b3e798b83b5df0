"""The decision log: one row per routing decision, labels beside it, in a
SQLite file (one machine) or a PostgreSQL database (a fleet; `imad.decision_log.location`).

`DecisionLog` is what serving and `imad ask` write through (a queue and a background thread,
never raising); `open_for_reading` is what the CLI's export, label and report commands read
through (every failure a typed error). The file format is documented in
`imad.decision_log.schema`; the columns come from `imad.decision_log.columns`.
"""

from imad.decision_log.columns import LOG_COLUMNS, LogColumn
from imad.decision_log.location import open_for_reading
from imad.decision_log.schema import SCHEMA_VERSION
from imad.decision_log.store import LogStore, open_store
from imad.decision_log.writer import DecisionLog

__all__ = ["LOG_COLUMNS", "SCHEMA_VERSION", "DecisionLog", "LogColumn", "LogStore",
           "open_for_reading", "open_store"]
