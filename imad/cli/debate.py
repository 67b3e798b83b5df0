"""`imad debate`: run one debate back-end on one question and print the outcome.

    imad debate "Which drug is an opioid?" --choices Aspirin Morphine --backend acemad
    imad debate "…" --choices … --backend svrmad --set n_agents=4 --set accept_threshold=0.8 --json

`--set FIELD=VALUE` overrides a field of the back-end's config (see `imad.debate`); values are
read by `imad.keyvalue` by the field's declared type, as every KEY=VALUE flag is, and checked
before the model is built. The model is loaded only when the command runs. A run that gives no
answer prints its report, then ends with `error:` and exit status 3 (`NoAnswerError`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from imad.cli.common import add_question_arguments, print_json, question_from_args
from imad.errors import NoAnswerError
from imad.keyvalue import typed_assignments

if TYPE_CHECKING:
    from imad.debate.result import DebateResult
    from imad.question import Question


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from imad.debate.registry import BACKENDS

    add_question_arguments(parser)
    parser.add_argument("--backend", choices=list(BACKENDS), default="acemad",
                        help="debate back-end (default: %(default)s)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="FIELD=VALUE", help="override a config field (repeatable)")
    parser.add_argument("--no-trace", action="store_true",
                        help="with --json, leave the per-call trace out")


def parse_overrides(items: list[str], backend: str = "acemad") -> dict[str, Any]:
    """`["n_agents=3", "eta=0.5", "show_influence=false"]` → the typed fields of `backend`'s config."""
    from imad.debate.registry import config_class_of

    return typed_assignments(config_class_of(backend), items, "--set", "n_agents=3")


def run(args: argparse.Namespace) -> int:
    from imad.debate.registry import create_backend
    from imad.llm.spec import chat_model_from_spec

    question = question_from_args(args)
    overrides = parse_overrides(args.overrides, args.backend)
    backend = create_backend(args.backend, chat_model_from_spec(args.llm), **overrides)
    result = backend.run(question)
    if args.json:
        print_json(result.to_dict(include_trace=not args.no_trace))
    else:
        print_text(result, question)
    if not result.final_answer:
        raise NoAnswerError(f"the {args.backend} debate produced no answer (stopped: "
                            f"{result.stop_reason}; flags: {', '.join(result.flags) or 'none'})")
    return 0


def print_text(result: DebateResult, question: Question) -> None:
    """The human-readable report of one debate."""
    answer = result.final_answer or "(none)"
    if result.final_answer in question.option_letters:
        answer += f". {question.choices[question.option_letters.index(result.final_answer)]}"
    print(f"answer: {answer}")
    print(f"backend: {result.backend}, stopped: {result.stop_reason}")
    print(f"calls: {result.n_calls}, messages: {result.messages}, tokens: "
          f"{result.prompt_tokens} prompt + {result.completion_tokens} completion")
    for index, answers in enumerate(result.rounds):
        print(f"round {index}: " + ", ".join(f"{agent}={a or '?'}" for agent, a in answers.items()))
    if result.flags:
        print("flags: " + ", ".join(result.flags))
