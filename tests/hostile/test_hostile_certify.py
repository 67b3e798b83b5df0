"""Hostile inputs to certifying a threshold: the library's α, δ, β, scores and labels, the
degenerate label sets (one class, all p equal, heavy ties, thresholds that keep nothing, fewer
labels than any promise needs), and `imad calibrate --certify`'s flags. Each is a typed error
naming what was wrong, or an honest answer — never a certificate the labels do not support."""

from __future__ import annotations

import math

import numpy as np
import pytest

from imad.cli.main import main
from imad.decide.certify import Certificate, Infeasible, certify
from imad.errors import ConfigError, DatasetError
from imad.router import Router
from tests.cli.test_calibrate_certify import write_log
from tests.router.router_helpers import make_router

P = np.linspace(0.01, 0.99, 200)
RIGHT = (P > 0.3).astype(int)

BAD_LEVELS = [("zero", 0), ("one", 1), ("negative", -0.1), ("1.5", 1.5), ("nan", math.nan),
              ("inf", math.inf), ("text", "0.1"), ("none", None), ("bool", True)]
LEVEL_CASES = [pytest.param(name, value, id=f"{name}-{label}")
               for name in ("alpha", "delta", "max_trigger_rate") for label, value in BAD_LEVELS
               if not (name == "max_trigger_rate" and value is None)]  # None: no budget at all
"""Each level with each bad value; a `max_trigger_rate` of None means no budget and is valid."""


@pytest.mark.parametrize(("name", "value"), LEVEL_CASES)
def test_levels_outside_the_open_unit_interval_are_refused(name, value):
    settings = {"alpha": 0.1, "delta": 0.05, name: value}
    with pytest.raises(ConfigError, match="must be a finite number in") as raised:
        certify(P, RIGHT, **settings)
    assert raised.value.field.startswith(name)


@pytest.mark.parametrize(("p", "right", "message"), [
    ([0.5, math.nan], [1, 1], r"p\[1\] is nan"),
    ([0.5, 1.2], [1, 1], r"p\[1\] is 1.2"),
    ([0.5, -0.1], [1, 0], r"p\[1\] is -0.1"),
    (["high", "low"], [1, 0], "p must be numbers"),
    ([0.5, 0.6], [1, math.nan], "label 1 is nan"),
    ([0.5, 0.6], [1, 2], "label 1 is 2.0"),
    ([0.5, 0.6], ["yes", "no"], "labels must be 1"),
    ([0.5, 0.6], [1], "2 scores but 1 labels"),
    ([], [], "no labelled answers"),
])
def test_bad_scores_and_labels_name_the_entry(p, right, message):
    with pytest.raises(DatasetError, match=message):
        certify(p, right, alpha=0.1)


def test_traffic_scores_are_checked_too():
    with pytest.raises(DatasetError, match=r"traffic\[0\] is nan"):
        certify(P, RIGHT, alpha=0.1, traffic=[math.nan])


def test_labels_all_right_certify_everything_kept():
    answer = certify(P, np.ones_like(RIGHT), alpha=0.05)
    assert isinstance(answer, Certificate) and answer.tau == 0.001 and answer.kept == 200
    assert answer.kept_errors == 0 and answer.upper_bound <= 0.05


def test_labels_all_wrong_certify_nothing_and_say_more_labels_will_not_help():
    answer = certify(P, np.zeros_like(RIGHT), alpha=0.2)
    assert isinstance(answer, Infeasible) and answer.reason == "not certifiable"
    assert answer.base_error == 1.0 and answer.least_escalation == 1.0
    assert answer.smallest_alpha is None and answer.more_labels is None
    assert "more labels would not help" in answer.message


