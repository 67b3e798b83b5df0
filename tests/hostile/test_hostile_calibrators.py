"""Hostile table: fitting inputs and damaged calibrator sections are typed errors, never a crash."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from imad.errors import CheckpointError, ConfigError
from imad.router.calibrators import calibrator_from_dict, fit_calibrator

GOOD_SCORES = list(np.linspace(0.1, 0.9, 20))
GOOD_LABELS = [0, 1] * 10

FIT_CASES = [
    ("labels not 0/1", GOOD_SCORES, [0, 2] * 10, "platt", "expected 0 or 1"),
    ("labels as text", GOOD_SCORES, ["1", "0"] * 10, "platt", "expected 0 or 1"),
    ("labels NaN", GOOD_SCORES, [float("nan")] * 20, "isotonic", "expected 0 or 1"),
    ("too few", GOOD_SCORES[:9], GOOD_LABELS[:9], "platt", "at least 10"),
    ("one class", GOOD_SCORES, [1] * 20, "isotonic", "all 20 answers are right"),
    ("one class wrong", GOOD_SCORES, [0] * 20, "temperature", "all 20 answers are wrong"),
    ("no labels", GOOD_SCORES, None, "platt", "needs 0/1 labels"),
    ("length mismatch", GOOD_SCORES, GOOD_LABELS[:-1], "platt", "19 labels for 20"),
    ("NaN score", [float("nan")] + GOOD_SCORES[1:], GOOD_LABELS, "platt", "not finite"),
    ("inf score", [float("inf")] + GOOD_SCORES[1:], GOOD_LABELS, "platt", "not finite"),
    ("score above 1", [1.5] + GOOD_SCORES[1:], GOOD_LABELS, "platt", "numbers in"),
    ("huge integer score", [10**400] + GOOD_SCORES[1:], GOOD_LABELS, "platt", "numbers"),
    ("text score", ["x"] + GOOD_SCORES[1:], GOOD_LABELS, "platt", "numbers"),
    ("no scores", [], [], "platt", "non-empty"),
    ("2-D scores", [[0.5, 0.5]] * 20, GOOD_LABELS, "platt", "1-D"),
    ("unknown method", GOOD_SCORES, GOOD_LABELS, "beta", "method: must be one of 'identity'"),
    ("prior shift without a prior", GOOD_SCORES, None, "prior_shift", "training accuracy"),
]


@pytest.mark.parametrize("name,scores,labels,method,message", FIT_CASES, ids=[c[0] for c in FIT_CASES])
def test_bad_fit_inputs_are_config_errors(name, scores, labels, method, message) -> None:
    with pytest.raises(ConfigError, match=message):
        fit_calibrator(scores, labels, method)


@pytest.mark.parametrize("prior", [0.0, 1.0, float("nan"), 10**400, "0.5", True, -1])
def test_bad_training_prior_is_a_config_error(prior) -> None:
    with pytest.raises(ConfigError, match="training_prior"):
        fit_calibrator(GOOD_SCORES, method="prior_shift", training_prior=prior)


GOOD = {"kind": "platt", "parameters": {"slope": 1.2, "intercept": -0.3},
        "fitted_on": {"method": "platt", "n_answers": 50, "n_correct": 12, "sources": ["a.jsonl"],
                      "estimated_accuracy": None}}


def _with(path: tuple, value) -> dict:
    data = copy.deepcopy(GOOD)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


_DELETE = object()

DAMAGED = [
    ("not an object", [1, 2]),
    ("unknown kind", _with(("kind",), "beta")),
    ("kind not text", _with(("kind",), 3)),
    ("slope NaN", _with(("parameters", "slope"), float("nan"))),
    ("slope inf", _with(("parameters", "slope"), float("inf"))),
    ("slope 1e308", _with(("parameters", "slope"), 1e308)),
    ("slope 400 digits", _with(("parameters", "slope"), 10**400)),
    ("slope bool", _with(("parameters", "slope"), True)),
    ("slope text", _with(("parameters", "slope"), "1.2")),
    ("slope missing", _with(("parameters", "slope"), _DELETE)),
    ("extra parameter", _with(("parameters", "bias"), 1.0)),
    ("parameters a list", _with(("parameters",), [1.2, -0.3])),
    ("unknown key", _with(("surprise",), 1)),
    ("fitted_on a string", _with(("fitted_on",), "yesterday")),
    ("n_answers negative", _with(("fitted_on", "n_answers"), -1)),
    ("n_answers huge", _with(("fitted_on", "n_answers"), 10**400)),
    ("n_correct above n", _with(("fitted_on", "n_correct"), 51)),
    ("sources not strings", _with(("fitted_on", "sources"), [1])),
    ("method mismatch", _with(("fitted_on", "method"), "isotonic")),
    ("isotonic unsorted", {"kind": "isotonic", "parameters": {"x_thresholds": [0.5, 0.2],
                                                               "y_thresholds": [0.1, 0.3]}}),
    ("isotonic decreasing", {"kind": "isotonic", "parameters": {"x_thresholds": [0.2, 0.5],
                                                                 "y_thresholds": [0.3, 0.1]}}),
    ("isotonic lengths", {"kind": "isotonic", "parameters": {"x_thresholds": [0.2, 0.5],
                                                              "y_thresholds": [0.3]}}),
    ("isotonic empty", {"kind": "isotonic", "parameters": {"x_thresholds": [], "y_thresholds": []}}),
    ("isotonic not a list", {"kind": "isotonic", "parameters": {"x_thresholds": "0.2",
                                                                 "y_thresholds": "0.3"}}),
    ("isotonic y above 1", {"kind": "isotonic", "parameters": {"x_thresholds": [0.2],
                                                                "y_thresholds": [1.5]}}),
    ("temperature 0", {"kind": "temperature", "parameters": {"temperature": 0}}),
    ("prior 1", {"kind": "prior_shift", "parameters": {"training_prior": 1, "target_prior": 0.5}}),
    ("identity with parameters", {"kind": "identity", "parameters": {"t": 1}}),
]


@pytest.mark.parametrize("name,data", DAMAGED, ids=[c[0] for c in DAMAGED])
def test_damaged_sections_are_checkpoint_errors(name, data) -> None:
    with pytest.raises(CheckpointError):
        calibrator_from_dict(data)


def test_the_good_section_loads() -> None:
    assert calibrator_from_dict(GOOD).apply(np.array([0.5]))[0] == pytest.approx(1 / (1 + np.exp(0.3)))


@pytest.mark.parametrize("name,data", DAMAGED[:8] + DAMAGED[-4:],
                         ids=[c[0] for c in DAMAGED[:8] + DAMAGED[-4:]])
def test_a_checkpoint_with_a_damaged_calibrator_does_not_load(tmp_path, name, data) -> None:
    import json
    import shutil
    from pathlib import Path

    from imad.router import Router

    source = Path(__file__).resolve().parents[2] / "checkpoints" / "imad-router-v2"
    target = tmp_path / "damaged"
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    config["calibrator"] = data
    (target / "config.json").write_text(json.dumps(config))
    # A 400-digit number is refused by the JSON reader itself, before the calibrator is read.
    with pytest.raises(CheckpointError, match="calibrator|an integer of 401 digits"):
        Router.load(target)
