"""Recalibrate a router's p on a user's own answers, and save it as a new checkpoint version.

    imad calibrate --recalibrate --corpus my-labelled-answers.jsonl      # auto
    imad calibrate --recalibrate platt --corpus my-labelled-answers.jsonl
    imad calibrate --recalibrate prior-shift --corpus my-traffic.jsonl

The router's p is calibrated on its training distribution only; on other traffic it is not
(issue 21: zero-shot ECE 0.23–0.54). Fitting a calibrator (`imad.router.calibrators`) on the raw
network scores of a few labelled answers of that traffic — or, without labels, re-weighting the
training prior to the traffic's by EM — gives a p that means what it says there. The new
checkpoint carries the calibrator and what it was fitted on; weights and features are unchanged.

A calibrator changes p's scale, so τ is kept meaningful by the checkpoint's own rule: a τ that
`imad calibrate` chose for a target trigger rate (the checkpoint's `calibration` record) is
chosen again for that rate on the recalibrated p of the same answers; a fixed τ (the paper's
0.7) is kept, and is then compared with the calibrated p. Either way the new version's
escalation rate on those answers is measured before and after, recorded and printed, and a
version that would escalate or keep nearly all of them is refused (`imad.router.escalation`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from imad.constraints import Options, check_value
from imad.errors import DatasetError
from imad.router.calibration_set import AnswerScores, Traffic, read_answer_scores
from imad.router.calibrators import RECALIBRATION_METHODS, Calibrator, fit_calibrator
from imad.router.escalation import (
    EscalationRate,
    escalation_at,
    refuse_extreme,
    refuse_tied_target,
)
from imad.router.registry import resolve_checkpoint
from imad.router.router import Router
from imad.router.versions import CalibrationResult, new_checkpoint_path, save_version

PRIOR_SHIFT_PLAUSIBLE = (0.01, 0.99)
"""A prior-shift estimate outside this range is refused: EM ran to a bound instead of converging."""


def recalibrate_router(router_path: str | Path | None, corpus: list[str], method: str = "auto", *,
                       out: str | Path | None = None, overwrite: bool = False,
                       read_answers: Callable[[Router], AnswerScores] | None = None,
                       allow_extreme: bool = False) -> CalibrationResult:
    """Fit `method` on the router's raw scores of the answers in `corpus` (or those
    `read_answers(router)` gives: a decision log's, `answer_scores_from_log`), set τ by the
    checkpoint's rule (module docstring), save a new version. A fitted map that decreases is
    saved (the labels chose it) with a `DecreasingCalibratorWarning` saying so in words; a
    version that escalates or keeps ≥ 95% of the answers is an `ExtremeRateError` unless
    `allow_extreme`."""
    check_value(method, Options(*RECALIBRATION_METHODS), "recalibrate (--recalibrate)")
    source_path = resolve_checkpoint(router_path)
    router = Router.load(source_path)
    destination = new_checkpoint_path(source_path, out, overwrite)
    answers = read_answer_scores(router, corpus) if read_answers is None else read_answers(router)
    labelled = [index for index, label in enumerate(answers.labels) if label is not None]
    true_accuracy = (float(np.mean([answers.labels[i] for i in labelled])) if labelled else None)
    if method == "prior-shift":
        prior = router.config.training_accuracy
        if prior is None:
            raise DatasetError(f"router {router.name!r} does not record its training accuracy "
                               "(data.positive_rate), which prior-shift starts from")
        calibrator = fit_calibrator(answers.raw, method="prior_shift", training_prior=prior,
                                    sources=answers.files)
        fitted = answers.raw
        estimate = calibrator.fitted_on.estimated_accuracy
        if not PRIOR_SHIFT_PLAUSIBLE[0] <= estimate <= PRIOR_SHIFT_PLAUSIBLE[1]:
            # EM ran to a bound: the scores do not fit "the same router under another prior",
            # and a p pushed to 0 or 1 would keep or debate everything. Refuse rather than guess.
            truth = ("" if true_accuracy is None else f"; the {len(labelled)} labelled answers' "
                     f"true accuracy is {true_accuracy:.4f}")
            raise DatasetError(
                f"prior-shift estimates this traffic's accuracy at {estimate:.4f}{truth} (EM ran "
                f"to the edge from the training accuracy {prior:.4f}): the router's scores on these "
                f"{len(answers.raw)} answers do not fit a change of prior; label about 50 of them "
                "and use --recalibrate platt or isotonic")
    else:
        if not labelled:
            raise DatasetError(f"{method} needs labelled answers (a `label` of 0 or 1) and "
                               f"{', '.join(answers.files)} hold none; use --recalibrate prior-shift")
        fitted = answers.raw[labelled]
        calibrator = fit_calibrator(fitted, [answers.labels[i] for i in labelled], method,
                                    sources=answers.files)
    record = {
        "method": calibrator.kind, "described": calibrator.describe(),
        "chosen_by": calibrator.fitted_on.chosen_by, "reason": calibrator.fitted_on.reason,
        "answers": len(answers.raw), "labelled": len(labelled), "unparsed": answers.unparsed,
        "files": answers.files, "true_accuracy": true_accuracy,
        "estimated_accuracy": (calibrator.fitted_on.estimated_accuracy
                               if method == "prior-shift" else None),
        "mean_p_before": float(np.mean(router.calibrator.apply(fitted))),
        "mean_p_after": float(np.mean(calibrator.apply(fitted))),
        "parent": {"name": router.name, "path": str(source_path),
                   "calibrator": router.calibrator.kind},
    }
    tau, method_text, escalation = retained_threshold(router, calibrator, answers.measured_on(),
                                                      allow_extreme=allow_extreme)
    record["escalation"] = escalation
    calibrator.warn_if_decreasing("imad calibrate --recalibrate")
    config = router.config.with_calibrator(calibrator).with_record(recalibration=record)
    if method_text is not None:
        config = config.with_threshold(tau, method_text)
    reloaded = save_version(router, config, destination,
                            lambda written: (written.calibrator == calibrator
                                             and written.config.threshold.tau == tau),
                            "calibrator or τ")
    return CalibrationResult(destination, reloaded, record, calibrator=calibrator)


def parent_target_rate(router: Router) -> float | None:
    """The target trigger rate `imad calibrate` chose the router's τ for (None: τ is fixed)."""
    calibration = router.config.record.calibration
    choice = None if calibration is None else calibration.choice
    rate = choice.get("target_rate") if isinstance(choice, Mapping) else None
    return float(rate) if isinstance(rate, (int, float)) and 0.0 < rate < 1.0 else None


