"""Deferral curves on four questions, every number computed by hand (see the comments)."""

from __future__ import annotations

import numpy as np
import pytest

from imad.errors import ConfigError
from training.evaluation.deferral import deferral_curve, deferral_curves, outcomes, render_table

# q0: single right, debate right; q1: single wrong, debate right (+1 if escalated);
# q2: single wrong, debate wrong; q3: single right, debate wrong (−1 if escalated).
# Single answers cost 100 tokens each; the debates 100, 200, 300, 400 more.
DATA = outcomes([1, 0, 0, 1], [100, 100, 100, 100], [1, 1, 0, 0], [100, 200, 300, 400])
ROUTER_P = [0.9, 0.1, 0.5, 0.3]  # escalation order q1, q3, q2, q0


def test_router_gate_by_hand() -> None:
    curve = deferral_curve(ROUTER_P, DATA)
    np.testing.assert_allclose(curve.rate, [0, 0.25, 0.5, 0.75, 1])
    # k=1: q1 fixed → 3/4; k=2: q3 broken → 2/4; then q2 (wrong either way), q0 (right either way)
    np.testing.assert_allclose(curve.accuracy, [0.5, 0.75, 0.5, 0.5, 0.5])
    # 400 single tokens, then + 200 (q1), + 400 (q3), + 300 (q2), + 100 (q0); over 4 questions
    np.testing.assert_allclose(curve.tokens, [100, 150, 250, 325, 350])
    # trapezoids of width 1/4: (0.625 + 0.625 + 0.5 + 0.5) / 4
    assert curve.area == pytest.approx(0.5625, abs=1e-12)


def test_random_gate_is_the_expectation() -> None:
    curve = deferral_curve(np.zeros(4), DATA)
    # the gains sum to 0 (+1 −1): every rate keeps 2/4 right in expectation
    np.testing.assert_allclose(curve.accuracy, [0.5] * 5)
    # each question escalated with probability k/4: 100 + k/4 · 1000/4
    np.testing.assert_allclose(curve.tokens, [100, 162.5, 225, 287.5, 350])
    assert curve.area == pytest.approx(0.5, abs=1e-12)


def test_oracle_gate_escalates_the_wrong_answers_first() -> None:
    curve = deferral_curve(DATA.single_correct, DATA)
    # k=1: half of q1 (+1) and q2 (0) → +0.5; k=2: both → +1; k=3: plus half of q0 (0), q3 (−1)
    np.testing.assert_allclose(curve.accuracy, [0.5, 0.625, 0.75, 0.625, 0.5])
    # k=1: (200 + 300)/2; k=2: 500; k=3: 500 + (100 + 400)/2
    np.testing.assert_allclose(curve.tokens, [100, 162.5, 225, 287.5, 350])
    # (0.5625 + 0.6875 + 0.6875 + 0.5625) / 4
    assert curve.area == pytest.approx(0.625, abs=1e-12)


def test_ties_inside_a_score_split_evenly() -> None:
    # q1 alone first, then q2 and q3 tied, then q0: k=2 takes half of q2 (0) and q3 (−1)
    curve = deferral_curve([0.9, 0.1, 0.5, 0.5], DATA)
    np.testing.assert_allclose(curve.accuracy, [0.5, 0.75, 0.625, 0.5, 0.5])
    np.testing.assert_allclose(curve.tokens, [100, 150, 237.5, 325, 350])


def test_four_gates_and_table() -> None:
    curves = deferral_curves(DATA, ROUTER_P, [0.2, 0.8, 0.8, 0.2])
    assert list(curves) == ["router", "confidence_initial", "random", "oracle"]
    # confidence: q0, q3 tied lowest (gains 0, −1), then q1, q2 (+1, 0)
    np.testing.assert_allclose(curves["confidence_initial"].accuracy,
                               [0.5, 0.375, 0.25, 0.375, 0.5])
    table = render_table("toy", curves)
    assert table[2] == ("| router p | 0.562 | 0.500 | 100 | 0.750 | 150 | 0.500 | 250 | 0.500 | 325 "
                        "| 0.500 | 350 |")
    assert table[5].startswith("| oracle (wrong first) | 0.625 |")


@pytest.mark.parametrize(("arrays", "message"), [
    (([1, 0], [1, 1], [1], [1, 1]), "one value per question"),
    (([], [], [], []), "one value per question"),
    (([1], [float("nan")], [1], [1]), "single_tokens"),
    (([1], [1], [1], [-1]), "debate_tokens"),
])
def test_bad_outcomes_are_typed_errors(arrays: tuple, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        outcomes(*arrays)


@pytest.mark.parametrize(("score", "message"), [
    ([0.1, 0.2], "4 questions"),
    ([0.1, float("nan"), 0.2, 0.3], "finite"),
])
def test_bad_scores_are_typed_errors(score: list[float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        deferral_curve(score, DATA)


def test_table_interpolates_between_the_points():
    # three questions: rates 0, 1/3, 2/3, 1; at 0.5 halfway between k = 1 and k = 2
    data = outcomes([0, 0, 1], [10, 10, 10], [1, 0, 1], [30, 60, 90])
    curves = {"router": deferral_curve([0.1, 0.2, 0.3], data)}
    # k=1: 2/3 right, tokens 10 + 30/3 = 20; k=2: 2/3, 10 + 90/3 = 40 → at 0.5: 0.667, 30
    assert "| 0.667 | 30 |" in render_table("three", curves)[2]
