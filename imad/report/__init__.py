"""The report card of a decision log: is the gate worth it on this traffic?

`report_card(path, …)` reads a log and returns the card dict (`imad.report.card`);
`write_report(card, out)` writes `report.md` and the PNGs into a folder. numpy only, no torch;
matplotlib only for the pictures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.decision_log.columns import ESCALATED, ID, MODEL, SERVED, TIME
from imad.decision_log.location import open_for_reading
from imad.decision_log.replica import REPLICA_COLUMNS, Replica, of_replica
from imad.errors import ConfigError, DecisionLogError
from imad.report.card import DEFAULT_WINDOW_S, build_report
from imad.report.markdown import render_markdown
from imad.report.routers import ROUTER_COLUMNS, select_router

REPORT_MD = "report.md"
REPORT_COLUMNS = (ID, TIME, MODEL, "p", "ood", ESCALATED, "would_escalate", SERVED,
                  "confidence_initial", "shadow_debate", "single_answer", "debate_answer",
                  *ROUTER_COLUMNS, *REPLICA_COLUMNS)
"""The columns the card reads (features, reasons and tokens are left undecoded)."""


def report_card(path: str | Path, *, since: float | None = None, model: str | None = None,
                window_s: float = DEFAULT_WINDOW_S, samples: int = 1000,
                router: str | None = None, certified: str | Path | None = None,
                alpha: float | None = None, delta: float = 0.05,
                replica: Replica | None = None) -> dict[str, Any]:
    """The card of the log at `path` (a file or a database URL), restricted to `time >= since`,
    one model name, one router (`imad.report.routers.select_router`: a name or the start of its
    hash) and one replica; with the certificate of the checkpoint `certified` and what can be
    certified at error `alpha` (`imad.report.certification`)."""
    store = open_for_reading(path)
    shown = str(store.path)  # a URL's password hidden
    try:
        if model is not None:
            known = [row[0] for row in store.connection.execute(
                f"SELECT DISTINCT {MODEL} FROM decisions WHERE {MODEL} IS NOT NULL ORDER BY {MODEL}")]
            if model not in known:
                raise ConfigError("--model", f"no decision in {shown} was served as model {model!r}; "
                                  f"the log has {', '.join(map(repr, known)) or 'no model names'}")
        rows = list(store.rows(since=since, model=model, names=REPORT_COLUMNS))
    finally:
        store.close()
    if replica is not None:
        hosts = sorted({str(row["host"]) for row in rows if row["host"] is not None})
        rows = list(of_replica(rows, replica))
        if not rows:
            raise ConfigError("--replica", f"no decision in {shown} was written by {replica}; its "
                              f"rows name the host(s) {', '.join(map(repr, hosts)) or '(none)'}")
    if router is not None:
        rows = select_router(rows, router)
    card = build_report(rows, log=shown, window_s=window_s, since=since, model=model,
                        router=router, samples=samples)
    from imad.report.certification import certification_section, read_certificate

    certificate = None if certified is None else read_certificate(certified)
    why = ("no router with a certificate was given (--certificate DIR)" if certified is None
           else f"the router {certified} carries no certificate (imad calibrate --certify)")
    card["certificate"], card["certification"] = certification_section(
        rows, certificate=certificate, alpha=alpha, delta=delta, why_none=why)
    return card


def write_report(card: dict[str, Any], out: str | Path, *, pictures: bool = True) -> list[Path]:
    """Write `report.md` (and the PNGs) into `out`, creating it; the files written."""
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DecisionLogError(f"cannot create --out {folder}: {error.strerror or error}") from error
    drawn: dict[str, str] = {}
    note = ""
    if pictures:
        try:
            from imad.report.plots import draw_pictures

            drawn = draw_pictures(card, folder)
        except ImportError:
            note = "\nNo pictures: matplotlib is not installed (pip install 'imad[train]').\n"
        except OSError as error:
            raise DecisionLogError(f"cannot write pictures into {folder}: "
                                   f"{error.strerror or error}") from error
    target = folder / REPORT_MD
    try:
        target.write_text(render_markdown(card, drawn) + note, encoding="utf-8")
    except OSError as error:
        raise DecisionLogError(f"cannot write {target}: {error.strerror or error}") from error
    return [target, *(folder / name for name in drawn.values())]
