"""Hostile table: fitting inputs and damaged calibrator sections are typed errors, never a crash."""

from __future__ import annotations

import copy
import warnings
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from imad.errors import CheckpointError, ConfigError
from imad.router.calibrators import (
    CALIBRATORS,
    DecreasingCalibratorWarning,
    IsotonicCalibrator,
    PlattCalibrator,
    PriorShiftCalibrator,
    TemperatureCalibrator,
    calibrator_from_dict,
    fit_calibrator,
)

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
    ("unknown method", GOOD_SCORES, GOOD_LABELS, "beta", "method: must be one of 'auto', 'identity'"),
    # issue 34: what numpy would coerce or crash on is refused, naming what it got
    ("huge integer score, temperature", [10**400] + GOOD_SCORES[1:], GOOD_LABELS, "temperature",
     "too large"),
    ("Fraction scores", [Fraction(1, 3)] * 20, GOOD_LABELS, "platt", "got a Fraction at index 0"),
    ("Decimal score", [Decimal("0.5")] + GOOD_SCORES[1:], GOOD_LABELS, "platt", "got a Decimal"),
    ("complex scores", [0.5 + 0j] * 20, GOOD_LABELS, "platt", "got a complex at index 0"),
    ("bool scores", [True, False] * 10, GOOD_LABELS, "isotonic", "got a bool at index 0"),
    ("None score", [None] + GOOD_SCORES[1:], GOOD_LABELS, "platt", "got a NoneType at index 0"),
    ("object array", np.array(GOOD_SCORES, dtype=object), GOOD_LABELS, "platt", "dtype object"),
    ("text array", np.array(["0.5"] * 20), GOOD_LABELS, "platt", "dtype <U3"),
    ("complex array", np.full(20, 0.5 + 0j), GOOD_LABELS, "platt", "dtype complex128"),
    ("2-D array", np.full((20, 1), 0.5), GOOD_LABELS, "platt", r"shape \(20, 1\)"),
    ("2-D array, prior shift", np.full((4, 5), 0.5), None, "prior_shift", r"shape \(4, 5\)"),
    ("scores a string", "0.5", GOOD_LABELS, "platt", "got str"),
    ("scores a dict", {"a": 0.5}, GOOD_LABELS, "platt", "got dict"),
    ("labels 2-D", GOOD_SCORES, np.array(GOOD_LABELS).reshape(10, 2), "platt", r"shape \(10, 2\)"),
    ("labels object array", GOOD_SCORES, np.array([Fraction(1)] * 10 + [0] * 10, dtype=object),
     "platt", "expected 0 or 1"),
    ("labels a string", GOOD_SCORES, "01" * 10, "platt", "got str"),
    ("prior shift without a prior", GOOD_SCORES, None, "prior_shift", "training accuracy"),
    # issue 35: auto (the default) and base_rate take one class, not too few labels or bad ones
    ("auto, too few labels", GOOD_SCORES[:9], GOOD_LABELS[:9], "auto", "auto needs at least 10"),
    ("auto, no labels", GOOD_SCORES, None, "auto", "auto needs 0/1 labels"),
    ("auto, labels not 0/1", GOOD_SCORES, [0, 2] * 10, "auto", "expected 0 or 1"),
    ("auto, NaN score", [float("nan")] + GOOD_SCORES[1:], GOOD_LABELS, "auto", "not finite"),
    ("auto, length mismatch", GOOD_SCORES, GOOD_LABELS[:-1], "auto", "19 labels for 20"),
    ("base rate, too few labels", GOOD_SCORES[:3], [1, 0, 1], "base_rate", "at least 10"),
    ("default, too few labels", GOOD_SCORES[:9], GOOD_LABELS[:9], None, "auto needs at least 10"),
]


@pytest.mark.parametrize("name,scores,labels,method,message", FIT_CASES, ids=[c[0] for c in FIT_CASES])
def test_bad_fit_inputs_are_config_errors(name, scores, labels, method, message) -> None:
    with pytest.raises(ConfigError, match=message):
        if method is None:
            fit_calibrator(scores, labels)
        else:
            fit_calibrator(scores, labels, method)


