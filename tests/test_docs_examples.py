"""The manual's examples are real: its label file is accepted by `imad log label`, its sample
report cards are `imad report`'s output on seeded logs (one with signal, one without), and the
long how-to pages are split into sections a table of contents can list.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LABELS = DOCS / "examples" / "labels.jsonl"
SECTIONED = ("how-to/prove-it.md", "how-to/serve.md", "how-to/recalibrate.md")
MAX_WORDS_UNDER_ONE_HEADING = 450


@pytest.fixture(scope="module")
def hooks():
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        import generate
        import sample_card
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    return generate, sample_card


def test_the_example_labels_file_labels_the_sample_log(hooks, tmp_path):
    """`imad log label` accepts the file on the sample cards' log and prints what the page says."""
    _, sample_card = hooks
    log = sample_card.seed_log(tmp_path / "decisions.db", signal=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "imad.cli.main", "log", "label", "--log", str(log),
                          str(LABELS)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert (run.returncode, run.stderr) == (0, "")
    page = (DOCS / "how-to" / "prove-it.md").read_text(encoding="utf-8")
    shown = re.search(r"```bash\nimad log label --log decisions.db docs/examples/labels.jsonl\n```\n\n"
                      r"```text\n(.*?)```", page, re.S)
    assert run.stdout == shown.group(1) == "labelled 5 decisions (5 new, 0 replaced)\n"
    from imad.report import report_card

    card = report_card(log)
    assert card["labelled"] == len(range(0, sample_card.ROWS, sample_card.LABEL_EVERY)) + 5
    assert card["shadow"]["rows"] == sample_card.ROWS // sample_card.SHADOW_DEBATE_EVERY


def test_the_page_shows_the_example_labels_file(hooks):
    generate, _ = hooks
    assert generate.expand("<!-- generate: example-labels -->") == \
        f"```json\n{LABELS.read_text(encoding='utf-8')}```\n"
    page = (DOCS / "how-to" / "prove-it.md").read_text(encoding="utf-8")
    assert "<!-- generate: example-labels -->" in page


def test_the_sample_cards_tell_signal_from_no_signal(hooks):
    """What the page says of the two cards holds: with signal the AUROC interval lies above 0.5
    and kept answers beat the labelled answers' accuracy; without, the interval holds 0.5."""
    _, sample_card = hooks
    good, bad = sample_card.sample_card(signal=True), sample_card.sample_card(signal=False)
    assert good["auroc"] > 0.65 and good["quality"]["router"]["auroc_interval"][0] > 0.5
    base_rate = good["quality"]["correct"] / good["quality"]["scored_labelled"]
    assert good["quality"]["kept_accuracy"]["value"] > base_rate + 0.1
    low, high = bad["quality"]["router"]["auroc_interval"]
    assert low < 0.5 < high
    assert good["shadow"]["fixed"] > 0 and good["shadow"]["broke"] > 0
    assert (good["log"], good["rows"], good["labelled"]) == ("decisions.db", sample_card.ROWS, 175)
    assert good["drift"]["flagged_windows"] == []  # a steady week: no window's p drifts


@pytest.mark.slow
def test_the_sample_cards_are_generated_into_the_page(hooks):
    generate, sample_card = hooks
    page = (DOCS / "how-to" / "prove-it.md").read_text(encoding="utf-8")
    for name, signal in (("sample-card-signal", True), ("sample-card-no-signal", False)):
        assert f"<!-- generate: {name} -->" in page
        card = generate.expand(f"<!-- generate: {name} -->")
        assert card == sample_card.card_markdown(sample_card.sample_card(signal=signal),
                                                 card.splitlines()[0].split('"')[1])
        assert card.startswith('!!! example "Sample card: ')
        assert "    **Report card: decisions.db**" in card and "\n#" not in card
        assert f"    {sample_card.ROWS} decisions, " in card


@pytest.mark.parametrize("page", SECTIONED)
def test_long_how_to_pages_are_split_into_sections(page):
    """At least three `##` sections (the theme's table of contents lists them), and no stretch
    of prose longer than MAX_WORDS_UNDER_ONE_HEADING words under one heading."""
    text = re.sub(r"^```.*?^```\n", "", (DOCS / page).read_text(encoding="utf-8"), flags=re.S | re.M)
    sections = re.split(r"^#{2,3} .*$", text, flags=re.M)
    assert len(sections) - 1 >= 3
    longest = max(len(section.split()) for section in sections)
    assert longest <= MAX_WORDS_UNDER_ONE_HEADING


def test_results_mark_the_auroc_of_a_constant_p():
    """`auto` choosing the base rate gives every answer one p: its AUROC cell says so, with a note
    under each table, so the oracle's 0.5 on GSM8K does not read as a bug."""
    text = (DOCS / "results.md").read_text(encoding="utf-8")
    tables = text.count("| AUROC after auto |")
    assert tables >= 2
    assert "0.500 [0.50, 0.50]" not in text
    assert text.count("¹ `auto` kept the 50 labels' base rate") == tables
    gsm8k_oracle = "|  | oracle | 0.000 [0.00, 0.00] | 1.000 [1.00, 1.00] | 0.002 [0.00, 0.03] |"
    assert f"{gsm8k_oracle} 0.5, constant p¹ |" in text
