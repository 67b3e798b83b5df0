"""Zero-shot calibration of a router on datasets it never saw: `python -m training.evaluate`.

    python -m training.evaluate --dataset gsm8k mmlu bbh --limit 200
    python -m training.evaluate --router checkpoints/my-router --dataset my_questions.jsonl
    python -m training.evaluate --dataset medqa --llm openai:qwen@http://127.0.0.1:8000/v1 --json

For each dataset (built-in: medqa, gsm8k, mmlu, mmlu_pro, bbh, scienceqa; or any file in the
generic JSONL format of `training.data.generic`), the self-critique answers are built or
reused through the corpus cache (`<corpus-dir>/<model>/eval/<dataset>.jsonl`, see
`training.evaluation.responses`), featurised, and scored by three scorers on the same answers:
the router, the model's raw `confidence_initial` (DOWN-style), and a logistic regression on
the 41 features fitted on the training split of the router's own training corpus. Reported per
dataset and scorer: ECE (15 equal-width bins and adaptive), Brier, AUROC, trigger rate at the
router's τ, accuracy of the kept answers; per dataset: parse-failure rate and accuracy.
Outputs in `--out`: report.md, report.json (every number) and reliability-<dataset>.png.
`--limit N` takes N questions per dataset: for the built-in datasets a seeded sample
stratified by subject/task/category (`training.data.sampling`); for a generic file its first N.

`--e2e` runs the end-to-end benchmark on the same questions instead (`training.e2e.benchmark`):
CoT, self-consistency, full MAD, DOWN, iMAD+AceMAD and iMAD+SVR-MAD, every call through a
record/replay cache (`--e2e-cache`, default runs/e2e-calls.sqlite), reported as accuracy,
tokens/question, ApT, messages/question and the iMAD decision breakdown beside the paper's
numbers, in `--out`/e2e-report.md and e2e-report.json:

    python -m training.evaluate --e2e --dataset medqa --limit 30
    python -m training.evaluate --e2e --dataset medqa --limit 30 --e2e-cache-mode replay --json

`--e2e --deferral` runs the iMAD methods at τ = 1, so every question has a recorded single-agent
and debate outcome, and adds deferral curves (accuracy and tokens against the escalation rate
for the router's p, the verbal confidence, a random gate and the oracle gate, with their areas;
`training.e2e.deferral_run`) to the report, with deferral-<dataset>-<method>.png:

    python -m training.evaluate --e2e --deferral --dataset medqa --limit 20 --methods imad_acemad
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imad.commandline.entry import EXIT_STATUS_HELP, debug_requested, run_entry_point
from imad.constraints import ascii_int, parse_settings
from imad.critique.call import SelfCritique
from imad.critique.prompts import PROMPT_VERSION
from imad.errors import ConfigError, DatasetError
from imad.keyvalue import split_assignment
from imad.llm.types import ChatModel
from imad.router import DEFAULT_CHECKPOINT, Router
from imad.router.training_record import DataSummary
from training.baselines import BASELINES, LogisticBaseline, fit_logistic_baseline
from training.data import load_questions
from training.e2e.config import DEFAULT_E2E_CACHE, E2EConfig
from training.e2e.methods import E2E_METHODS
from training.entry_args import add_debug_flag
from training.evaluation.config import (
    BUILT_IN_DATASETS,
    DEFAULT_CORPUS_DIR,
    DEFAULT_FEATURE_CACHE,
    DEFAULT_OUT,
    EvaluateConfig,
    dataset_name,
)
from training.evaluation.plots import save_reliability_diagram
from training.evaluation.recalibration import recalibration_study
from training.evaluation.report import (
    REPORT_SCHEMA,
    SCORER_TITLES,
    json_text,
    macro_summary,
    render_markdown,
    to_jsonable,
    write_report,
)
from training.evaluation.responses import check_questions, collect_responses
from training.evaluation.scoring import DatasetScores, score_dataset
from training.evaluation.training_rows import router_training_rows


@dataclass(frozen=True)
class EvaluationResult:
    """The JSON document, the Markdown report, and where everything was written."""

    document: dict[str, Any]
    markdown: str
    json_path: Path
    markdown_path: Path
    plots: dict[str, Path]
    scores: dict[str, DatasetScores]


def evaluate(config: EvaluateConfig, *, model: ChatModel | None = None) -> EvaluationResult:
    """Run the evaluation `config` describes; `model` replaces `config.llm` (tests, notebooks)."""
    router_path = Path(config.router) if config.router else DEFAULT_CHECKPOINT
    router = Router.load(router_path)
    questions = {dataset_name(d): load_questions(d, data_dir=config.data_dir, limit=config.limit)
                 for d in config.datasets}
    for name, items in questions.items():
        check_questions(name, items)  # every dataset is checked before the first LLM call
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
            f"answers)", scored.labels, scored.probabilities, router.tau, SCORER_TITLES)
        summary = {"source": dataset, **scored.summary, "plot": plots[name].name,
                   "in_router_training_data": name in training_sets}
        if config.recalibrate is not None:
            summary["recalibration"] = recalibration_study(
                scored.probabilities["router"], scored.labels, config.recalibrate,
                training_prior=router.config.training_accuracy)
        if summary["in_router_training_data"]:
            summary["notes"].append("not zero-shot: the router's training corpus contains this "
                                    "dataset")
        datasets[name] = summary
        scores[name] = scored
    document = {
        "schema": REPORT_SCHEMA,
        "router": {"name": router.name, "path": str(router_path), "tau": router.tau,
                   "tau_method": router.tau_method, "training_datasets": training_sets,
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
    return EvaluationResult(document, render_markdown(document), json_path, markdown_path, plots,
                            scores)


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training.evaluate",
                                     description=__doc__.splitlines()[0], epilog=EXIT_STATUS_HELP)
    add_debug_flag(parser)
    parser.add_argument("--dataset", dest="datasets", action="extend", nargs="+", required=True,
                        metavar="NAME_OR_FILE",
                        help=f"built-in ({', '.join(BUILT_IN_DATASETS)}) or a generic .jsonl file; "
                             "repeatable")
    parser.add_argument("--router", default=None,
                        help="router checkpoint directory (default: checkpoints/imad-router-v2)")
    parser.add_argument("--llm", default="local",
                        help="chat back-end spec, e.g. local, cached:calls.sqlite::local, "
                             "openai:MODEL@URL (default: %(default)s)")
    parser.add_argument("--limit", type=ascii_int, default=None, help="questions per dataset")
    parser.add_argument("--corpus-dir", default=DEFAULT_CORPUS_DIR,
                        help="answer cache root: CORPUS_DIR/<model>/eval/<dataset>.jsonl "
                             "(default: %(default)s)")
    parser.add_argument("--train-corpus", nargs="+", default=[], metavar="PATH",
                        help="the router's training corpus, for the logistic-regression baseline "
                             "(default: the files recorded in the checkpoint)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="report directory (default: %(default)s)")
    parser.add_argument("--data-dir", default=None,
                        help="datasets folder (default: $IMAD_DATA_DIR or ../shared/datasets)")
    parser.add_argument("--max-tokens", type=ascii_int, default=512, help="completion token limit")
    parser.add_argument("--confidence-source", choices=["verbal", "token_probability"],
                        default=None, help="default: the one the router was trained with")
    parser.add_argument("--workers", type=ascii_int, default=1, help="concurrent calls (HTTP back-ends)")
    parser.add_argument("--feature-cache", default=DEFAULT_FEATURE_CACHE,
                        help="feature-matrix cache directory (default: %(default)s)")
    parser.add_argument("--no-feature-cache", dest="feature_cache", action="store_const",
                        const=None, help="always re-extract features")
    parser.add_argument("--recalibrate", type=ascii_int, default=None, metavar="N",
                        help="also recalibrate p on N labelled answers of each dataset (platt, "
                             "isotonic, temperature; prior shift without labels) and report the "
                             "held-out ECE/Brier/AUROC over 20 seeded splits")
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    parser.add_argument("--json", action="store_true",
                        help="print the JSON report to stdout instead of the tables")
    e2e = parser.add_argument_group("end to end (--e2e)")
    e2e.add_argument("--e2e", action="store_true",
                     help="run the end-to-end benchmark instead of the calibration report")
    e2e.add_argument("--methods", nargs="+", default=None, choices=list(E2E_METHODS),
                     help="methods to run (default: all, in this order)")
    e2e.add_argument("--e2e-cache", default=None, metavar="PATH",
                     help=f"SQLite call cache (default: {DEFAULT_E2E_CACHE})")
    e2e.add_argument("--e2e-cache-mode", default=None, choices=["record", "replay", "refresh"],
                     help="record (default): replay hits, call on misses; replay: never call the "
                          "model; refresh: call again and overwrite")
    e2e.add_argument("--tau", type=float, default=None,
                     help="the iMAD methods' threshold (default: the router checkpoint's)")
    e2e.add_argument("--backend-option", dest="backend_option", action="append", default=None,
                     metavar="BACKEND.FIELD=VALUE",
                     help="override a debate back-end's config, e.g. mad.n_agents=2 or "
                          "acemad.n_rounds=2 (read by the field's type); repeatable")
    e2e.add_argument("--deferral", action="store_true", default=None,
                     help="run the iMAD methods at τ = 1 (every question escalated) and report "
                          "deferral curves: accuracy and tokens against the escalation rate for "
                          "the router's p, the verbal confidence, a random and the oracle gate")
    return parser


_E2E_FLAGS = {"methods": "--methods", "e2e_cache": "--e2e-cache",
              "e2e_cache_mode": "--e2e-cache-mode", "tau": "--tau",
              "backend_option": "--backend-option", "deferral": "--deferral"}
_CALIBRATION_ONLY = ("train_corpus", "workers", "feature_cache", "recalibrate")


def config_from_args(argv: Sequence[str] | None = None
                     ) -> tuple[EvaluateConfig | E2EConfig, bool]:
    """The config of a command line, and whether --json was given."""
    arguments = vars(build_parser().parse_args(argv))
    arguments.pop("debug")  # read by the entry point (imad.commandline.entry.debug_requested)
    as_json, e2e = arguments.pop("json"), arguments.pop("e2e")
    e2e_only = {key: arguments.pop(key) for key in _E2E_FLAGS}
    if not e2e:
        given = [flag for key, flag in _E2E_FLAGS.items() if e2e_only[key] is not None]
        if given:
            raise ConfigError(given[0], "only applies to the end-to-end benchmark; add --e2e")
        return EvaluateConfig(**arguments), as_json
    for key in _CALIBRATION_ONLY:
        arguments.pop(key)
    return E2EConfig(
        **arguments, methods=tuple(e2e_only["methods"] or E2E_METHODS),
        cache=e2e_only["e2e_cache"] or DEFAULT_E2E_CACHE,
        cache_mode=e2e_only["e2e_cache_mode"] or "record", tau=e2e_only["tau"],
        backend_options=parse_backend_options(e2e_only["backend_option"] or ()),
        deferral=bool(e2e_only["deferral"]),
    ), as_json


def parse_backend_options(items: Sequence[str]) -> dict[str, dict[str, object]]:
    """`["mad.n_agents=2", "down.theta=0.5"]` → {"down": {"theta": 0.5}, "mad": {"n_agents": 2}}.

    Each text is read by the field's row in that back-end's constraints table, as `imad debate
    --set` reads it; an unknown back-end or field is a ConfigError naming the option."""
    from imad.debate.registry import config_class_of

    example = "mad.n_agents=2"
    options: dict[str, dict[str, object]] = {}
    for item in items:
        target, value = split_assignment(item, "--backend-option", example)
        backend, dot, name = target.partition(".")
        if not (dot and backend and name):
            raise ConfigError("--backend-option", f"write BACKEND.FIELD=VALUE, e.g. "
                              f"{example}; got {item!r}")
        typed = parse_settings(config_class_of(backend), {name: value},
                               label=lambda _, target=target: f"--backend-option {target}")
        options.setdefault(backend, {}).update(typed)
    return options


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: typed errors print `error: …` and exit 2 (usage) or 3 (`imad.commandline.entry`)."""
    return run_entry_point("python -m training.evaluate", lambda: _run(argv),
                           debug=debug_requested(argv))


def _run(argv: Sequence[str] | None) -> int:
    config, as_json = config_from_args(argv)
    if isinstance(config, E2EConfig):
        return _print_e2e(config, as_json)
    result = evaluate(config)
    if as_json:
        sys.stdout.write(json_text(result.document))
    else:
        print(result.markdown)
        print(f"report: {result.markdown_path}\njson: {result.json_path}")
        for path in result.plots.values():
            print(f"plot: {path}")
    return 0


def _print_e2e(config: E2EConfig, as_json: bool) -> int:
    from training.e2e.benchmark import evaluate_e2e

    result = evaluate_e2e(config)
    if as_json:
        sys.stdout.write(json_text(result.document))
    else:
        print(result.markdown)
        print(f"report: {result.markdown_path}\njson: {result.json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
