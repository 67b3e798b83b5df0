"""What a fleet's shared log holds, for `/v1/imad/stats`: every replica's rows, not one's.

A replica's own counters (recorded, written, dropped) say what its writer did; with a log in
PostgreSQL the stats also count the whole log — its rows, labelled rows and the replicas
(host and process) that wrote them — so any replica behind the load balancer answers for the
fleet. Each call is one short read-only connection and two counting queries (a full count of
the table: poll it every few seconds, not per request). A SQLite log is one machine's: None.
"""

from __future__ import annotations

from typing import Any

from imad.decision_log.location import open_reader_store
from imad.decision_log.writer import DecisionLog
from imad.errors import DecisionLogError


def fleet_counts(log: DecisionLog | None) -> dict[str, Any] | None:
    """`{"rows", "labelled", "replicas"}` of a database log (`{"error": …}` when it cannot be
    read now); None without a log or for a SQLite file."""
    if log is None or not log.location.database:
        return None
    try:
        store = open_reader_store(log.location)
        try:
            rows, replicas = store.connection.execute(
                "SELECT count(*), count(DISTINCT (host, process)) FROM decisions").fetchone()
            labelled = store.connection.execute("SELECT count(*) FROM labels").fetchone()[0]
        finally:
            store.close()
    except DecisionLogError as error:  # the message is redacted
        return {"error": str(error)}
    return {"rows": int(rows), "labelled": int(labelled), "replicas": int(replicas)}