def retained_threshold(router: Router, calibrator: Calibrator, traffic: Traffic, *,
                       allow_extreme: bool) -> tuple[float, str | None, dict[str, Any]]:
    """τ of the recalibrated version by the checkpoint's rule, the new `threshold.method` (None:
    τ kept), and the escalation record: the rate on `traffic` before (old p, old τ) and after."""
    from imad.router.threshold import tau_for_trigger_rate

    p_before = router.calibrator.apply(traffic.raw)
    p_after = calibrator.apply(traffic.raw)
    before = escalation_at(p_before, router.config.threshold.tau, traffic.unscored, traffic.kind)
    target = parent_target_rate(router)
    if target is None:
        after = escalation_at(p_after, router.config.threshold.tau, traffic.unscored, traffic.kind)
        refuse_extreme(after, p_after, allow=allow_extreme,
                       why=f"; τ {router.config.threshold.tau:.6g} is the checkpoint's fixed τ, kept")
        return router.config.threshold.tau, None, escalation_record(
            before, after, "kept: the checkpoint's τ is fixed (not chosen for a trigger rate)")
    choice = tau_for_trigger_rate(p_after, traffic.labels, target, traffic.unscored)
    refuse_tied_target(target, choice.achieved_rate, choice.tied_short, choice.questions, p_after,
                       allow=allow_extreme)
    after = escalation_at(p_after, choice.tau, traffic.unscored, traffic.kind)
    rule = (f"re-chosen for the checkpoint's target trigger rate {target:.4g} on the recalibrated p "
            f"of {traffic.questions} {traffic.kind}")
    method = (f"{rule} by imad calibrate --recalibrate: escalates {after.escalated}/"
              f"{after.questions} = {after.rate:.4g}; τ is the midpoint between neighbouring scores")
    return choice.tau, method, escalation_record(before, after, rule)


def escalation_record(before: EscalationRate, after: EscalationRate, rule: str) -> dict[str, Any]:
    """What the new version does to its traffic, for its record and the command's report."""
    return {"tau_rule": rule, "before": before.to_dict(), "after": after.to_dict()}
