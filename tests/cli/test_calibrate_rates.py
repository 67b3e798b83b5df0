"""`imad calibrate` on a decision log: every new version's escalation rate, the refusals of an
extreme version and of a target rate tied scores cannot meet, τ re-chosen by the checkpoint's
own rule after a recalibration, and log rows matched to a router by its weights' SHA-256."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.decision_log.labels import Label, set_label
from imad.decision_log.location import open_for_reading
from imad.errors import ExtremeRateError
from imad.router import Router
from imad.router.calibration_set import validation_set_from_log
from imad.router.escalation import escalation_at, refuse_extreme
from imad.router.threshold import calibrate_router, tau_for_trigger_rate
from tests.decision_log.rows import decision_row
from tests.router.router_helpers import make_router


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router().save(tmp_path_factory.mktemp("router") / "router")


def write_log(path, router: Router, raws: list[float], labels: dict[int, bool] | None = None) -> None:
    """One decision per raw score, scored by `router` (p through its calibrator)."""
    rows = []
    p = router.calibrator.apply(np.asarray(raws))
    for index, (raw, prob) in enumerate(zip(raws, p, strict=True)):
        rows.append({**decision_row(index), "router_name": router.name,
                     "router_weights": router.config.weights_sha256, "raw": raw, "p": float(prob),
                     "served": "single_agent"})
    with DecisionLog(path) as log:
        for row in rows:
            log.record(row)
    store = open_for_reading(path, writable=True)
    for index, correct in (labels or {}).items():
        set_label(store, Label(rows[index]["response_id"], correct))
    store.close()


def spread(count: int = 100, seed: int = 3) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(count)]


def test_the_escalation_rate_counts_unparsed_answers_and_extremes_both_ways():
    rate = escalation_at(np.array([0.1, 0.5, 0.9]), 0.6, 1, "logged decisions")
    assert (rate.escalated, rate.questions, rate.rate) == (3, 4, 0.75) and not rate.extreme
    assert escalation_at(np.full(20, 0.3), 0.7, 0, "x").extreme  # escalates all
    assert escalation_at(np.full(20, 0.8), 0.7, 0, "x").extreme  # keeps all
    assert escalation_at(np.r_[np.full(19, 0.8), 0.1], 0.7, 0, "x").extreme  # keeps 95%
    assert not escalation_at(np.r_[np.full(18, 0.8), 0.1, 0.1], 0.7, 0, "x").extreme  # keeps 90%
    with pytest.raises(ExtremeRateError, match=r"would keep 20/20 .*every p is 0.8"):
        refuse_extreme(escalation_at(np.full(20, 0.8), 0.7, 0, "x"), np.full(20, 0.8), allow=False)
    refuse_extreme(escalation_at(np.full(20, 0.8), 0.7, 0, "x"), np.full(20, 0.8), allow=True)


def test_ties_that_take_away_the_target_are_counted():
    choice = tau_for_trigger_rate(np.full(50, 0.292), np.ones(50), 0.2)
    assert (choice.achieved_rate, choice.tied_short) == (0.0, 10)
    assert tau_for_trigger_rate(np.linspace(0, 1, 50), np.ones(50), 0.2).tied_short == 0


def test_a_target_rate_tied_scores_cannot_meet_is_refused(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir), [0.292] * 60)
    argv = ["calibrate", "--router", str(router_dir), "--target-trigger-rate", "0.2", "--log", str(log),
            "--out", str(tmp_path / "v")]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "the target trigger rate 0.2000 cannot be met: tied scores allow 0.0000 at most" in err
    assert "every p is 0.292" in err and "imad calibrate --certify" in err
    assert not (tmp_path / "v").exists()
    assert main([*argv, "--allow-extreme-rate"]) == 0
    out = capsys.readouterr().out
    assert "trigger rate on 60 logged decisions: 0.0000 (target 0.2000" in out  # not "validation answers"


def test_a_copy_with_the_same_weights_is_the_same_network_whatever_its_name(router_dir, tmp_path,
                                                                          capsys):
    original = Router.load(router_dir)
    log = tmp_path / "decisions.db"
    write_log(log, original, spread())
    copy = original.with_config(original.config.renamed("my-copy").with_threshold(0.5, "by hand"))
    copy_dir = copy.save(tmp_path / "my-copy")
    assert Router.load(copy_dir).config.weights_sha256 == original.config.weights_sha256
    assert main(["calibrate", "--router", str(copy_dir), "--target-trigger-rate", "0.25", "--log",
                 str(log), "--out", str(tmp_path / "v"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["choice"]["escalated"] == 25
    # another network in a folder named like the original is not
    impostor = make_router(seed=5)
    impostor_dir = impostor.with_config(impostor.config.renamed(original.name)).save(tmp_path / "imp")
    assert main(["calibrate", "--router", str(impostor_dir), "--target-trigger-rate", "0.25",
                 "--log", str(log), "--out", str(tmp_path / "w")]) == 3
    err = capsys.readouterr().err
    assert f"holds decisions of router(s) {original.name} (weights " in err
    assert "another network than" in err and not (tmp_path / "w").exists()


def test_tau_on_a_log_is_chosen_on_this_routers_p_not_the_logged_one(router_dir, tmp_path, capsys):
    """Rows logged by the same network under another calibrator: τ is chosen on the p this
    router's own calibrator gives their raw scores."""
    original = Router.load(router_dir)
    log = tmp_path / "decisions.db"
    raws = spread()
    write_log(log, original, raws, {index: raw > 0.4 for index, raw in enumerate(raws)})
    assert main(["calibrate", "--router", str(router_dir), "--recalibrate", "platt", "--log", str(log),
                 "--out", str(tmp_path / "platt"), "--allow-extreme-rate"]) == 0
    capsys.readouterr()
    platt = Router.load(tmp_path / "platt")
    result = calibrate_router(tmp_path / "platt", lambda router: validation_set_from_log(router, log),
                              target_rate=0.3, out=tmp_path / "rated")
    p = np.sort(platt.calibrator.apply(np.asarray(raws)))
    assert p[29] < result.choice.tau < p[30] and result.choice.escalated == 30


def test_recalibration_rechooses_tau_for_the_rate_it_was_chosen_for(router_dir, tmp_path, capsys):
    original = Router.load(router_dir)
    log = tmp_path / "decisions.db"
    raws = spread(200)
    write_log(log, original, raws, {index: raws[index] > 0.5 for index in range(100)})
    assert main(["calibrate", "--router", str(router_dir), "--target-trigger-rate", "0.25", "--log",
                 str(log), "--out", str(tmp_path / "rated")]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--router", str(tmp_path / "rated"), "--recalibrate", "platt", "--log",
                 str(log), "--out", str(tmp_path / "platt")]) == 0
    out = capsys.readouterr().out
    assert "re-chosen for the checkpoint's target trigger rate 0.25 on the recalibrated p of 200 " \
           "logged decisions" in out
    assert "escalation rate on the 200 logged decisions: 0.2500 (50 escalated" in out
    platt = Router.load(tmp_path / "platt")
    assert int((platt.calibrator.apply(np.asarray(raws)) < platt.config.threshold.tau).sum()) == 50
    assert platt.config.threshold.tau != Router.load(tmp_path / "rated").config.threshold.tau
    assert platt.config.threshold.method.startswith("re-chosen for the checkpoint's target trigger")