AUTO_EDGE_CASES = [  # what auto is given that leaves it nothing to fit but the base rate
    ("one class, all right", GOOD_SCORES, [1] * 20, "all 20 labelled answers are right", 20.5 / 21),
    ("one class, all wrong", GOOD_SCORES, [0] * 20, "all 20 labelled answers are wrong", 0.5 / 21),
    ("rarer class under 5", GOOD_SCORES, [1, 1, 1] + [0] * 17, "only 3 of the rarer class", 3.5 / 21),
    ("constant scores", [0.4] * 20, GOOD_LABELS, "the same score", 10.5 / 21),
    ("scores all 0", [0.0] * 20, GOOD_LABELS, "the same score", 10.5 / 21),
    ("scores all 1, bools as labels", [1.0] * 20, [True, False] * 10, "the same score", 10.5 / 21),
]


@pytest.mark.parametrize("name,scores,labels,reason,rate", AUTO_EDGE_CASES,
                         ids=[c[0] for c in AUTO_EDGE_CASES])
def test_auto_falls_back_to_the_base_rate_and_says_why(name, scores, labels, reason, rate) -> None:
    fitted = fit_calibrator(scores, labels)
    assert fitted.kind == "base_rate" and fitted.fitted_on.chosen_by == "auto"
    assert reason in fitted.fitted_on.reason
    assert fitted.apply(np.array([0.0, 0.5, 1.0])) == pytest.approx([rate] * 3)


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
    # issue 35: the base rate and auto's record of its choice
    ("base rate 0", {"kind": "base_rate", "parameters": {"rate": 0.0}}),
    ("base rate 1.5", {"kind": "base_rate", "parameters": {"rate": 1.5}}),
    ("base rate text", {"kind": "base_rate", "parameters": {"rate": "0.3"}}),
    ("base rate missing", {"kind": "base_rate", "parameters": {}}),
    ("kind auto", {"kind": "auto", "parameters": {}}),
    ("chosen_by unknown", _with(("fitted_on", "chosen_by"), "magic")),
    ("chosen_by a number", _with(("fitted_on", "chosen_by"), 1)),
    ("reason a number", _with(("fitted_on", "reason"), 3)),
    ("reason blank", _with(("fitted_on", "reason"), "  ")),
    ("reason huge", _with(("fitted_on", "reason"), "x" * 5000)),
    ("method auto", _with(("fitted_on", "method"), "auto")),
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


APPLY_CASES = [
    ("object array of None", np.array([None], dtype=object), "dtype object"),
    ("object array of floats", np.array([0.5, 0.2], dtype=object), "dtype object"),
    ("400-digit integer", [10**400], "too large"),
    ("Fraction", [Fraction(1, 2)], "got a Fraction"),
    ("complex", [0.5 + 0.5j], "got a complex"),
    ("text", ["0.5"], "got a str"),
    ("2-D array", np.full((3, 1), 0.5), "shape (3, 1)"),
    ("2-D list", [[0.5], [0.2]], "1-D"),
    ("bool array", np.array([True, False]), "dtype bool"),
]
APPLIERS = [CALIBRATORS["identity"](), TemperatureCalibrator(2.0), PlattCalibrator(1.0, 0.0),
            IsotonicCalibrator((0.0, 1.0), (0.2, 0.8)), PriorShiftCalibrator(0.5, 0.3)]


@pytest.mark.parametrize("calibrator", APPLIERS, ids=[c.kind for c in APPLIERS])
@pytest.mark.parametrize("name,scores,message", APPLY_CASES, ids=[c[0] for c in APPLY_CASES])
def test_apply_refuses_what_is_not_real_scores(calibrator, name, scores, message) -> None:
    with pytest.raises(ConfigError, match=f"raw_scores: .*{message.replace('(', '.').replace(')', '.')}"):
        calibrator.apply(scores)


@pytest.mark.parametrize("calibrator", APPLIERS, ids=[c.kind for c in APPLIERS])
def test_apply_keeps_non_finite_and_integer_scores(calibrator) -> None:
    out = calibrator.apply([0, 1, float("nan")])
    assert out.shape == (3,) and np.isnan(out[2]) and np.all((out[:2] >= 0) & (out[:2] <= 1))


OUT_OF_RANGE = [("negative", [-3.0], 0.0), ("above 1", [7.0], 1.0),
                ("uint8 255", np.array([255], np.uint8), 1.0), ("-inf stays", [-float("inf")], -float("inf"))]


