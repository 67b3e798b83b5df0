"""Arguments and helpers shared by the sub-commands that take one question."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from imad.question import Question, TaskType, infer_task_type

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
    return Question(text=args.question, task_type=task_type, choices=tuple(args.choices),
                    context=args.context, id="cli")


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
