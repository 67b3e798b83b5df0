"""Certified thresholds (`imad.decide.certify`): validity, power, feasibility and the live check.

    python benchmarks/bench_certify.py [--json] [--quick] [--splits 2000]

Validity: for each cell (synthetic scorer of AUROC a, base error μ, n labels, α), `--splits`
seeded draws of n labelled answers; τ is certified on them and its kept error is measured on
the population (synthetic: the exact curve of the scorer; the shipped router: its committed
labelled answers, from which the n are drawn with replacement, i.e. held out is the population
itself). A violation is a certified τ whose population kept error exceeds α; its share must be
≤ δ + 3 Monte-Carlo standard errors. The naive τ (the laxest whose labelled error is ≤ α) is
measured beside it. Power: kept share of the certified τ over the kept share of the oracle τ
(the laxest grid τ whose true error is ≤ α), against Hoeffding + Bonferroni over the grid and
MAPIE's `BinaryClassificationController` (Learn-then-Test with Bonferroni). Live check: false
alarms over seeded streams at error α/2, and the detection delay after a jump to 2α.

The splits are certified in one vectorised pass (the same procedure as `imad.decide.certify.ltt`,
on arrays of splits); the first splits of every cell are certified by the library too and must
give the same τ (`library agrees` in the summary).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import norm

from imad.decide.certify import GRID, Certificate, certify, live_check
from imad.decide.certify.binomial import critical_errors, least_kept
from imad.decide.certify.curve import grid_bins
from imad.decide.certify.feasibility import START_SHARES

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "benchmarks" / "cache" / "certify_scores.json"
AUROCS = (0.5, 0.7, 0.9)
BASE_ERRORS = (0.1, 0.3, 0.6)
SIZES = (50, 200, 1000)
ALPHAS = (0.05, 0.1, 0.2)
DELTA = 0.05
LIBRARY_CHECKS = 20


def synthetic_population(auroc: float, base_error: float):
    """Scores p = sigmoid(z), z ~ N(±d/2, 1) for right/wrong answers, AUROC Φ(d/√2); returns a
    sampler and the exact kept error and kept share at every grid τ."""
    d = math.sqrt(2.0) * norm.ppf(auroc)
    cut = np.log(GRID / (1.0 - GRID))
    kept_right, kept_wrong = norm.sf(cut - d / 2), norm.sf(cut + d / 2)
    share = (1 - base_error) * kept_right + base_error * kept_wrong
    with np.errstate(invalid="ignore", divide="ignore"):
        risk = np.where(share > 0, base_error * kept_wrong / share, 0.0)

    def sample(rng: np.random.Generator, splits: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        wrong = rng.random((splits, n)) < base_error
        z = np.where(wrong, -d / 2, d / 2) + rng.standard_normal((splits, n))
        return 1.0 / (1.0 + np.exp(-z)), (~wrong).astype(np.int64)

    return sample, risk, share


def empirical_population(p: np.ndarray, right: np.ndarray):
    """Draws with replacement from labelled answers; their curve is the population's."""
    kept = (p[None, :] >= GRID[:, None])
    share = kept.mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        risk = np.where(share > 0, (kept & (right[None, :] == 0)).sum(1) / np.maximum(kept.sum(1), 1), 0.0)

    def sample(rng: np.random.Generator, splits: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        rows = rng.integers(0, p.size, (splits, n))
        return p[rows], right[rows]

    return sample, risk, share


def curves(p: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kept and wrong counts at every grid τ for every split (rows)."""
    splits = p.shape[0]
    size = GRID.size + 1
    index = grid_bins(p) + size * np.arange(splits)[:, None]
    kept = np.bincount(index.ravel(), minlength=splits * size).reshape(splits, size)
    wrong = np.bincount(index.ravel(), weights=(1 - right).ravel(),
                        minlength=splits * size).reshape(splits, size)
    flip = lambda a: np.cumsum(a[:, ::-1], axis=1)[:, ::-1][:, 1:]  # noqa: E731
    return flip(kept).astype(np.int64), flip(wrong).astype(np.int64)


def strictest_keeping(kept: np.ndarray, least: np.ndarray) -> np.ndarray:
    """Per split, the strictest grid index keeping ≥ least (−1: none); kept falls along a row."""
    return (kept >= least[:, None]).sum(axis=1) - 1


def certified_indices(kept: np.ndarray, wrong: np.ndarray, alpha: float, delta: float) -> np.ndarray:
    """`ltt.certified_index` for every split at once (−1: nothing certified)."""
    splits, n = kept.shape[0], int(kept[:, 0].max())
    total = kept[:, 0]
    least = least_kept(alpha, delta / len(START_SHARES))
    starts = np.stack([strictest_keeping(kept, np.maximum(least, np.ceil(share * total)))
                       for share in START_SHARES], axis=1)
    distinct = np.array([len(set(row) - {-1}) for row in starts])
    fallback = strictest_keeping(kept, np.full(splits, least_kept(alpha, delta)))
    starts[distinct == 0, 0] = fallback[distinct == 0]
    levels = np.where(distinct == 0, 1, distinct)
    table = np.stack([critical_errors(np.arange(n + 1), alpha, delta / k) if k else
                      np.full(n + 1, -1) for k in range(5)])
    rejected = wrong <= table[levels[:, None], kept]
    positions = np.arange(GRID.size)
    last_bad = np.maximum.accumulate(np.where(~rejected, positions, -1), axis=1)
    best = np.full(splits, GRID.size)
    for column in range(starts.shape[1]):
        start = starts[:, column]
        ok = start >= 0
        hit = np.zeros(splits, dtype=bool)
        hit[ok] = rejected[ok, start[ok]]
        candidate = np.where(hit, last_bad[np.arange(splits), np.maximum(start, 0)] + 1, GRID.size)
        best = np.minimum(best, candidate)
    return np.where(best < GRID.size, best, -1)


def naive_indices(kept: np.ndarray, wrong: np.ndarray, alpha: float) -> np.ndarray:
    """The laxest τ whose labelled kept error is ≤ α (−1: none)."""
    ok = (kept > 0) & (wrong <= alpha * kept)
    return np.where(ok.any(axis=1), ok.argmax(axis=1), -1)


def hoeffding_indices(kept: np.ndarray, wrong: np.ndarray, alpha: float, delta: float) -> np.ndarray:
    """Hoeffding p-value exp(−2m(α − r)²) at every τ of the 0.01 grid, Bonferroni over its 99
    points (firstpass's shape, with the correction); the laxest rejected τ."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(kept > 0, wrong / np.maximum(kept, 1), 1.0)
    p_value = np.where(rate < alpha, np.exp(-2 * kept * (alpha - rate) ** 2), 1.0)
    coarse = np.isclose(GRID * 100, np.round(GRID * 100))
    ok = (p_value <= delta / coarse.sum()) & coarse
    return np.where(ok.any(axis=1), ok.argmax(axis=1), -1)


def mapie_indices(p: np.ndarray, right: np.ndarray, alpha: float, delta: float) -> np.ndarray | None:
    """MAPIE's `BinaryClassificationController` (precision ≥ 1 − α, its default Bonferroni–Holm
    and Hoeffding–Bentkus p-values) on its default 0.01 grid cut at the largest score (with the
    uncut grid a threshold keeping nothing gives a NaN p-value and nothing is returned), or None
    when MAPIE is not installed."""
    try:
        from mapie.risk_control import BinaryClassificationController, precision
    except ImportError:
        return None
    out = np.full(p.shape[0], -1)
    for row in range(p.shape[0]):
        grid = np.round(np.arange(1, 100) / 100, 2)
        controller = BinaryClassificationController(
            lambda x: np.column_stack([1 - x, x]), precision, target_level=1 - alpha,
            confidence_level=1 - delta, list_predict_params=grid[grid <= p[row].max()])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            controller.calibrate(p[row], right[row])
        tau = controller.best_predict_param
        if tau is not None and np.isfinite(tau):
            out[row] = int(np.searchsorted(GRID, tau - 1e-9))
    return out


def measure(population, risk, share, n, splits, seed, extra=0):
    rng = np.random.default_rng(seed)
    p, right = population(rng, splits, n)
    kept, wrong = curves(p, right)
    rows = {}
    for alpha in ALPHAS:
        oracle = np.flatnonzero(risk <= alpha)
        oracle_share = float(share[oracle[0]]) if oracle.size else 0.0
        found = {"imad": certified_indices(kept, wrong, alpha, DELTA),
                 "naive": naive_indices(kept, wrong, alpha)}
        if extra:
            found["hoeffding_bonferroni"] = hoeffding_indices(kept, wrong, alpha, DELTA)
            mapie = mapie_indices(p[:extra], right[:extra], alpha, DELTA)
            if mapie is not None:
                found["mapie"] = mapie
        agrees = all(_library_tau(p[k], right[k], alpha) == (GRID[i] if i >= 0 else None)
                     for k, i in enumerate(found["imad"][:LIBRARY_CHECKS]))
        row = {"alpha": alpha, "oracle_kept_share": oracle_share, "library_agrees": agrees}
        for name, index in found.items():
            certified = index >= 0
            violated = certified & (risk[np.maximum(index, 0)] > alpha)
            kept_share = np.where(certified, share[np.maximum(index, 0)], 0.0)
            row[name] = {"certified": float(certified.mean()), "violations": float(violated.mean()),
                         "kept_share": float(kept_share.mean()),
                         "power": float(kept_share.mean() / oracle_share) if oracle_share else None,
                         "splits": int(index.size)}
        rows[alpha] = row
    return rows


def _library_tau(p: np.ndarray, right: np.ndarray, alpha: float) -> float | None:
    answer = certify(p, right, alpha=alpha, delta=DELTA)
    return answer.tau if isinstance(answer, Certificate) else None


def shipped_scores() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The default router's p and labels on its committed labelled answers (MedQA, MMLU, and
    its own PubMedQA/GQA validation split), cached under benchmarks/cache/."""
    if CACHE.exists():
        data = json.loads(CACHE.read_text())
        return {name: (np.array(v["p"]), np.array(v["right"])) for name, v in data.items()}
    from imad.router import Router
    from training.calibrate import validation_set

    router = Router.load()
    eval_dir = REPO / "corpus" / "smollm2-135m-instruct-q4_1" / "eval"
    out = {}
    for name, corpus in (("medqa", [str(eval_dir / "medqa.jsonl")]),
                         ("mmlu", [str(eval_dir / "mmlu.jsonl")]),
                         ("validation split", [])):
        scores = validation_set(router, corpus, str(REPO / "benchmarks" / "cache" / "features"))
        out[name] = (np.asarray(scores.p, dtype=float), np.asarray(scores.labels, dtype=int))
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps({k: {"p": v[0].tolist(), "right": v[1].tolist()} for k, v in out.items()}))
    return out


def live(alpha: float, runs: int, length: int, jump_at: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    calm = (rng.random((runs, length)) < alpha / 2).astype(int)
    false_alarms = sum(live_check(row, alpha, DELTA).violated for row in calm)
    delays = []
    for row in calm:
        stream = row.copy()
        stream[jump_at:] = (rng.random(length - jump_at) < 2 * alpha).astype(int)
        check = live_check(stream, alpha, DELTA)
        delays.append(check.violated_at - jump_at if check.violated_at and check.violated_at > jump_at
                      else (np.inf if not check.violated else 0))
    delays = np.array(delays, dtype=float)
    return {"alpha": alpha, "runs": runs, "labels": length, "false_alarm_share": false_alarms / runs,
            "median_delay": float(np.median(delays)), "p90_delay": float(np.quantile(delays, 0.9)),
            "missed": float(np.mean(~np.isfinite(delays)))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="200 splits, 200 live runs")
    parser.add_argument("--splits", type=int, default=2000)
    parser.add_argument("--power-splits", type=int, default=200,
                        help="splits of the power cells that MAPIE certifies too (slow)")
    args = parser.parse_args()
    splits = 200 if args.quick else args.splits
    runs = 200 if args.quick else 1000
    start, load = time.perf_counter(), os.getloadavg()
    margin = 3 * math.sqrt(DELTA * (1 - DELTA) / splits)
    cells = []
    for seed, (auroc, mu, n) in enumerate((a, m, n) for a in AUROCS for m in BASE_ERRORS for n in SIZES):
        population, risk, share = synthetic_population(auroc, mu)
        for row in measure(population, risk, share, n, splits, seed).values():
            cells.append({"scorer": f"synthetic AUROC {auroc}", "base_error": mu, "n": n, **row})
    shipped = []
    for offset, (name, (p, right)) in enumerate(shipped_scores().items()):
        answer = certify(p, right, alpha=0.1, delta=DELTA)
        shipped.append({"set": name, "answers": int(p.size), **answer.to_dict()})
        population, risk, share = empirical_population(p, right)
        for n in (50, 200, min(1000, p.size)):
            for row in measure(population, risk, share, n, splits, 1000 + offset).values():
                cells.append({"scorer": f"imad-router-v2 on {name} ({p.size} answers)",
                              "base_error": float(1 - right.mean()), "n": n, **row})
    power = []
    for alpha in ALPHAS:
        population, risk, share = synthetic_population(0.9, 0.3)
        row = measure(population, risk, share, 1000, args.power_splits, 7, extra=args.power_splits)[alpha]
        power.append({"scorer": "synthetic AUROC 0.9", "base_error": 0.3, "n": 1000, **row})
    checks = [live(0.1, runs, 5000, 500, 11), live(0.05, runs // 5, 5000, 500, 12),
              live(0.2, runs // 5, 5000, 500, 13)]
    summary = {
        "splits": splits, "delta": DELTA, "margin": margin,
        "cells": len(cells),
        "worst_violation_share": max(c["imad"]["violations"] for c in cells),
        "cells_over_delta_plus_margin": sum(c["imad"]["violations"] > DELTA + margin for c in cells),
        "worst_naive_violation_share": max(c["naive"]["violations"] for c in cells),
        "library_agrees": all(c["library_agrees"] for c in cells + power),
        "infeasible_cells_certified_and_broken": sum(
            c["imad"]["violations"] > DELTA + margin for c in cells if c["base_error"] > c["alpha"]),
        "power_auroc09_n1000_mu03_alpha01": next(r["imad"]["power"] for r in power if r["alpha"] == 0.1),
        "seconds": time.perf_counter() - start, "load_average": [load, os.getloadavg()],
    }
    if args.json:
        print(json.dumps({"cells": cells, "power": power, "live": checks, "shipped": shipped,
                          "summary": summary}, indent=1))
        return
    print_text(cells, power, checks, shipped, summary)


def print_text(cells, power, checks, shipped, summary) -> None:
    print(f"### Validity: {summary['splits']} splits per cell, δ {DELTA}, violation share must be ≤ "
          f"{DELTA + summary['margin']:.4f} (δ + 3 Monte-Carlo s.e.)")
    print(f"{'scorer':44} {'μ':>5} {'n':>5} {'α':>5} {'certified':>9} {'violations':>10} "
          f"{'naive viol.':>11} {'kept':>6} {'oracle':>6}")
    for c in cells:
        print(f"{c['scorer']:44} {c['base_error']:5.2f} {c['n']:5d} {c['alpha']:5.2f} "
              f"{c['imad']['certified']:9.3f} {c['imad']['violations']:10.4f} "
              f"{c['naive']['violations']:11.4f} {c['imad']['kept_share']:6.3f} "
              f"{c['oracle_kept_share']:6.3f}")
    print("\n### Power: AUROC 0.9, n 1000, μ 0.3 (kept share / oracle's kept share)")
    for r in power:
        methods = [m for m in ("imad", "hoeffding_bonferroni", "mapie") if m in r]
        print(f"α {r['alpha']:4.2f} oracle keeps {r['oracle_kept_share']:.3f}: " + "; ".join(
            f"{m} certifies {r[m]['certified']:.2f} keeps {r[m]['kept_share']:.3f} "
            f"(power {r[m]['power']:.3f}, violations {r[m]['violations']:.3f})" for m in methods))
    print("\n### Live check (δ 0.05): false alarms at error α/2; delay after a jump to 2α at label 500")
    for c in checks:
        print(f"α {c['alpha']:4.2f}: {c['runs']} runs of {c['labels']} labels, false alarms "
              f"{c['false_alarm_share']:.3f}; delay median {c['median_delay']:.0f}, 90% "
              f"{c['p90_delay']:.0f}, missed {c['missed']:.3f}")
    print("\n### The shipped router on all its committed labelled answers, α 0.1")
    for entry in shipped:
        said = (f"certified τ {entry['tau']:g}" if "tau" in entry else
                f"{entry['reason']}: base error {entry['base_error']:.3f}, any method escalates "
                f"≥ {entry['least_escalation']:.1%}, smallest certifiable α {entry['smallest_alpha']}")
        print(f"{entry['set']} ({entry['answers']} answers): {said}")
    print("\n### Summary")
    for key, value in summary.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
