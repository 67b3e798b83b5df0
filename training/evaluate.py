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
router's τ, accuracy of the kept answers, with 95% bootstrap intervals on ECE and AUROC, beside
two references scored by the same code (random: a seeded uniform p; oracle: the labels as p);
per dataset: parse-failure rate, accuracy, and the router's permutation importance on these
answers. `--recalibrate N` adds every scorer's held-out numbers after `auto` on N labels.
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

from imad.commandline.entry import EXIT_STATUS_HELP, debug_requested, run_entry_point
from imad.constraints import ascii_int, parse_settings
from imad.errors import ConfigError
from imad.keyvalue import split_assignment
from training.e2e.config import DEFAULT_E2E_CACHE, E2EConfig
from training.e2e.methods import E2E_METHODS
from training.entry_args import add_debug_flag
from training.evaluation.config import (
    BUILT_IN_DATASETS,
    DEFAULT_CORPUS_DIR,
    DEFAULT_FEATURE_CACHE,
    DEFAULT_OUT,
    EvaluateConfig,
)
from training.evaluation.report import EvaluationResult
from training.evaluation.run import evaluate

__all__ = ["EvaluationResult", "build_parser", "config_from_args", "evaluate", "main",
           "parse_backend_options"]


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
                        help="also recalibrate p on N labelled answers of each dataset (auto, "
                             "platt, isotonic, temperature; prior shift without labels) and report "
                             "the held-out ECE/Brier/AUROC over 20 seeded splits, and every "
                             "scorer's after auto")
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
_CALIBRATION_ONLY = {"train_corpus": "--train-corpus", "workers": "--workers",
                     "feature_cache": "--feature-cache", "recalibrate": "--recalibrate"}


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
    defaults = build_parser().parse_args(["--dataset", "x"])
    given = [flag for key, flag in _CALIBRATION_ONLY.items()
             if arguments.pop(key) != getattr(defaults, key)]
    if given:
        raise ConfigError(given[0], "only applies to the calibration report; drop it or --e2e")
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
        from training.e2e.benchmark import evaluate_e2e

        evaluate_e2e(config).print(as_json=as_json)
    else:
        evaluate(config).print(as_json=as_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
