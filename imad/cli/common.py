"""Arguments and helpers shared by the sub-commands that take one question."""

from __future__ import annotations

import argparse

from imad.commandline.entry import print_json
from imad.constraints import ascii_int
from imad.errors import ConfigError
from imad.question import Question, TaskType, infer_task_type, refuse_repeated_choices
from imad.routing_options import DEFAULT_BUDGET_WINDOW, OOD_POLICIES

__all__ = ["BUDGET_FLAGS", "DEFAULT_LLM", "add_question_arguments", "add_routing_arguments", "flag_error",
           "print_json", "question_from_args"]

DEFAULT_LLM = "local"


def add_question_arguments(parser: argparse.ArgumentParser) -> None:
    """QUESTION, --choices, --task-type, --context, --llm, --json."""
    parser.add_argument("question", help="the question text")
    parser.add_argument("--choices", nargs="+", default=[], metavar="CHOICE",
                        help="answer options (lettered A, B, C… in order)")
    parser.add_argument("--task-type", choices=[t.value for t in TaskType], default=None,
                        help="how answers are compared (default: multiple_choice with --choices, "
                             "else short_answer)")
    parser.add_argument("--context", default="", help="optional context, e.g. an abstract")
    parser.add_argument("--llm", default=DEFAULT_LLM,
                        help="chat back-end: local | gguf:PATH | openai:MODEL[@URL] "
                             "(default: %(default)s, the embedded SmolLM2-135M)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def question_from_args(args: argparse.Namespace) -> Question:
    task_type = TaskType(args.task_type) if args.task_type else infer_task_type(args.choices)
    refuse_repeated_choices(args.choices)
    return Question(text=args.question, task_type=task_type, choices=tuple(args.choices),
                    context=args.context, id="cli")


BUDGET_FLAGS = {"target_rate": "--target-trigger-rate", "target_trigger_rate": "--target-trigger-rate",
                "window": "--budget-window", "budget_window": "--budget-window",
                "ood_policy": "--ood-policy", "tau": "--tau"}
"""The flag each budget or router field is set by, so errors name what the user typed."""


def add_routing_arguments(parser: argparse.ArgumentParser, *, serving: bool) -> None:
    """--target-trigger-rate, --budget-window and --ood-policy (issue 16: routing under drift)."""
    scope = "per served model name" if serving else "kept across runs in --budget-state"
    parser.add_argument("--target-trigger-rate", type=float, default=None, metavar="R",
                        help="hold the share of escalated answers at R (0 < R < 1) with a trigger "
                             f"budget ({scope}): τ becomes the R quantile of the last "
                             "--budget-window scores, after min(50, W/2) scored answers at "
                             "the checkpoint's τ (default: a fixed τ)")
    parser.add_argument("--budget-window", type=ascii_int, default=None, metavar="W",
                        help=f"answers the budget looks back over (default: {DEFAULT_BUDGET_WINDOW})")
    parser.add_argument("--ood-policy", choices=OOD_POLICIES, default=None,
                        help="answers unlike the router's training rows: flag them, or escalate "
                             "them too (default: the checkpoint's, 'flag')")


def flag_error(error: ConfigError) -> ConfigError:
    """`error` with its field renamed to the flag that sets it (BUDGET_FLAGS)."""
    flag = BUDGET_FLAGS.get(error.field)
    if flag is None:
        return error
    return ConfigError(flag, str(error).removeprefix(f"{error.field}: "))

