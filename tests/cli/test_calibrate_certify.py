"""`imad calibrate --certify`: the certificate printed equals the library's on the same rows, the
new version serves the certified τ with the certificate in its record and model card, an
infeasible answer exits 3 with one `error:` line, and a damaged certificate is refused on load."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from imad.cli.main import main
from imad.decide.certify import Certificate, LabelSource, certify
from imad.decision_log import DecisionLog
from imad.decision_log.labels import Label, set_label
from imad.decision_log.location import open_for_reading
from imad.errors import CheckpointError
from imad.router import Router
from imad.router.certified import router_of
from tests.decision_log.rows import T0, decision_row
from tests.router.router_helpers import make_router


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router().save(tmp_path_factory.mktemp("router") / "router")


def write_log(path, router: Router, *, count: int = 600, labelled: int = 500, seed: int = 3,
              router_hash: str | None = None, shadow: bool = True) -> None:
    """Decisions whose label is right more often at a high p; the first `labelled` labelled."""
    rng = random.Random(seed)
    identity = router_of(router)
    rows = []
    for index in range(count):
        p = rng.random()
        row = {**decision_row(index, shadow=shadow), "router_name": identity.name,
               "router_hash": router_hash or identity.hash, "raw": p, "p": p}
        if not shadow:  # below τ 0.6 the debate's answer was served
            row.update(served="debate" if p < 0.6 else "single_agent", escalated=p < 0.6)
        rows.append(row)
    with DecisionLog(path) as log:
        for row in rows:
            log.record(row)
    store = open_for_reading(path, writable=True)
    for row in rows[:labelled]:
        set_label(store, Label(row["response_id"], rng.random() < 0.5 + 0.5 * row["p"]))
    store.close()


def library_answer(log, alpha: float):
    """The library's answer on the log's labelled rows that served the single answer."""
    store = open_for_reading(log)
    rows = list(store.rows())
    store.close()
    labelled = [row for row in rows if row["correct"] is not None and row["served"] != "debate"]
    times = [row["time"] for row in labelled]
    return certify([row["p"] for row in labelled], [int(row["correct"]) for row in labelled],
                   alpha=alpha, traffic=[row["p"] for row in rows], router=router_of(Router.load(
                       ROUTER[0])), labels=LabelSource(f"decision log {log}", min(times), max(times)))


ROUTER: list = []


def test_certify_on_a_log_equals_the_library_and_writes_a_certified_version(router_dir, tmp_path,
                                                                            capsys):
    ROUTER[:] = [router_dir]
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir))
    out = tmp_path / "certified"
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.2",
                 "--log", str(log), "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = library_answer(log, 0.2)
    assert isinstance(expected, Certificate)
    assert printed["certificate"] == expected.to_dict()
    assert printed["certificate"]["labels"]["first"] == T0
    certified = Router.load(out)
    assert certified.config.threshold.tau == expected.tau
    assert certified.config.record.certificate == expected
    card = (out / "README.md").read_text()
    assert expected.hash in card and f"{expected.tau:g}" in card


def test_the_text_report_states_the_promise(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir))
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.2",
                 "--confidence", "0.9", "--log", str(log), "--out", str(tmp_path / "v")]) == 0
    text = capsys.readouterr().out
    assert "of the answers kept, at most 0.2 are wrong, with 0.9 confidence" in text
    assert "checkpoint: " in text and "hash: " in text


def test_an_infeasible_promise_exits_3_with_one_error_line(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir))
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.01",
                 "--log", str(log), "--out", str(tmp_path / "v"), "--json"]) == 3
    captured = capsys.readouterr()
    answer = json.loads(captured.out)
    assert answer["certificate"] is None and answer["infeasible"]["reason"] == "not certifiable"
    assert answer["infeasible"]["smallest_alpha"] > 0.01
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "error: not certifiable: no threshold can promise" in lines[0]
    assert not (tmp_path / "v").exists()


def test_a_new_threshold_drops_the_certificate(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir))
    certified = tmp_path / "certified"
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.2",
                 "--log", str(log), "--out", str(certified)]) == 0
    assert main(["calibrate", "--router", str(certified), "--target-trigger-rate", "0.3",
                 "--log", str(log), "--out", str(tmp_path / "rated")]) == 3  # another router's log
    capsys.readouterr()
    router = Router.load(certified)
    assert router.config.with_threshold(0.5, "by hand").record.certificate is None


def damaged(router_dir, tmp_path, change) -> str:
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir))
    out = tmp_path / "certified"
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.2",
                 "--log", str(log), "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    change(config)
    (out / "config.json").write_text(json.dumps(config))
    return str(out)


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c["certificate"].update(alpha=0.3), "certificate: is damaged"),
    (lambda c: c["certificate"].update(hash="0" * 64), "certificate: is damaged"),
    (lambda c: c["certificate"].update(tau="0.5"), "certificate.tau: must be a number"),
    (lambda c: c["certificate"].pop("upper_bound"), "missing ['upper_bound']"),
    (lambda c: c.update(certificate=[1, 2]), "certificate: must be a JSON object"),
    (lambda c: c["threshold"].update(tau=0.999), "the certificate is for tau"),
    (lambda c: c["scaler"]["mean"].__setitem__(0, 1.5), "made for another scorer"),
])
def test_a_damaged_certificate_is_refused_on_load(router_dir, tmp_path, change, message):
    path = damaged(router_dir, tmp_path, change)
    with pytest.raises(CheckpointError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Router.load(path)


def test_a_log_of_another_router_is_refused(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir), router_hash="cd" * 32)
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.2",
                 "--log", str(log), "--out", str(tmp_path / "v")]) == 3
    assert "holds decisions of another" in capsys.readouterr().err


def test_labels_of_kept_answers_only_warn_and_certify_nothing_below_them(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir), count=1500, labelled=1500, shadow=False)
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.2",
                 "--log", str(log), "--out", str(tmp_path / "v"), "--json"]) == 0
    certificate = json.loads(capsys.readouterr().out)["certificate"]
    assert certificate["tau"] >= 0.599  # the rows below p 0.6 served the debate: no label speaks
    assert any("served the debate's answer" in w for w in certificate["warnings"])
    assert any("no label speaks for them" in w for w in certificate["warnings"])
    assert np.isclose(certificate["escalation_rate"], certificate["escalation_rate"])


@pytest.mark.slow
def test_certify_on_committed_corpus_answers_gives_the_library_answer(tmp_path, capsys):
    """The shipped router on the committed MMLU answers: 78% wrong, so no 20% promise; the
    infeasible answer printed is the library's on the same scores."""
    from imad.router.calibration_set import read_validation_set
    from tests.conftest import REPO_ROOT

    corpus = REPO_ROOT / "corpus" / "smollm2-135m-instruct-q4_1" / "eval" / "mmlu.jsonl"
    assert main(["calibrate", "--certify", "--max-error", "0.2", "--corpus", str(corpus),
                 "--out", str(tmp_path / "v"), "--json"]) == 3
    printed = json.loads(capsys.readouterr().out)["infeasible"]
    scores = read_validation_set(Router.load(), [corpus])
    expected = certify(scores.p, scores.labels, alpha=0.2, unparsed=scores.unparsed)
    assert printed == expected.to_dict()
    assert printed["least_escalation"] > 0.7 and printed["smallest_alpha"] > 0.8
