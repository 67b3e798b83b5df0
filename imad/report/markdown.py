"""The report card as markdown (`report.md` in `imad report --out DIR`).

Every number comes from the card dict (`imad.report.card`); a missing one prints the card's
note in words instead.
"""

from __future__ import annotations

from typing import Any

from imad.report.drift import PSI_THRESHOLD
from imad.report.shadow import SMALL_DECILE_ROWS


def render_markdown(card: dict[str, Any], pictures: dict[str, str]) -> str:
    """The markdown text; `pictures` maps a PNG's role (reliability, deferral) to its file name."""
    volume = card["volume"]
    lines = [f"# Report card: {card['log']}", ""]
    selection = card["selection"]
    lines.append(f"{card['rows']} decisions" + (f" since {selection['since']}" if selection["since"] else "")
                 + (f" for model {selection['model']}" if selection["model"] else "")
                 + (f" of router {selection['router']}" if selection.get("router") else "")
                 + (f", {volume['first']} to {volume['last']}" if card["rows"] else "")
                 + f"; {card['labelled']} labelled.")
    if card["excluded_note"]:
        lines += ["", card["excluded_note"][0].upper() + card["excluded_note"][1:] + "."]
    lines += ["", "## Volume and escalation", "",
              "| model | rows | escalated (served) | would escalate | OOD share |",
              "|---|---:|---:|---:|---:|"]
    for name, entry in volume["by_model"].items():
        lines.append(_rate_row(name, entry))
    lines.append(_rate_row("**all**", volume))
    if len(volume.get("by_router", {})) > 1:
        lines += ["", "| router (hash) | rows | escalated (served) | would escalate | OOD share |",
                  "|---|---:|---:|---:|---:|"]
        lines += [_rate_row(name, entry) for name, entry in volume["by_router"].items()]
    if card.get("routers_note"):
        lines += ["", f"**Several routers.** {card['routers_note'][0].upper()}{card['routers_note'][1:]}."]
    lines += ["", f"## Per window ({selection['window_hours']:g} h) and drift of p", "",
              "| window start | rows | escalated | would escalate | OOD share | PSI |",
              "|---|---:|---:|---:|---:|---|"]
    for window in card["windows"]:
        psi = (f"{window['psi']:.3f} ({window['drift']})" if window["psi"] is not None
               else window["psi_note"])
        lines.append(_rate_row(window["start"], window) + f" {psi} |")
    drift = card["drift"]
    lines += ["", f"PSI above {PSI_THRESHOLD} is flagged as a significant shift. Reference: "
              f"{drift['reference'] or 'none (too few rows)'}. Flagged windows: "
              f"{', '.join(drift['flagged_windows']) or 'none'}."]
    lines += _quality(card["quality"], pictures)
    lines += _shadow(card["shadow"])
    from imad.report.certification import render_certification

    lines += render_certification(card)
    return "\n".join(lines) + "\n"


def _quality(quality: dict[str, Any], pictures: dict[str, str]) -> list[str]:
    lines = ["", "## On labelled answers", "",
             f"{quality['scored_labelled']} labelled answers served the scored single answer "
             f"({quality['correct']} correct, {quality['wrong']} wrong); "
             f"{quality['debate_served_labelled']} labelled rows served a debate's answer and "
             "label the debate, not the router.", ""]
    if quality["coverage_note"]:
        lines += [quality["coverage_note"][0].upper() + quality["coverage_note"][1:] + ".", ""]
    kept = quality["kept_accuracy"]
    if kept["value"] is None:
        lines.append(f"Kept-answer accuracy: {kept['note']}.")
    else:
        lines.append(f"Kept-answer accuracy: {_number(kept['value'], kept['interval'], None)} over "
                     f"{kept['n']} kept answers.")
    lines += ["", "| gate | AUROC | ECE (15 bins) | Brier |", "|---|---|---|---|"]
    for name, key in (("router p", "router"), ("verbal confidence (confidence_initial)", "confidence")):
        entry = quality[key]
        if "n" not in entry:
            lines.append(f"| {name} | {entry['note']} | | |")
            continue
        cells = [_number(entry[m], entry[f"{m}_interval"], entry[f"{m}_note"])
                 for m in ("auroc", "ece", "brier")]
        lines.append(f"| {name} (n {entry['n']}) | " + " | ".join(cells) + " |")
    lines.append("| random gate | 0.500 | | |")
    lines.append("| oracle gate | " + ("1.000" if quality["oracle"]["auroc"] is not None
                                       else "needs both right and wrong labelled answers") + " | | |")
    if _has_interval(quality):
        lines += ["", "Numbers in brackets are 95% percentile bootstrap intervals (1,000 resamples, "
                  "seed 0)."]
    for role, title in (("reliability", "Reliability diagram"), ("deferral", "Deferral curve")):
        if role in pictures:
            lines += ["", f"![{title}]({pictures[role]})"]
    if "note" in quality["deferral"]:
        lines += ["", quality["deferral"]["note"]]
    elif "deferral" in pictures:
        lines += ["", "The deferral curve stops short of 100% escalation: with every answer "
                  "escalated none is kept, and the kept answers have no accuracy."]
    return lines


def _has_interval(quality: dict[str, Any]) -> bool:
    """Whether any number the section prints carries a bootstrap interval."""
    entries = [quality[key] for key in ("router", "confidence") if "n" in quality[key]]
    return quality["kept_accuracy"].get("interval") is not None or any(
        entry.get(f"{metric}_interval") is not None for entry in entries
        for metric in ("auroc", "ece", "brier"))


def _shadow(shadow: dict[str, Any]) -> list[str]:
    lines = ["", "## Shadow debates", ""]
    if not shadow["rows"]:
        return [*lines, shadow["note"]]
    lines.append(f"{shadow['rows']} decisions were also debated in shadow; the debate changed the "
                 f"answer in {shadow['changed']} ({shadow['changed_share']:.1%}).")
    if shadow.get("by_decile"):
        lines += ["", "| decile of p | p range | rows | changed | labelled | fixed | broke | "
                  "changed, debate unlabelled |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
        for entry in shadow["by_decile"]:
            small = " (few rows)" if entry.get("small") else ""
            lines.append(f"| {entry['decile']}{small} | {entry['p_from']:.3f}–{entry['p_to']:.3f} | "
                         f"{entry['rows']} | {entry['changed']} | {entry['labelled']} | "
                         f"{entry['fixed']} | {entry['broke']} | {entry['changed_unknown']} |")
        lines += ["", "*fixed*: the single answer was labelled wrong and the debate's answer right "
                  "(`debate_correct`). *broke*: the single answer was labelled right and the debate "
                  "changed it — inferred, not labelled: a question has one right answer, so another "
                  "answer is taken to be wrong. *changed, debate unlabelled*: a wrong single answer "
                  "changed, with no label for the debate's answer."]
        if any(entry.get("small") for entry in shadow["by_decile"]):
            lines += ["", f"Deciles marked (few rows) hold fewer than {SMALL_DECILE_ROWS} "
                      "shadow-debated decisions: their counts are anecdotes, not rates; debate a "
                      "larger share (--shadow-debate-rate) or wait for more traffic."]
    return lines


def _rate_row(name: str, entry: dict[str, Any]) -> str:
    cells = [_percent(entry[key]) for key in ("escalation_rate", "would_escalate_rate", "ood_share")]
    return f"| {name} | {entry['rows']} | " + " | ".join(cells) + " |"


def _percent(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:.1%}"


def _number(value: float | None, interval: tuple[float, float] | None, note: str | None) -> str:
    if value is None:
        return note or "not measurable"
    if interval is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"
