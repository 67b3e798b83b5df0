"""`imad ask`: answer a question end to end — self-critique, route, debate when unsure.

A trigger budget (`--target-trigger-rate`) lives in a file (`--budget-state`,
`imad.decide.budget_state`), since each run answers one question.

A run that produced no answer (`PipelineAnswer.answered` False: every call failed — an
unreachable server, a file that is not a model, a server that answers HTML — or no call gave an
answer) is a failed run: the report is printed as usual, then `NoAnswerError` makes it
`error: …` with exit status 3. A debate that gives no answer is not one: the self-critique's
answer is printed with the reason (`imad.pipeline`), as `imad serve` serves it.

The report's `decision:` line shows the schema's `text` view (`imad.decide.schema`); `--json`
prints the `answer` and `decision` views. `--decision-log PATH` also records the run as one row
of a decision log (the schema's `log` view, `imad.decision_log`) under a fresh id that stderr
names, so the answer can be labelled later; a file that is not a decision log is refused
before any LLM call.

`--shadow` decides as usual but prints the single answer and runs no debate (the decision's
`would_escalate` says what the router would have done). With `--shadow-debate-rate R` a run
is sampled with probability R (seeded by `--shadow-seed` and the run's decision id) and then
also debates — after the answer is printed, before exit; the debate's answer and tokens are
amended into the run's decision-log row and the debate's answer goes to stderr.

When stderr is a terminal, one line there says what the run is waiting for as each stage starts
(the self-critique, whose first call loads a local model, then each debate round:
`imad.cli.progress`); stdout is the same either way.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from imad.cli.common import (
    add_question_arguments,
    add_routing_arguments,
    flag_error,
    print_json,
    question_from_args,
)
from imad.cli.decision_log_flags import add_decision_log_arguments, decision_log_from_args
from imad.cli.shadow_flags import add_shadow_arguments, shadow_from_args
from imad.decide import FixedThreshold, Policy, choose_policy, chosen_threshold, new_budget
from imad.decide.budget_state import FLAG as BUDGET_FLAG
from imad.decide.budget_state import (
    FileBackedBudget,
    check_same_settings,
    check_state_file,
    file_backed,
    read_budget,
)
from imad.decide.schema import view
from imad.errors import ConfigError, NoAnswerError
from imad.routing_options import DEFAULT_BUDGET_WINDOW
from imad.shadow import ShadowRunner, ShadowSampler, shadow_debate_job

if TYPE_CHECKING:
    from imad.decision_log.writer import DecisionLog
    from imad.llm.types import ChatModel
    from imad.pipeline import Pipeline, PipelineAnswer
    from imad.router import Router



def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_question_arguments(parser)
    parser.add_argument("--backend", default="acemad",
                        help="debate back-end for escalated questions: acemad, svrmad, mad, liang, "
                             "self_consistency, cot, down (default: %(default)s)")
    parser.add_argument("--router", default=None,
                        help="router checkpoint directory or shipped name (default: the shipped "
                             "imad-router-v2)")
    parser.add_argument("--tau", type=float, default=None,
                        help="threshold override: escalate when p < TAU (default: the checkpoint's)")
    add_routing_arguments(parser, serving=False)
    parser.add_argument("--budget-state", type=Path, default=None, metavar="FILE",
                        help="JSON file holding the trigger budget between runs, shared by "
                             "concurrent runs: checked before any call, then read, updated and "
                             "written under FILE.lock when the answer is decided (created with "
                             "--target-trigger-rate); needed for a budget, since each imad ask "
                             "answers one question")
    parser.add_argument("--trace", action="store_true", help="with --json: include every LLM call")
    add_decision_log_arguments(parser, serving=False)
    add_shadow_arguments(parser, serving=False)


def policy_from_flags(args: argparse.Namespace, router: Router) -> tuple[Policy, FileBackedBudget | None]:
    """The policy `imad ask` decides with, from --tau, --target-trigger-rate / --budget-window /
    --budget-state and --ood-policy (the budget, when there is one, is its threshold rule and
    starts from --tau or the checkpoint's τ); the budget too, for the report."""
    try:
        initial = chosen_threshold(router.config, args.tau)
        budget = budget_from_flags(args.target_trigger_rate, args.budget_window, args.budget_state,
                                   initial)
        return choose_policy(router.config, tau=args.tau, rule=budget, ood_policy=args.ood_policy,
                             shadow=args.shadow), budget
    except ConfigError as error:
        raise flag_error(error) from None


def budget_from_flags(rate: float | None, window: int | None, state: Path | None,
                      initial: FixedThreshold) -> FileBackedBudget | None:
    """The budget `imad ask`'s flags ask for — the threshold rule of its policy: loaded from
    `state` when that file exists, new otherwise (warming up at the `initial` τ, --tau or the
    checkpoint's); None without `--target-trigger-rate` and `--budget-state`. Everything about
    the file is checked here, before any LLM call (module docstring)."""
    if state is None:
        if rate is not None or window is not None:
            raise ConfigError(BUDGET_FLAG, "imad ask answers one question per process, so a "
                              "budget needs a file to remember the earlier answers: add "
                              "--budget-state FILE (or use `imad serve` / `Pipeline`, which keep "
                              "it in memory)")
        return None
    target = check_state_file(state)
    if not target.exists():
        if rate is None:
            raise ConfigError("--target-trigger-rate", f"{state} does not exist yet: give the "
                              "target rate of the new budget")
        try:
            budget = new_budget(rate, DEFAULT_BUDGET_WINDOW if window is None else window,
                                initial)
        except ConfigError as error:
            raise flag_error(error) from None
    else:
        budget = read_budget(target)
        check_same_settings(budget, rate, window, state)
    return file_backed(budget, target, initial_source=initial.source)


def run(args: argparse.Namespace) -> int:
    from imad.llm.spec import chat_model_from_spec
    from imad.pipeline import Pipeline
    from imad.router import Router

    shadow, shadow_rate, shadow_seed = shadow_from_args(args)  # a bad flag: before any model loads
    router = Router.load(args.router)
    policy, budget = policy_from_flags(args, router)
    try:
        pipeline = Pipeline(router, with_progress(chat_model_from_spec(args.llm)), args.backend,
                            policy=policy)
    except ConfigError as error:
        raise flag_error(error) from None
    log = decision_log_from_args(args)  # a file that is not a decision log: refused before any call
    decision_id = f"ask-{uuid.uuid4().hex}"
    try:
        result = pipeline.answer(question_from_args(args))  # a budget writes its file as it decides
        if log is not None:
            record_decision(log, result, args, router, budgeted=budget is not None,
                            decision_id=decision_id)
        print_result(result, args, budget)
        if shadow and ShadowSampler(shadow_rate, shadow_seed).chosen(decision_id) and result.critique.ok:
            debate_in_shadow(pipeline, result, decision_id, log)
    finally:
        if log is not None:
            log.close()  # flushes the row (and a shadow debate's amendment)
    if not result.answered:
        raise NoAnswerError(no_answer_reason(result))
    return 0


def with_progress(model: ChatModel) -> ChatModel:
    """`model`, saying on stderr what each call is for when stderr is a terminal
    (`imad.cli.progress`)."""
    from imad.cli.progress import ProgressChat, progress_stream

    stream = progress_stream(sys.stderr)
    return model if stream is None else ProgressChat(model, stream)


def print_result(result: PipelineAnswer, args: argparse.Namespace,
                 budget: FileBackedBudget | None) -> None:
    if args.json:
        print_json(result.to_dict(include_trace=args.trace))
        return
    print_report(result, args.backend)
    if budget is not None:
        stats = budget.stats()
        print(f"budget: {stats.realized_rate:.3f} of the last {stats.answers_in_window} "
              f"answers escalated, target {stats.target_rate:g} (state in {args.budget_state})")


def debate_in_shadow(pipeline: Pipeline, result: PipelineAnswer, decision_id: str,
                     log: DecisionLog | None) -> None:
    """The sampled run's shadow debate, after its answer was printed (module docstring): one
    runner thread, waited for; a failed debate is one stderr line, never a failed run."""
    sys.stdout.flush()
    runner = ShadowRunner(1)
    runner.submit(shadow_debate_job(pipeline, result, decision_id, log))
    runner.close(wait=True)
    if runner.stats["failed"]:
        print("shadow debate: failed (the answer above stands)", file=sys.stderr)
    else:
        outcome = "changed" if runner.stats["changed"] else "kept"
        print(f"shadow debate: ran, {outcome} the answer", file=sys.stderr)


def record_decision(log: DecisionLog, result: PipelineAnswer, args: argparse.Namespace,
                    router: Router, *, budgeted: bool, decision_id: str) -> None:
    """One decision-log row for this run, under its fresh id (each run is one decision), which
    stderr names so the answer can be labelled later (`imad log label`). "logged" is said once
    the row is written: the writer is waited for, and a row it dropped is a warning naming why."""
    from imad.decision_log.answer_row import answer_row, router_identity

    log.record(answer_row(result, completion_id=decision_id, model=args.llm, backend=args.backend,
                          identity=router_identity(router),
                          policy_rule="budget" if budgeted else "fixed"))
    log.flush()
    if log.stats["written"] + log.stats["duplicates"]:
        print(f"decision logged as {decision_id} in {log.path}", file=sys.stderr)
        return
    dropped = ", ".join(sorted(log.stats.group("dropped")))
    print(f"warning: decision {decision_id} was not logged in {log.path} (dropped: "
          f"{dropped or 'unknown'}); the answer stands", file=sys.stderr)


def no_answer_reason(result: PipelineAnswer) -> str:
    """Why a pipeline gave no answer: the self-critique's failure and the debate's."""
    critique = result.critique
    reason = f"no answer was produced: the self-critique call ended with {critique.status}"
    if critique.error:
        reason += f" ({critique.error})"
    if result.error:
        reason += f"; {result.error}"
    return reason


def print_report(result: PipelineAnswer, backend: str) -> None:
    """The human-readable report of one answer: the decision's `text` view, then the rest."""
    print(f"answer: {result.answer or '(none)'}")
    shown = view("text", {**result.values(), "backend": backend})
    scalars = ", ".join(f"{key} {_shown(value)}" for key, value in shown.items()
                        if not isinstance(value, list))
    print(f"decision: {scalars}")
    for value in shown.values():
        if isinstance(value, list):
            print("\n".join(f"  - {item}" for item in value))
    if result.debate is not None:
        print(f"debate: {result.debate.stop_reason}, {result.debate.n_calls} calls, "
              f"{result.debate.messages} messages")
    if result.error:
        print(f"error: {result.error}")
    print(f"tokens: {result.prompt_tokens} prompt + {result.completion_tokens} completion "
          f"in {len(result.trace)} LLM calls")


def _shown(value: object) -> str:
    """A JSON value as the report writes it: n/a for null, yes/no, 4 significant digits."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
