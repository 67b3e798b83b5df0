"""`imad.decide.certify`: the certified threshold, its exact tests against scipy and brute force,
the feasibility answer, the certificate's hash, and the live check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta, binom

from imad.decide.certify import GRID, Certificate, Infeasible, certify, live_check, risk_curve
from imad.decide.certify.binomial import critical_errors, least_kept, upper_bound
from imad.decide.certify.feasibility import least_escalation
from imad.errors import ConfigError


def scored(n: int, seed: int = 0, separation: float = 2.0, base_error: float = 0.3):
    rng = np.random.default_rng(seed)
    right = (rng.random(n) >= base_error).astype(int)
    z = np.where(right == 1, separation / 2, -separation / 2) + rng.normal(size=n)
    return 1 / (1 + np.exp(-z)), right


def brute_force_tau(p, right, alpha, delta):
    """The fixed sequences written out one threshold at a time with scipy's binomial cdf: up to
    four starts (strictest testable at δ/4; a quarter, a half, all kept), each at δ/K."""
    p, right = np.asarray(p), np.asarray(right)
    counts = [(int((p >= t).sum()), int(((p >= t) & (right == 0)).sum())) for t in GRID]

    def strictest_keeping(least):
        keeping = [j for j, (m, _) in enumerate(counts) if m >= least]
        return max(keeping) if keeping else None

    least = math.ceil(math.log(delta / 4) / math.log(1 - alpha))
    starts = {strictest_keeping(max(least, math.ceil(share * len(p))))
              for share in (0, 0.25, 0.5, 1)} - {None}
    level = delta / len(starts) if starts else delta
    if not starts:
        starts = {strictest_keeping(least_kept(alpha, delta))} - {None}
    taus = []
    for start in starts:
        tau = None
        for j in range(start, -1, -1):
            m, e = counts[j]
            if binom.cdf(e, m, alpha) > level:
                break
            tau = float(GRID[j])
        if tau is not None:
            taus.append(tau)
    return min(taus) if taus else None


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_the_certified_tau_equals_the_sequence_written_out(seed, alpha):
    p, right = scored(400, seed)
    answer = certify(p, right, alpha=alpha)
    expected = brute_force_tau(p, right, alpha, 0.05)
    if expected is None:
        assert isinstance(answer, Infeasible)
    else:
        assert isinstance(answer, Certificate) and answer.tau == expected
        kept = p >= answer.tau
        assert answer.kept == kept.sum() and answer.kept_errors == (right[kept] == 0).sum()
        assert answer.upper_bound == pytest.approx(
            beta.ppf(1 - answer.test_level, answer.kept_errors + 1,
                     answer.kept - answer.kept_errors), rel=1e-12)
        assert answer.upper_bound <= alpha


def test_critical_counts_are_the_largest_rejected_ones():
    for m in (1, 2, 28, 29, 30, 100, 1000):
        critical = int(critical_errors(m, 0.1, 0.05))
        if critical >= 0:
            assert binom.cdf(critical, m, 0.1) <= 0.05
        assert binom.cdf(critical + 1, m, 0.1) > 0.05


def test_29_kept_answers_with_no_error_certify_ten_percent_and_28_do_not():
    assert least_kept(0.1, 0.05) == 29
    assert upper_bound(0, 29, 0.05) <= 0.1 < upper_bound(0, 28, 0.05)
    assert isinstance(certify(np.full(29, 0.8), np.ones(29), alpha=0.1), Certificate)
    answer = certify(np.full(28, 0.8), np.ones(28), alpha=0.1)
    assert isinstance(answer, Infeasible) and answer.reason == "too few labels"
    assert "needs 29 kept labelled answers" in answer.message


def test_the_curve_counts_answers_at_or_above_each_threshold():
    curve = risk_curve([0.0005, 0.001, 0.5, 0.5, 0.9995], [1, 0, 0, 1, 1])
    assert curve.kept[0] == 4 and curve.errors[0] == 2  # τ = 0.001 keeps p = 0.001
    assert curve.kept[GRID.tolist().index(0.5)] == 3
    assert curve.kept[GRID.tolist().index(0.501)] == 1 and curve.kept[-1] == 1


def test_an_infeasible_answer_gives_the_feasibility_bound_in_numbers():
    p, right = scored(300, 1, separation=0.5, base_error=0.72)
    answer = certify(p, right, alpha=0.1)
    assert isinstance(answer, Infeasible) and answer.reason == "not certifiable"
    mu = 1 - right.mean()
    assert answer.base_error == pytest.approx(mu)
    assert answer.least_escalation == pytest.approx((mu - 0.1) / 0.9)
    assert f"{(mu - 0.1) / 0.9:.1%}" in answer.message
    assert answer.smallest_alpha is not None and answer.smallest_alpha > 0.1
    at_smallest = certify(p, right, alpha=answer.smallest_alpha)
    assert isinstance(at_smallest, Certificate)
    assert isinstance(certify(p, right, alpha=round(answer.smallest_alpha - 0.001, 3)), Infeasible)


def test_more_labels_at_the_same_curve_certify_what_was_asked():
    p, right = scored(120, 3, separation=3.0, base_error=0.3)
    answer = certify(p, right, alpha=0.05)
    assert isinstance(answer, Infeasible) and answer.more_labels is not None
    repeats = math.ceil((answer.more_labels + 120) / 120) + 1  # the same curve, more labels
    assert isinstance(certify(np.tile(p, repeats), np.tile(right, repeats), alpha=0.05), Certificate)


def test_least_escalation_is_zero_when_the_base_error_is_under_alpha():
    assert least_escalation(0.05, 0.1) == 0.0
    assert least_escalation(0.72, 0.1) == pytest.approx(0.62 / 0.9)


def test_the_budget_is_checked_on_the_traffic_scores():
    p, right = scored(500, 2)
    certificate = certify(p, right, alpha=0.1)
    assert isinstance(certificate, Certificate)
    traffic = np.concatenate([p, np.full(500, 0.999)])
    with_traffic = certify(p, right, alpha=0.1, traffic=traffic, unparsed=10)
    assert with_traffic.tau == certificate.tau
    assert with_traffic.escalation_rate == pytest.approx(
        (np.sum(traffic < certificate.tau) + 10) / 1010)
    refused = certify(p, right, alpha=0.1, max_trigger_rate=certificate.escalation_rate / 2)
    assert isinstance(refused, Infeasible) and refused.reason == "budget"
    assert refused.escalation_rate == pytest.approx(certificate.escalation_rate)


def test_labels_of_kept_answers_only_certify_nothing_below_the_lowest_labelled_p():
    p, right = scored(2000, 4, separation=3.0, base_error=0.1)
    kept_only = p >= 0.6
    answer = certify(p[kept_only], right[kept_only], alpha=0.2, traffic=p)
    assert isinstance(answer, Certificate)
    assert answer.tau <= p[kept_only].min() < answer.tau + 0.001
    assert "no label speaks for them" in answer.warnings[0]
    alone = certify(p[kept_only], right[kept_only], alpha=0.2)
    assert alone.warnings == () and alone.tau <= answer.tau


def test_the_certificate_round_trips_and_a_changed_field_is_refused():
    certificate = certify(*scored(500, 5), alpha=0.1)
    data = certificate.to_dict()
    assert Certificate.from_dict(data) == certificate
    assert len(certificate.hash) == 64
    with pytest.raises(ConfigError, match="certificate: is damaged"):
        Certificate.from_dict({**data, "tau": round(data["tau"] - 0.1, 3)})
    with pytest.raises(ConfigError, match="certificate: is damaged"):
        Certificate.from_dict({**data, "hash": "0" * 64})
    with pytest.raises(ConfigError, match="missing"):
        Certificate.from_dict({k: v for k, v in data.items() if k != "alpha"})


def test_the_same_labels_give_the_same_certificate_bytes():
    p, right = scored(300, 6, separation=3.0)
    assert certify(p, right, alpha=0.1).hash == certify(list(p), list(right), alpha=0.1).hash


def test_the_live_check_waits_under_the_promise_and_rejects_after_a_jump():
    rng = np.random.default_rng(7)
    calm = (rng.random(3000) < 0.05).astype(int)
    assert not live_check(calm, 0.1, 0.05).violated
    jumped = np.concatenate([calm[:500], (rng.random(1000) < 0.2).astype(int)])
    check = live_check(jumped, 0.1, 0.05)
    assert check.violated and 500 < check.violated_at < 1000
    assert check.labels == 1500 and check.errors == jumped.sum()
    assert "violated at label" in check.evidence()


def test_the_live_check_reads_the_same_state_from_the_same_labels():
    labels = (np.random.default_rng(8).random(700) < 0.3).astype(int)
    first, second = live_check(labels, 0.1, 0.05), live_check(labels.tolist(), 0.1, 0.05)
    assert first == second and first.violated
    prefix = live_check(labels[:first.violated_at], 0.1, 0.05)
    assert prefix.violated_at == first.violated_at
    assert live_check([], 0.1, 0.05).log_wealth == 0.0