@pytest.mark.parametrize("calibrator", APPLIERS, ids=[c.kind for c in APPLIERS])
@pytest.mark.parametrize("name,scores,edge", OUT_OF_RANGE, ids=[c[0] for c in OUT_OF_RANGE])
def test_apply_never_returns_a_probability_outside_0_1(calibrator, name, scores, edge) -> None:
    """A finite score outside [0, 1] maps as its nearest edge does (prior_shift gave -0.23 for
    -3 and identity 255 for a uint8 255); a non-finite one stays non-finite."""
    assert calibrator.apply(scores)[0] == pytest.approx(calibrator.apply([edge])[0], nan_ok=True)


PARAMETER_CASES = [
    ("Fraction slope", lambda: PlattCalibrator(Fraction(1, 2), 0.0), "calibrator.slope: must be an int "
     "or a float, got a Fraction"),
    ("Decimal intercept", lambda: PlattCalibrator(1.0, Decimal("0.1")), "got a Decimal"),
    ("complex temperature", lambda: TemperatureCalibrator(1 + 1j), "got a complex"),
    ("Fraction knot", lambda: IsotonicCalibrator((0.0, Fraction(1, 2)), (0.1, 0.2)), "got a Fraction"),
    ("bool prior", lambda: PriorShiftCalibrator(True, 0.5), "training_prior: must be a finite number"),
    ("subnormal slope", lambda: PlattCalibrator(1e-320, 0.0), "a subnormal number"),
]


@pytest.mark.parametrize("name,build,message", PARAMETER_CASES, ids=[c[0] for c in PARAMETER_CASES])
def test_parameters_are_not_coerced(name, build, message) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", ".").replace(")", ".")):
        build()


@pytest.mark.parametrize("slope", [-1000, -5, -0.01])
def test_a_decreasing_platt_map_is_stated_on_load_and_in_the_card(tmp_path, slope) -> None:
    from imad.router import Router
    from imad.router.card import render_model_card

    section = {"kind": "platt", "parameters": {"slope": slope, "intercept": 0.0}}
    with pytest.warns(DecreasingCalibratorWarning, match="map decreases"):
        calibrator = calibrator_from_dict(section)
    assert calibrator.decreasing and calibrator.apply([0.2])[0] > calibrator.apply([0.8])[0]
    config = _shipped_config()
    config["calibrator"] = section
    card = render_model_card(config)
    assert "**The map decreases**" in card and f"slope = {float(slope):.6g}" in card
    target = _shipped_copy(tmp_path, config)
    with pytest.warns(DecreasingCalibratorWarning):
        Router.load(target)


def test_an_increasing_map_loads_quietly_and_its_card_says_nothing_of_decreasing(tmp_path) -> None:
    from imad.router import Router
    from imad.router.card import render_model_card

    config = _shipped_config()
    config["calibrator"] = GOOD
    assert "decreases" not in render_model_card(config)
    target = _shipped_copy(tmp_path, config)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DecreasingCalibratorWarning)
        assert Router.load(target).calibrator.slope == 1.2


def _shipped_config() -> dict:
    import json

    source = Path(__file__).resolve().parents[2] / "checkpoints" / "imad-router-v2"
    return json.loads((source / "config.json").read_text())


def _shipped_copy(tmp_path, config: dict):
    import json
    import shutil

    source = Path(__file__).resolve().parents[2] / "checkpoints" / "imad-router-v2"
    target = tmp_path / "copy"
    shutil.copytree(source, target)
    (target / "config.json").write_text(json.dumps(config))
    return target


@pytest.mark.parametrize("sources", [None, 5, "medqa.jsonl", b"x", ["a", None], Path("a.jsonl")],
                         ids=["None", "int", "a string alone", "bytes", "a None inside", "a Path alone"])
def test_sources_that_are_not_a_list_of_names_are_refused(sources) -> None:
    """None and 5 were a bare TypeError; "medqa.jsonl" was recorded as 11 one-letter sources."""
    with pytest.raises(ConfigError, match="^sources: expected a list of file or data set names"):
        fit_calibrator(GOOD_SCORES, GOOD_LABELS, "platt", sources=sources)


def test_sources_are_recorded_as_given() -> None:
    fitted = fit_calibrator(GOOD_SCORES, GOOD_LABELS, "platt", sources=("a.jsonl", Path("b.jsonl")))
    assert fitted.fitted_on.sources == ("a.jsonl", "b.jsonl")
