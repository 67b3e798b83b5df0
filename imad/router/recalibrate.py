"""Recalibrate a router's p on a user's own answers, and save it as a new checkpoint version.

    imad calibrate --recalibrate --corpus my-labelled-answers.jsonl      # auto
    imad calibrate --recalibrate platt --corpus my-labelled-answers.jsonl
    imad calibrate --recalibrate prior-shift --corpus my-traffic.jsonl

The router's p is calibrated on its training distribution only; on other traffic it is not
(issue 21: zero-shot ECE 0.23–0.54). Fitting a calibrator (`imad.router.calibrators`) on the raw
network scores of a few labelled answers of that traffic — or, without labels, re-weighting the
training prior to the traffic's by EM — gives a p that means what it says there. The new
checkpoint (`imad-router-v2` → `imad-router-v2.1`, or `--out`) carries the calibrator and what it
was fitted on; weights, features and τ are unchanged (τ is then compared with the calibrated p:
run `imad calibrate --target-trigger-rate R` on the new checkpoint to move it too).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from imad.constraints import Options, check_value
from imad.errors import DatasetError
from imad.router.calibration_set import AnswerScores, read_answer_scores
from imad.router.calibrators import RECALIBRATION_METHODS, fit_calibrator
from imad.router.registry import resolve_checkpoint
from imad.router.router import Router
from imad.router.versions import CalibrationResult, new_checkpoint_path, save_version

PRIOR_SHIFT_PLAUSIBLE = (0.01, 0.99)
"""A prior-shift estimate outside this range is refused: EM ran to a bound instead of converging."""


def recalibrate_router(router_path: str | Path | None, corpus: list[str], method: str = "auto", *,
                       out: str | Path | None = None, overwrite: bool = False,
                       read_answers: Callable[[Router], AnswerScores] | None = None
                       ) -> CalibrationResult:
    """Fit `method` on the router's raw scores of the answers in `corpus` (or those
    `read_answers(router)` gives: a decision log's, `answer_scores_from_log`), save a new
    version. A fitted map that decreases is saved (the labels chose it) with a
    `DecreasingCalibratorWarning` saying so in words."""
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
    calibrator.warn_if_decreasing("imad calibrate --recalibrate")
    reloaded = save_version(router, router.config.with_calibrator(calibrator).with_record(
        recalibration=record), destination, lambda written: written.calibrator == calibrator,
        "calibrator")
    return CalibrationResult(destination, reloaded, record, calibrator=calibrator)
