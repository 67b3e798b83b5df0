"""Certify a router's threshold on labelled answers and write it into a new checkpoint version.

`imad calibrate --certify --max-error A (--corpus … | --log PATH)` reads the router's p and the
labels of its answers (corpus files, or a decision log's scored decisions), certifies τ
(`imad.decide.certify`), and saves a new version (`imad-router-v2` → `imad-router-v2.1`) whose
threshold is the certified τ and whose record (config.json, model card) carries the
certificate. The certificate names the router by what the decision log and /health call it
(name, version, the hash of its config) and by the hash of what makes p (`scorer_hash`: weights,
scaler, features, calibrator). On load, a certificate whose τ is not the checkpoint's τ, or whose
scorer is not the checkpoint's, is a `CheckpointError`: it would promise something about other
scores. A new τ or calibrator written later drops the certificate (`TrainingRecord.without`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from imad.decide.certify import Certificate, LabelSource, RouterIdentity, certify
from imad.errors import DatasetError, NotCertifiableError
from imad.router.certificate_check import scorer_hash

if TYPE_CHECKING:
    from imad.decision_log.replica import Replica
    from imad.router.router import Router

__all__ = ["CertifiedVersion", "LabelledAnswers", "answers_from_corpus", "answers_from_log",
           "certify_router", "router_of"]


@dataclass(frozen=True)
class LabelledAnswers:
    """The router's p on labelled answers, the p of all scored traffic, and where they came from."""

    p: np.ndarray
    right: np.ndarray
    traffic: np.ndarray
    unparsed: int
    labels: LabelSource
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CertifiedVersion:
    """The new checkpoint version holding the certified τ."""

    checkpoint: Path
    router: Router
    certificate: Certificate


def router_of(router: Router) -> RouterIdentity:
    """The certified router as the log and /health name it, with its scorer's hash."""
    from imad.decision_log.answer_row import router_identity

    identity = router_identity(router)
    return RouterIdentity(name=identity.name, version=identity.version or "unversioned",
                          hash=identity.hash, scorer=scorer_hash(router.config))


def answers_from_corpus(router: Router, paths: Sequence[str | Path]) -> LabelledAnswers:
    """Labelled corpus answers: every parsed one is labelled, so traffic is the labelled p."""
    from imad.router.calibration_set import read_validation_set

    scores = read_validation_set(router, paths)
    source = "corpus files " + ", ".join(str(path) for path in paths)
    return LabelledAnswers(scores.p, scores.labels, scores.p, scores.unparsed, LabelSource(source))


def answers_from_log(router: Router, log: str | Path, *, since: float | None = None,
                     replica: Replica | None = None) -> LabelledAnswers:
    """A decision log's labelled decisions that served the single answer (a label of a served
    debate answer says nothing about the router's), with all its scored decisions as traffic
    (`replica`: only the rows one replica of a fleet wrote). Rows of another router (by name or
    config hash) are a `DatasetError`. Messages and the label source name the log with a URL's
    password hidden."""
    from imad.decision_log.labelled import labelled_scores
    from imad.router.calibration_set import validation_set_from_log

    traffic = validation_set_from_log(router, log, since=since, replica=replica)  # other networks
    _check_hashes(router, log, since)
    scores = labelled_scores(log, since=since, replica=replica)
    log = scores.log
    labelled = ~np.isnan(scores.correct)
    p, right = scores.probabilities[labelled], scores.correct[labelled].astype(np.int64)
    if p.size == 0:
        raise DatasetError(f"no labelled decisions in {log} that served the router's own answer; "
                           "label answers (imad log label) or record in shadow mode first")
    warnings = ()
    if scores.skipped_debate_served:
        warnings = (f"{scores.skipped_debate_served} labelled decisions served the debate's answer "
                    "and were skipped: their labels say nothing about the router's answer",)
    source = LabelSource(f"decision log {log}", scores.first_time, scores.last_time)
    return LabelledAnswers(p, right, traffic.p, traffic.unparsed, source, warnings)


def _check_hashes(router: Router, log: str | Path, since: float | None) -> None:
    from imad.decision_log.location import open_for_reading

    expected = router_of(router).hash
    store = open_for_reading(log)
    log = store.path  # a URL's password hidden
    try:
        others = sorted({row["router_hash"] for row in store.rows(since=since, names=("router_hash",))
                         if row["router_hash"] not in (None, expected)})
    finally:
        store.close()
    if others:
        raise DatasetError(f"the decision log {log} holds decisions of another {router.name!r} (config "
                           f"hash {others[0][:12]}…, not {expected[:12]}…): their p is another "
                           "scorer's; certify that checkpoint (--router PATH) or pass --since")


def certify_router(router_path: str | Path | None, read: Callable[[Router], LabelledAnswers], *,
                   alpha: float, delta: float = 0.05, max_trigger_rate: float | None = None,
                   out: str | Path | None = None, overwrite: bool = False) -> CertifiedVersion:
    """Certify τ on `read(router)` and save it as a new version; `NotCertifiableError` (with the
    `Infeasible` answer) when no τ can be certified, and then nothing is written."""
    from imad.router.registry import resolve_checkpoint
    from imad.router.router import Router
    from imad.router.versions import new_checkpoint_path, save_version

    source_path = resolve_checkpoint(router_path)
    router = Router.load(source_path)
    destination = new_checkpoint_path(source_path, out, overwrite)
    answers = read(router)
    answer = certify(answers.p, answers.right, alpha=alpha, delta=delta,
                     max_trigger_rate=max_trigger_rate, traffic=answers.traffic,
                     unparsed=answers.unparsed, router=router_of(router), labels=answers.labels)
    if not isinstance(answer, Certificate):
        raise NotCertifiableError(answer.message, answer)
    if answers.warnings:
        answer = Certificate(**{**vars(answer), "hash": "",
                                "warnings": answer.warnings + answers.warnings})
    method = f"certified by imad calibrate --certify: {answer.promise()} (certificate {answer.hash[:12]})"
    config = router.config.with_threshold(answer.tau, method).with_record(certificate=answer)
    reloaded = save_version(router, config, destination,
                            lambda written: written.config.record.certificate == answer, "certificate")
    return CertifiedVersion(destination, reloaded, answer)
