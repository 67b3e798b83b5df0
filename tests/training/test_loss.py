"""FocusCal (SPEC §5): each term equals the formula evaluated by hand, p = 0 and 1 included."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from imad.errors import ConfigError
from training.loss import (
    LOG_EPS,
    LOSSES,
    FocusCalConfig,
    asymmetric_focal_loss,
    bce_loss,
    calibration_loss,
    class_balanced_alpha,
    compute_loss,
    confidence_penalty,
    focuscal_loss,
)
from training.metrics import expected_calibration_error

# Six rows: p exactly 0 and 1 for each label, one interior p per label (none on a bin edge).
P = [0.0, 1.0, 0.9, 0.25, 1.0, 0.0]
Y = [1, 0, 1, 0, 1, 0]
U = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
LOG_FLOOR = math.log(LOG_EPS)  # log of the clamped probability, ≈ −16.118

# L_AF by hand: −α_y (1 − p_t)^γ log p_t, α0 = 2 (y = 0), α1 = 1 (y = 1), γ = 2.
AF_ROWS = [
    -1 * 1.0**2 * LOG_FLOOR,           # y=1, p=0    → p_t = 0 (clamped)
    -2 * 1.0**2 * LOG_FLOOR,           # y=0, p=1    → p_t = 0 (clamped)
    -1 * 0.1**2 * math.log(0.9),       # y=1, p=0.9  → p_t = 0.9
    -2 * 0.25**2 * math.log(0.75),     # y=0, p=0.25 → p_t = 0.75
    0.0,                               # y=1, p=1    → p_t = 1
    0.0,                               # y=0, p=0    → p_t = 1
]
AF = sum(AF_ROWS) / 6
# L_CP by hand, τ = 0.7: (1 − u)² for y=0 ∧ p>τ (row 1), u² for y=1 ∧ p<τ (row 0).
CP = ((1 - 0.4) ** 2 + 0.3**2) / 6
# ECE by hand, 15 equal-width bins: {p=0: rows 0, 5}, {0.25: row 3}, {0.9: row 2}, {1: rows 1, 4}.
ECE = (2 / 6 * abs(0.5 - 0.0) + 1 / 6 * abs(0 - 0.25) + 1 / 6 * abs(1 - 0.9)
       + 2 / 6 * abs(0.5 - 1.0))
BCE = (-LOG_FLOOR - LOG_FLOOR - math.log(0.9) - math.log(0.75) - 0.0 - 0.0) / 6


def tensors(dtype=torch.float64, requires_grad=False):
    p = torch.tensor(P, dtype=dtype, requires_grad=requires_grad)
    u = torch.tensor(U, dtype=dtype, requires_grad=requires_grad)
    return p, u, torch.tensor(Y, dtype=dtype)


def test_asymmetric_focal_term_equals_hand_value():
    p, _, y = tensors()
    assert asymmetric_focal_loss(p, y).item() == pytest.approx(AF, rel=1e-12)
    spelled_out = (16.118095650958319 * 3 + 0.01 * 0.105360515657826
                   + 0.125 * 0.287682072451781) / 6
    assert math.isclose(AF, spelled_out, rel_tol=1e-12)


def test_confidence_penalty_equals_hand_value():
    p, u, y = tensors()
    assert confidence_penalty(p, u, y, tau=0.7).item() == pytest.approx(CP, rel=1e-12)
    assert math.isclose(CP, 0.075, rel_tol=1e-12)


def test_ece_term_equals_hand_value():
    p, _, y = tensors()
    assert calibration_loss(p, y, n_bins=15).item() == pytest.approx(ECE, rel=1e-12)
    assert math.isclose(ECE, 2.35 / 6, rel_tol=1e-12)


def test_focuscal_is_the_weighted_sum():
    p, u, y = tensors()
    expected = AF + 6 * CP + 5 * ECE
    assert focuscal_loss(p, u, y).item() == pytest.approx(expected, rel=1e-12)
    terms = compute_loss("focuscal", p, u, y, FocusCalConfig())
    assert (terms.focal.item(), terms.penalty.item(), terms.ece.item()) == pytest.approx(
        (AF, CP, ECE), rel=1e-12)


def test_bce_equals_hand_value():
    p, _, y = tensors()
    assert bce_loss(p, y).item() == pytest.approx(BCE, rel=1e-12)


@pytest.mark.parametrize(("name", "value"), [("focal", AF), ("penalty", CP), ("ece", ECE),
                                             ("bce", BCE), ("focuscal", AF + 6 * CP + 5 * ECE)])
def test_each_objective_alone(name, value):
    p, u, y = tensors()
    assert compute_loss(name, p, u, y, FocusCalConfig()).total.item() == pytest.approx(
        value, rel=1e-12)


def test_hyper_parameters_change_the_terms_as_the_formula_says():
    p, u, y = tensors()
    config = FocusCalConfig(alpha0=1.0, alpha1=3.0, gamma=0.0, lambda_cp=2.0, mu_ece=0.0)
    focal_by_hand = (-3 * LOG_FLOOR - 1 * LOG_FLOOR - 3 * math.log(0.9) - math.log(0.75)) / 6
    total = compute_loss("focuscal", p, u, y, config).total.item()
    assert total == pytest.approx(focal_by_hand + 2 * CP, rel=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradients_are_finite_at_p_zero_and_one(name, dtype):
    p, u, y = tensors(dtype, requires_grad=True)
    total = compute_loss(name, p, u, y, FocusCalConfig()).total
    grads = torch.autograd.grad(total, [p, u], allow_unused=True)
    used = [g for g in grads if g is not None]
    assert used and all(torch.isfinite(g).all() for g in used)


def test_gradients_are_finite_through_a_saturated_sigmoid():
    logits = torch.tensor([-200.0, 200.0, 0.3, -0.4, 50.0, -50.0], requires_grad=True)
    p = torch.sigmoid(logits)
    assert p[0].item() == 0.0 and p[1].item() == 1.0
    _, u, y = tensors(torch.float32)
    focuscal_loss(p, u, y).backward()
    assert torch.isfinite(logits.grad).all()


def test_ece_gradient_flows_through_the_bin_means():
    p, _, y = tensors(requires_grad=True)
    calibration_loss(p, y).backward()
    # Row 2 (p=0.9, y=1) is alone in its bin: d|1 − p|/N / dp = −1/6; row 3 (0.25, y=0): +1/6.
    assert p.grad[2].item() == pytest.approx(-1 / 6)
    assert p.grad[3].item() == pytest.approx(1 / 6)


def test_confidence_penalty_trains_only_u():
    p, u, y = tensors(requires_grad=True)
    confidence_penalty(p, u, y).backward()
    assert p.grad is None  # the masks select rows; p itself is not differentiated
    assert u.grad[1].item() == pytest.approx(-2 * (1 - 0.4) / 6)
    assert u.grad[0].item() == pytest.approx(2 * 0.3 / 6)


def test_differentiable_ece_equals_metric_ece_on_random_data():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=500)
    p[:15] = np.linspace(0, 1, 16)[:15]  # values on the bin edges
    y = (rng.uniform(size=500) < p).astype(float)
    torch_ece = calibration_loss(torch.from_numpy(p), torch.from_numpy(y)).item()
    assert torch_ece == pytest.approx(expected_calibration_error(y, p), rel=1e-12)


def test_class_balanced_alpha_is_inverse_frequency():
    assert class_balanced_alpha(np.array([1, 1, 1, 0])) == pytest.approx((2.0, 4 / 6))
    with pytest.raises(ConfigError, match="class_balanced_alpha"):
        class_balanced_alpha(np.array([1, 1]))


def test_unknown_loss_and_bad_hyper_parameters_are_named():
    p, u, y = tensors()
    with pytest.raises(ConfigError, match="loss: unknown loss 'hinge'"):
        compute_loss("hinge", p, u, y, FocusCalConfig())
    with pytest.raises(ConfigError) as error:
        FocusCalConfig(tau=1.0)
    assert error.value.field == "tau"
    with pytest.raises(ConfigError) as error:
        FocusCalConfig(gamma=-1.0)
    assert error.value.field == "gamma"


def test_defaults_are_the_spec_ones():
    assert FocusCalConfig() == FocusCalConfig(alpha0=2, alpha1=1, gamma=2, tau=0.7, lambda_cp=6,
                                              mu_ece=5, n_bins=15)
