"""`imad critique`: one structured self-critique call, printed with its token usage."""

from __future__ import annotations

import argparse

from imad.cli.common import add_question_arguments, print_json, question_from_args
from imad.constraints import ascii_int
from imad.errors import NoAnswerError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_question_arguments(parser)
    parser.add_argument("--max-tokens", type=ascii_int, default=512, help="completion token limit")
    parser.add_argument("--confidence-source", choices=["verbal", "token_probability"],
                        default="verbal", help="where the confidences come from")


def run(args: argparse.Namespace) -> int:
    from imad.critique.call import SelfCritique
    from imad.llm.spec import chat_model_from_spec

    question = question_from_args(args)
    critique = SelfCritique(chat_model_from_spec(args.llm), max_tokens=args.max_tokens,
                            confidence_source=args.confidence_source)
    result = critique.run(question)
    if args.json:
        print_json(result.to_dict())
    elif result.ok:
        for name, value in result.response.to_dict().items():
            print(f"{name:>20}: {value}")
        print(f"{'tokens':>20}: {result.prompt_tokens} prompt + {result.completion_tokens} completion")
    else:
        print(f"status: {result.status} ({result.error})")
        print(f"raw response: {result.raw_text}")
    if not result.ok:  # the output above keeps the raw response; no parsed answer: a failed run
        raise NoAnswerError(f"the self-critique ended with {result.status}: {result.error}")
    return 0
