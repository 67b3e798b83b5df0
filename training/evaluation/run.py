"""One calibration run of `python -m training.evaluate` (the command and its flags are in
`training.evaluate`): answer every dataset's questions through the corpus cache, score the
answers with the router and the baselines, and write the report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from imad.critique.call import SelfCritique
from imad.critique.prompts import PROMPT_VERSION
from imad.errors import ConfigError, DatasetError, NoAnswerError
from imad.llm.types import ChatModel
from imad.router import DEFAULT_CHECKPOINT, Router
from imad.router.training_record import DataSummary
from training.baselines import BASELINES, LogisticBaseline, fit_logistic_baseline
from training.data import load_questions
from training.evaluation.config import (
    MIN_HELD_OUT,
    EvaluateConfig,
    dataset_name,
    recalibrate_refusal,
    run_flag,
)
from training.evaluation.plots import save_reliability_diagram
from training.evaluation.recalibration import recalibrated_scorers, recalibration_study
from training.evaluation.report import (
    REPORT_SCHEMA,
    SCORER_TITLES,
    EvaluationResult,
    macro_summary,
    render_markdown,
    to_jsonable,
    write_report,
)
from training.evaluation.responses import check_questions, collect_responses
from training.evaluation.scoring import REFERENCE_SCORERS, DatasetScores, score_dataset
from training.evaluation.training_rows import router_training_rows


def evaluate(config: EvaluateConfig, *, model: ChatModel | None = None) -> EvaluationResult:
    """Run the evaluation `config` describes; `model` replaces `config.llm` (tests, notebooks)."""
    router_path = Path(config.router) if config.router else DEFAULT_CHECKPOINT
    router = Router.load(router_path)
    questions = {dataset_name(d): load_questions(d, data_dir=config.data_dir, limit=config.limit)
                 for d in config.datasets}
    for name, items in questions.items():
        check_questions(name, items)  # every dataset is checked before the first LLM call
        if config.recalibrate is not None and config.recalibrate > len(items) - MIN_HELD_OUT:
            raise ConfigError(run_flag("recalibrate"), recalibrate_refusal(
                config.recalibrate, f"{len(items)} questions in {name}"))
    spec: str | None = None
    if model is None:
        from imad.llm.spec import chat_model_from_spec

        spec, model = config.llm, chat_model_from_spec(config.llm)
    data = router.config.record.data or DataSummary()
    source = config.confidence_source or router.confidence_source
    critique = SelfCritique(model, max_tokens=config.max_tokens, confidence_source=source)
    logistic, logistic_info = _logistic_baseline(router, config)
    training_sets = sorted(data.datasets or {})
    out = Path(config.out)
    datasets: dict[str, Any] = {}
    scores: dict[str, DatasetScores] = {}
    plots: dict[str, Path] = {}
    for dataset, (name, items) in zip(config.datasets, questions.items(), strict=True):
        _say(config, f"{name}: {len(items)} questions → {model.model_id}")
        responses = collect_responses(name, items, critique, config.corpus_dir,
                                      workers=config.workers, progress=config.progress)
        scored = score_dataset(responses, router, logistic, feature_cache=config.feature_cache,
                               logistic_note=logistic_info.get("note"))
        plots[name] = save_reliability_diagram(
            out / f"reliability-{name}.png", f"{name}: reliability ({scored.labels.size} parsed "
            f"answers)", scored.labels, {name: p for name, p in scored.probabilities.items()
                                         if name not in REFERENCE_SCORERS},
            router.config.threshold.tau, SCORER_TITLES)
        summary = {"source": dataset, **scored.summary, "plot": plots[name].name,
                   "in_router_training_data": name in training_sets}
        if config.recalibrate is not None:
            summary["recalibration"] = recalibration_study(
                scored.probabilities["router"], scored.labels, config.recalibrate,
                training_prior=router.config.training_accuracy)
            summary["recalibrated"] = recalibrated_scorers(scored.probabilities, scored.labels,
                                                           config.recalibrate)
        if summary["in_router_training_data"]:
            summary["notes"].append("not zero-shot: the router's training corpus contains this "
                                    "dataset")
        datasets[name] = summary
        scores[name] = scored
    document = {
        "schema": REPORT_SCHEMA,
        "router": {"name": router.name, "path": str(router_path), "tau": router.config.threshold.tau,
                   "tau_method": router.config.threshold.method, "training_datasets": training_sets,
                   "training_models": list(data.model_ids or ()),
                   "training_prompt_versions": list(data.prompt_versions or ())},
        "llm": {"model_id": model.model_id, "spec": spec,
                "prompt_version": PROMPT_VERSION, "confidence_source": source,
                "decoding": critique.decoding_params()},
        "baselines": {"confidence_initial": {"description": BASELINES["confidence_initial"],
                                             "fitted_on": None},
                      "logistic_regression": logistic_info},
        "corpus_dir": config.corpus_dir,
        "sample": _sample_text(config.limit),
        "config": config.to_dict(),
        "notes": _run_notes(router, data, model.model_id, source),
        "datasets": datasets,
        "summary": macro_summary(datasets),
    }
    document = to_jsonable(document)
    json_path, markdown_path = write_report(document, out)
    refuse_if_every_call_failed(datasets, json_path)
    return EvaluationResult(document, render_markdown(document), json_path, markdown_path, plots,
                            scores=scores)


def refuse_if_every_call_failed(datasets: dict[str, Any], report: Path) -> None:
    """`NoAnswerError` (exit 3) when no LLM call of the run answered: a report of failures alone
    is not a result, though it is written so that it says why."""
    questions = sum(summary["questions"] for summary in datasets.values())
    failed = sum(summary["failures"].get("llm_error", 0) for summary in datasets.values())
    if questions and failed == questions:
        raise NoAnswerError(f"every one of the {questions} LLM calls failed, so nothing was "
                            f"scored; {report} lists the errors")


def _logistic_baseline(router: Router, config: EvaluateConfig
                       ) -> tuple[LogisticBaseline | None, dict[str, Any]]:
    """Fit on the router's training split; when that is impossible, say why in the report."""
    info: dict[str, Any] = {"description": BASELINES["logistic_regression"]}
    try:
        rows = router_training_rows(router, config.train_corpus, feature_cache=config.feature_cache)
    except DatasetError as error:
        info.update(fitted_on=None, fitted_on_text="nothing: not available",
                    note=f"logistic-regression baseline not available: {error}")
        return None, info
    baseline = fit_logistic_baseline(rows.train_features, rows.train_labels, router.scaler_mean,
                                     router.scaler_scale)
    provenance = rows.provenance
    text = (f"the {provenance['train_rows']} training-split rows of the router's training corpus "
            f"({', '.join(provenance['files'])}; split seed {provenance['split']['seed']}, "
            f"{provenance['source']})")
    if provenance["unchanged"] is False:
        text += "; note: these files differ from the ones recorded in the checkpoint"
    info.update(fitted_on=provenance, fitted_on_text=text)
    return baseline, info


def _run_notes(router: Router, data: DataSummary, model_id: str, source: str) -> list[str]:
    notes = []
    models = list(data.model_ids or ())
    if models and model_id not in models:
        notes.append(f"the router was trained on answers of {models}, these are {model_id}'s")
    prompts = list(data.prompt_versions or ())
    if prompts and PROMPT_VERSION not in prompts:
        notes.append(f"the router was trained on prompt {prompts}, these answers use {PROMPT_VERSION}")
    sources = list(data.confidence_sources or ())
    if sources and source not in sources:
        notes.append(f"the router was trained with confidence source {sources}, this run uses {source}")
    return notes


def _sample_text(limit: int | None) -> str:
    if limit is None:
        return "all"
    return (f"at most {limit}: a seeded sample stratified by subject/task/category for the "
            "built-in datasets, the first lines of a generic file")


def _say(config: EvaluateConfig, message: str) -> None:
    if config.progress:
        print(message, file=sys.stderr)
