"""How long a label for an id the log does not hold yet is tried again before it is unknown.

A label may reach a process before the row it names is written: under `--workers N` a sibling
worker's writer records it a few milliseconds after its response, and with a log in PostgreSQL
any replica of the fleet may have answered, its writer committing the row with its next batch.
The feedback endpoint tries such a label again for `label_grace_s`, then answers 404.
"""

from __future__ import annotations

from imad.decision_log.writer import DecisionLog

FLEET_GRACE_S = 2.0
"""With a log in PostgreSQL: another replica's writer commits a row within one batch of its
response (milliseconds while the database answers); a row still unwritten after this is
unknown, or queued behind an outage of that replica's database connection (the client retries)."""


def label_grace_s(log: DecisionLog | None, sibling_grace_s: float) -> float:
    """The wait for a label's row: `sibling_grace_s` (the wait for this machine's other workers),
    at least `FLEET_GRACE_S` when the log is a database every replica writes to."""
    if log is not None and log.location.database:
        return max(FLEET_GRACE_S, sibling_grace_s)
    return sibling_grace_s
