"""The report card of a decision log (issue 32 item 4): is the gate worth it on this traffic?

`report_card(path, …)` reads a log and returns the card dict (`imad.report.card`);
`write_report(card, out)` writes `report.md` and the PNGs into a folder. numpy only, no torch;
matplotlib only for the pictures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.decision_log.columns import ESCALATED, ID, MODEL, SERVED, TIME
from imad.decision_log.store import open_for_reading
from imad.errors import ConfigError, DecisionLogError
from imad.report.card import DEFAULT_WINDOW_S, build_report
from imad.report.markdown import render_markdown
from imad.report.routers import ROUTER_COLUMNS, select_router

REPORT_MD = "report.md"
REPORT_COLUMNS = (ID, TIME, MODEL, "p", "ood", ESCALATED, "would_escalate", SERVED,
                  "confidence_initial", "shadow_debate", "single_answer", "debate_answer",
                  *ROUTER_COLUMNS)
"""The columns the card reads (features, reasons and tokens are left undecoded)."""


def report_card(path: str | Path, *, since: float | None = None, model: str | None = None,
                window_s: float = DEFAULT_WINDOW_S, samples: int = 1000,
                router: str | None = None) -> dict[str, Any]:
    """The card of the log at `path`, restricted to `time >= since`, one model name and one
    router (`imad.report.routers.select_router`: a name or the start of its hash)."""
    store = open_for_reading(path)
    try:
        if model is not None:
            known = [row[0] for row in store.connection.execute(
                f"SELECT DISTINCT {MODEL} FROM decisions WHERE {MODEL} IS NOT NULL ORDER BY {MODEL}")]
            if model not in known:
                raise ConfigError("--model", f"no decision in {path} was served as model {model!r}; "
                                  f"the log has {', '.join(map(repr, known)) or 'no model names'}")
        rows = list(store.rows(since=since, model=model, names=REPORT_COLUMNS))
    finally:
        store.close()
    if router is not None:
        rows = select_router(rows, router)
    return build_report(rows, log=str(path), window_s=window_s, since=since, model=model,
                        router=router, samples=samples)


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