def test_all_p_equal_is_one_threshold_keeping_all_or_nothing():
    p = np.full(500, 0.62)  # a base-rate calibrator
    right = (np.arange(500) % 10 != 0).astype(int)  # 10% wrong
    answer = certify(p, right, alpha=0.15)
    assert isinstance(answer, Certificate) and answer.kept == 500 and answer.tau <= 0.62
    refused = certify(p, right, alpha=0.05)
    assert isinstance(refused, Infeasible) and refused.least_escalation == pytest.approx(0.05 / 0.95)


def test_thresholds_that_keep_nothing_do_not_stop_the_sequence():
    p = np.full(300, 0.2)  # every threshold above 0.2 keeps no answer
    answer = certify(p, np.ones(300, dtype=int), alpha=0.05)
    assert isinstance(answer, Certificate) and answer.kept == 300


def test_heavy_ties_move_together():
    p = np.repeat([0.3, 0.6, 0.9], 200)
    right = np.concatenate([np.zeros(200), (np.arange(200) % 20 != 0), np.ones(200)]).astype(int)
    answer = certify(p, right, alpha=0.1)
    assert isinstance(answer, Certificate)
    assert answer.kept == 400 and answer.tau > 0.3 and answer.tau <= 0.6


def test_fewer_labels_than_any_promise_needs():
    answer = certify(P[:10], np.ones(10, dtype=int), alpha=0.1)
    assert isinstance(answer, Infeasible) and answer.reason == "too few labels"
    assert "needs 29 kept labelled answers" in answer.message
    assert answer.more_kept_labels == 19


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router().save(tmp_path_factory.mktemp("router") / "router")


@pytest.mark.parametrize(("flags", "status", "message"), [
    (["--certify"], 2, "--max-error: --certify needs"),
    (["--certify", "--max-error", "0"], 2, "--max-error: must be a finite number"),
    (["--certify", "--max-error", "1"], 2, "--max-error: must be a finite number"),
    (["--certify", "--max-error", "nan"], 2, "--max-error"),
    (["--certify", "--max-error", "ten"], 2, "--max-error"),
    (["--certify", "--max-error", "0.1", "--confidence", "1"], 2, "--confidence: must be a finite number"),
    (["--certify", "--max-error", "0.1", "--confidence", "95"], 2, "--confidence: must be a finite number"),
    (["--certify", "--max-error", "0.1", "--max-trigger-rate", "-1"], 2, "--max-trigger-rate"),
    (["--certify", "--max-error", "0.1", "--debate-tokens", "10"], 2, "--debate-tokens: goes with"),
    (["--certify", "--max-error", "0.1"], 2, "--corpus: give the labelled answers"),
    (["--certify", "--max-error", "0.1", "--log", "LOG", "--corpus", "x.jsonl"], 2, "--log: fit on"),
    (["--target-trigger-rate", "0.2", "--max-error", "0.1", "--log", "LOG"], 2,
     "--max-error: goes with --certify"),
    (["--certify", "--max-error", "0.1", "--log", "MISSING"], 3, "not found"),
    (["--certify", "--max-error", "0.1", "--log", "OTHER"], 3, "holds decisions of another"),
    (["--certify", "--max-error", "0.1", "--log", "FEW"], 3, "not certifiable (too few labels)"),
])
def test_hostile_certify_flags(router_dir, tmp_path, capsys, flags, status, message):
    router = Router.load(router_dir)
    write_log(tmp_path / "log.db", router, count=50, labelled=40)
    write_log(tmp_path / "other.db", router, count=50, labelled=40, router_hash="ef" * 32)
    write_log(tmp_path / "few.db", router, count=50, labelled=5)
    paths = {"LOG": str(tmp_path / "log.db"), "OTHER": str(tmp_path / "other.db"),
             "FEW": str(tmp_path / "few.db"), "MISSING": str(tmp_path / "missing.db")}
    argv = [paths.get(flag, flag) for flag in flags]
    assert main(["calibrate", "--router", str(router_dir), *argv, "--out", str(tmp_path / "v")]) == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error") or ": error:" in line]) <= 1
    assert not (tmp_path / "v").exists()
