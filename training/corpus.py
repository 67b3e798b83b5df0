"""Build the training corpus: self-critique answers, labelled, appended to disk.

    python -m training.corpus --dataset pubmedqa --llm local
    python -m training.corpus --dataset gqa --limit 1000 --llm openai:qwen@http://127.0.0.1:8000/v1

Each answered question is appended to `corpus/<model>/<dataset>.jsonl` as soon as it is done
(see `training.corpus_store`), so a crash, SIGKILL or Ctrl-C loses at most the in-flight question
and a rerun of the same command skips everything already there. Question order is a seeded
permutation of the dataset, so `--limit` takes a stable, representative sample and a resumed run
continues the same sample. Label: 1 ⇔ the kept single-agent answer (`final_answer`) equals the
gold answer canonically; parse failures, truncations and questions without a gold answer are
stored with label None.

One bad response never aborts a run: whatever goes wrong with one question is stored as that
question's failure, and calls that produced no answer are retried by the next run. A corpus file
has one writer at a time (`training.corpus_lock`). Exit status: 0 when every question has an
answer, 3 when some got none (they are saved; rerun to retry), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from imad.commandline.entry import EXIT_STATUS_HELP, debug_requested, run_entry_point
from imad.constraints import ascii_int, parse_text, table_of
from imad.corpus_records import CorpusRecord, iter_records
from imad.critique.call import CritiqueResult, SelfCritique
from imad.critique.canonical import answers_match
from imad.errors import DatasetError, InvalidQuestionError, LLMError
from imad.llm.spec import chat_model_from_spec
from imad.question import Question
from training.corpus_config import DEFAULT_CORPUS_DIR, CorpusConfig, label
from training.corpus_lock import corpus_lock
from training.corpus_store import append_record, completed_ids, repair_torn_tail
from training.data import load_questions
from training.entry_args import add_debug_flag


def model_slug(model_id: str) -> str:
    """A folder name for a model id: lower case, [a-z0-9._-] only."""
    return re.sub(r"[^a-z0-9._-]+", "-", model_id.lower()).strip("-") or "model"


def order_questions(questions: Sequence[Question], seed: int | None) -> list[Question]:
    """A seeded permutation (stable across runs), or file order when `seed` is None."""
    ordered = list(questions)
    if seed is not None:
        random.Random(seed).shuffle(ordered)
    return ordered


def make_record(result: CritiqueResult, critique: SelfCritique) -> CorpusRecord:
    question = result.question
    label = None
    if result.ok and question.gold is not None:  # no gold answer: unlabelled, not wrong
        label = int(answers_match(result.response.final_answer, question.gold,
                                  question.task_type, question.choices))
    stored_question = {k: v for k, v in question.to_dict().items() if k != "context"}
    return CorpusRecord(
        question_id=question.id, dataset=question.dataset, question=stored_question,
        prompt_version=result.prompt_version, model_id=result.model_id,
        decoding=critique.decoding_params(), confidence_source=result.confidence_source,
        raw_response=result.raw_text, parsed=result.response.to_dict() if result.ok else None,
        parse_error=None if result.ok else f"{result.status}: {result.error}", gold=question.gold,
        label=label, prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens,
        finish_reason=result.finish_reason, latency_s=round(result.latency_s, 4),
        mode=str(question.metadata.get("mode", "image" if question.image_path else "text")),
        extra={"answer_probabilities": result.answer_probabilities,
               "context_chars": len(question.context)},
    )


@dataclass
class CorpusSummary:
    """Running totals printed at the end of a run."""

    answered: int = 0
    parsed: int = 0
    unlabelled: int = 0
    correct: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: dict[str, int] = field(default_factory=dict)

    def add(self, record: CorpusRecord) -> None:
        self.answered += 1
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        if record.parsed is None:
            status = (record.parse_error or "unknown").split(":", 1)[0]
            self.failures[status] = self.failures.get(status, 0) + 1
        elif record.label is None:
            self.parsed += 1
            self.unlabelled += 1
        else:
            self.parsed += 1
            self.correct += record.label

    @property
    def unanswered(self) -> int:
        """Questions whose call produced no answer this run (the next run retries them)."""
        return self.failures.get("llm_error", 0)

    @property
    def failed(self) -> int:
        return self.answered - self.parsed

    @property
    def labelled(self) -> int:
        return self.parsed - self.unlabelled

    @property
    def accuracy(self) -> float:
        """Share of the parsed answers with a gold answer that are right (0 before any)."""
        return self.correct / self.labelled if self.labelled else 0.0

    def lines(self) -> list[str]:
        failed = self.failed
        return [
            f"answered {self.answered}, parsed {self.parsed}, failed {failed} "
            f"({failed / max(self.answered, 1):.1%}: {self.failures or 'none'})",
            f"accuracy of kept answers {self.accuracy:.1%} ({self.correct}/{self.labelled}"
            + (f"; {self.unlabelled} without a gold answer)" if self.unlabelled else ")"),
            f"tokens: {self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion",
        ]


def build_corpus(questions: Sequence[Question], critique: SelfCritique, path: Path, *,
                 workers: int = 1, progress: bool = True,
                 on_record: Callable[[CorpusRecord], None] | None = None) -> CorpusSummary:
    """Answer every question not yet in `path` and append its record; return this run's totals.

    Holds the file's write lock throughout (`CorpusLockedError` if another process has it).
    """
    with corpus_lock(path):
        return _build_locked(questions, critique, path, workers=workers, progress=progress,
                             on_record=on_record)


def _build_locked(questions: Sequence[Question], critique: SelfCritique, path: Path, *,
                  workers: int, progress: bool,
                  on_record: Callable[[CorpusRecord], None] | None) -> CorpusSummary:
    if repair_torn_tail(path):
        print(f"note: cut a partial last line left by a crash in {path}", file=sys.stderr)
    check_same_setup(path, critique)
    done = completed_ids(path)
    todo = [q for q in questions if q.id not in done]
    summary = CorpusSummary()
    bar = _progress(len(todo), len(done), path.name, progress)
    try:
        for result in _answers(todo, critique, workers):
            record = make_record(result, critique)
            append_record(path, record)
            summary.add(record)
            if on_record:
                on_record(record)
            bar.update(1)
            bar.set_postfix(acc=f"{summary.accuracy:.2f}", failed=summary.failed)
    finally:
        bar.close()
    return summary


def check_same_setup(path: Path, critique: SelfCritique) -> None:
    """Refuse to add to a corpus made with another model, prompt version or decoding.

    A corpus mixing set-ups would train (or score) a router on answers it will never see; the
    `DatasetError` names each differing setting so the user can pick another folder or delete
    the file.
    """
    first = next(iter_records(path), None) if path.exists() else None
    if first is None:
        return
    stored = {"model": first.model_id, "prompt": first.prompt_version, **first.decoding}
    current = {"model": critique.model.model_id, "prompt": critique.prompt_version,
               **critique.decoding_params()}
    problems = [f"{key} {stored.get(key)!r} instead of {current.get(key)!r}"
                for key in sorted(set(stored) | set(current)) if stored.get(key) != current.get(key)]
    if problems:
        raise DatasetError(f"{path} does not fit this run ({'; '.join(problems)}); delete the "
                           "file or write to another folder (--out-dir / --corpus-dir)")


def answer_one(critique: SelfCritique, question: Question) -> CritiqueResult:
    """`critique.run(question)`, with any exception it lets through kept as this question's result.

    `SelfCritique.run` reports bad answers as results. A question it refuses before calling the
    model (`InvalidQuestionError`, e.g. `InputTooLargeError`: the prompt cannot fit the model's
    context) and any other exception escaping it (a bug: a response the parser did not foresee)
    must not end a run of a thousand questions, so each is recorded like a failed call: status
    `llm_error` with the reason, counted as unanswered, and retried by the next run.
    """
    try:
        return critique.run(question)
    except InvalidQuestionError as error:
        return _failed(critique, question, f"{type(error).__name__}: {error}")
    except Exception as error:  # noqa: BLE001 - see the docstring: kept, reported, retried
        return _failed(critique, question, f"unexpected {type(error).__name__}: {error} (a bug "
                       "in imad; the next run retries this question)")


def _failed(critique: SelfCritique, question: Question, reason: str) -> CritiqueResult:
    return CritiqueResult(question, "llm_error", None, "", reason, 0, 0, "error", 0.0,
                          critique.model.model_id, critique.prompt_version,
                          critique.confidence_source)


def _answers(questions: Sequence[Question], critique: SelfCritique, workers: int) -> Iterable[CritiqueResult]:
    if workers <= 1:
        for question in questions:
            yield answer_one(critique, question)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(answer_one, critique, q) for q in questions]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _progress(total: int, already: int, name: str, enabled: bool):  # noqa: ANN202 - tqdm type
    from tqdm import tqdm

    return tqdm(total=total, desc=f"{name} (+{already} cached)", unit="q", disable=not enabled,
                dynamic_ncols=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                     epilog=EXIT_STATUS_HELP)
    parser.add_argument("--dataset", action="append", required=True,
                        help="pubmedqa, gqa, medqa or a generic .jsonl file; repeatable")
    parser.add_argument("--llm", default="local", help="chat back-end spec (default: %(default)s)")
    parser.add_argument("--limit", type=ascii_int, default=None,
                        help="questions per dataset (≥ 1; default: all)")
    parser.add_argument("--order-seed", default="0",
                        help="seed of the question order (none: file order)")
    parser.add_argument("--out-dir", default=DEFAULT_CORPUS_DIR,
                        help="corpus root; files go to OUT_DIR/<model>/<dataset>.jsonl")
    parser.add_argument("--data-dir", default=None, help="datasets folder (default: $IMAD_DATA_DIR "
                                                         "or ../shared/datasets)")
    parser.add_argument("--image-dir", default=None,
                        help="images: GQA's <image_id>.jpg, or a generic file's relative image "
                             "paths (default: the file's folder); without it GQA is text-only")
    parser.add_argument("--max-tokens", type=ascii_int, default=512)
    parser.add_argument("--max-text-chars", type=ascii_int, default=CorpusConfig.max_text_chars,
                        help="length bound of the reasoning and critique fields")
    parser.add_argument("--confidence-source", choices=["verbal", "token_probability"], default="verbal")
    parser.add_argument("--workers", type=ascii_int, default=1,
                        help="concurrent calls (HTTP back-ends)")
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    add_debug_flag(parser)
    return parser.parse_args(argv)


def config_from_args(argv: Sequence[str] | None) -> CorpusConfig:
    """The checked settings of a command line (`ConfigError` naming the flag: exit 2)."""
    arguments = vars(parse_args(argv))
    arguments.pop("debug")  # read by the entry point (imad.commandline.entry.debug_requested)
    seed = arguments.pop("order_seed")
    return CorpusConfig(datasets=tuple(arguments.pop("dataset")), **arguments,
                        order_seed=parse_text(seed, table_of(CorpusConfig)["order_seed"],
                                              label("order_seed")))


PROG = "python -m training.corpus"


def run(argv: Sequence[str] | None = None) -> int:
    """The command: load and check every dataset first, then build the model and answer."""
    config = config_from_args(argv)
    datasets: list[tuple[str, list[Question]]] = []
    for dataset in config.datasets:
        questions = load_questions(dataset, data_dir=config.data_dir, image_dir=config.image_dir)
        if not questions:
            raise DatasetError(f"{dataset} has no questions; nothing to answer")
        name = Path(dataset).stem if dataset.endswith(".jsonl") else dataset
        datasets.append((name, order_questions(questions, config.order_seed)[: config.limit]))
    model = chat_model_from_spec(config.llm)
    critique = SelfCritique(model, max_tokens=config.max_tokens,
                            confidence_source=config.confidence_source,
                            max_text_chars=config.max_text_chars)
    unanswered = asked = 0
    for name, questions in datasets:
        modes = sorted({str(q.metadata.get("mode", "text")) for q in questions})
        path = Path(config.out_dir) / model_slug(model.model_id) / f"{name}.jsonl"
        print(f"{name}: {len(questions)} questions, mode {'/'.join(modes)}, model {model.model_id}, "
              f"corpus {path}")
        try:
            summary = build_corpus(questions, critique, path, workers=config.workers,
                                   progress=config.progress)
        except KeyboardInterrupt:
            print("every finished question is saved; rerun the command to continue",
                  file=sys.stderr)
            raise
        for line in summary.lines():
            print(f"  {line}")
        unanswered += summary.unanswered
        asked += summary.answered
    if unanswered:
        raise LLMError(f"{unanswered} of {asked} questions got no answer (see the llm_error "
                       "records); they are saved as failures and a rerun of this command retries "
                       "them")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: typed errors print `error: …` and exit 2 or 3 (`imad.commandline.entry`)."""
    return run_entry_point(PROG, lambda: run(argv), debug=debug_requested(argv))


if __name__ == "__main__":
    sys.exit(main())
