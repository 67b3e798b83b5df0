"""The zero-shot dataset loaders (GSM8K, MMLU, MMLU-Pro, BBH, ScienceQA) on the committed
fixtures, and the seeded stratified sample `--limit` takes."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from imad.critique.canonical import answers_match
from imad.errors import DatasetError
from imad.question import Question, TaskType
from training.data import DATASETS, load_questions
from training.data.bbh import EXCLUDED_TASKS, TASK_FORMATS, bbh_question, split_options
from training.data.gsm8k import gsm8k_gold
from training.data.sampling import stratified_order, take_sample


def test_all_zero_shot_datasets_are_registered():
    assert {"medqa", "gsm8k", "mmlu", "mmlu_pro", "bbh", "scienceqa"} <= set(DATASETS)
    assert len(TASK_FORMATS) + len(EXCLUDED_TASKS) == 27


def test_gsm8k(fixture_data_dir):
    questions = load_questions("gsm8k", data_dir=fixture_data_dir)
    assert len(questions) == 20
    first = questions[0]
    assert (first.id, first.task_type, first.gold) == ("gsm8k-0", TaskType.NUMERIC, "18")
    assert first.text.startswith("Janet’s ducks lay 16 eggs")
    assert all(q.gold.lstrip("-").replace(".", "").isdigit() for q in questions)


@pytest.mark.parametrize(("solution", "gold"), [
    ("so 2 + 2 = 4\n#### 4", "4"), ("#### 1,600", "1600"), ("a #### b\n#### -3.5 ", "-3.5")])
def test_gsm8k_gold(solution, gold):
    assert gsm8k_gold(solution) == gold


@pytest.mark.parametrize("solution", ["no marker", "#### "])
def test_gsm8k_gold_errors(solution):
    with pytest.raises(ValueError):
        gsm8k_gold(solution)


def test_mmlu(fixture_data_dir):
    questions = load_questions("mmlu", data_dir=fixture_data_dir)
    first = questions[0]
    assert first.id == "mmlu-abstract_algebra_0" and first.gold == "B"
    assert first.choices == ("0", "4", "2", "6") and first.metadata["subject"] == "abstract_algebra"
    assert Counter(q.metadata["subject"] for q in questions) == {
        s: 4 for s in ("abstract_algebra", "college_biology", "high_school_geography",
                       "moral_scenarios", "world_religions")}


def test_mmlu_limit_is_stratified_not_the_first_n(fixture_data_dir):
    sample = load_questions("mmlu", data_dir=fixture_data_dir, limit=5)
    # The first 5 lines are 4 abstract_algebra + 1 college_biology; the sample has every subject.
    assert len({q.metadata["subject"] for q in sample}) == 5
    assert sample == load_questions("mmlu", data_dir=fixture_data_dir, limit=5)  # seeded


def test_mmlu_pro_has_up_to_ten_options(fixture_data_dir):
    questions = load_questions("mmlu_pro", data_dir=fixture_data_dir)
    sizes = Counter(len(q.choices) for q in questions)
    assert max(sizes) == 10 and min(sizes) < 10
    ten = next(q for q in questions if len(q.choices) == 10)
    assert ten.option_letters[-1] == "J" and ten.id.startswith("mmlu_pro-")
    raw = [json.loads(line) for line in (fixture_data_dir / "mmlu_pro" / "test.jsonl").open()]
    assert [q.gold for q in questions] == [r["answer"] for r in raw]
    assert all(q.choices[ord(q.gold) - 65] == r["options"][r["answer_index"]]
               for q, r in zip(questions, raw, strict=True))


def test_scienceqa_captions_are_context(fixture_data_dir):
    questions = load_questions("scienceqa", data_dir=fixture_data_dir)
    modes = Counter(q.metadata["mode"] for q in questions)
    assert modes == {"caption": 10, "text": 10}
    captioned = next(q for q in questions if q.metadata["mode"] == "caption")
    assert captioned.context.startswith("Image (machine caption): ") and captioned.image_path is None
    text_only = next(q for q in questions if q.metadata["mode"] == "text")
    assert text_only.context == "" and text_only.id == "scienceqa-4"
    assert text_only.choices == ("chiasmus", "apostrophe") and text_only.gold == "B"
    sample = load_questions("scienceqa", data_dir=fixture_data_dir, limit=4)
    assert Counter(q.metadata["mode"] for q in sample) == {"caption": 2, "text": 2}


def test_bbh_formats(fixture_data_dir):
    questions = load_questions("bbh", data_dir=fixture_data_dir)
    by_task = Counter(q.metadata["task"] for q in questions)
    # snarks #88 (cut off after option A) is skipped.
    assert by_task == {"date_understanding": 5, "navigate": 5, "web_of_lies": 4,
                       "object_counting": 3, "snarks": 2}
    date = next(q for q in questions if q.id == "bbh-date_understanding-0")
    assert date.task_type is TaskType.MULTIPLE_CHOICE and len(date.choices) == 6
    assert "Options" not in date.text and date.text.endswith("in MM/DD/YYYY?")
    assert date.choices[ord(date.gold) - 65] == "12/25/1937"  # Christmas Eve 1937 + 1 day
    navigate = next(q for q in questions if q.id == "bbh-navigate-0")
    assert navigate.choices == ("Yes", "No") and navigate.gold == "B"  # target "No"
    lies = next(q for q in questions if q.id == "bbh-web_of_lies-0")
    assert lies.choices == ("Yes", "No") and lies.gold == "B"  # target "No", no options listed
    count = next(q for q in questions if q.id == "bbh-object_counting-0")
    assert count.task_type is TaskType.NUMERIC and count.gold == "8"  # 8 instruments, 4 stoves
    # The answers are scoreable: the gold letter matches the option's own text.
    assert answers_match("No", navigate.gold, navigate.task_type, navigate.choices)


def test_bbh_two_way_without_listed_options_and_skips():
    question = bbh_question("sports_understanding", 3, {"input": "Is it plausible?", "target": "no"})
    assert question.choices == ("yes", "no") and question.gold == "B"
    boolean = bbh_question("boolean_expressions", 0, {"input": "True and False is", "target": "False"})
    assert boolean.choices == ("True", "False") and boolean.gold == "B"
    with pytest.raises(ValueError, match="names no option"):
        bbh_question("ruin_names", 99, {"input": "Q\nOptions:\n(A) a\n(B) b", "target": "c, d"})
    with pytest.raises(ValueError, match="none of"):
        bbh_question("navigate", 0, {"input": "Q\nOptions:\n- Yes\n- No", "target": "Maybe"})


def test_split_options():
    assert split_options("Q?\nOptions:\n(A) x\n(B) y z\n") == ("Q?", ["(A) x", "(B) y z"])
    assert split_options("no options here") == ("no options here", [])


def test_bbh_errors_name_the_file(tmp_path):
    with pytest.raises(DatasetError, match="no BBH task files"):
        load_questions("bbh", data_dir=tmp_path)
    (tmp_path / "bbh").mkdir()
    (tmp_path / "bbh" / "navigate.json").write_text('{"examples": [{"input": "Q"}]}')
    with pytest.raises(DatasetError, match=r"navigate.json: example 1 is malformed \(KeyError"):
        load_questions("bbh", data_dir=tmp_path)
    (tmp_path / "bbh" / "navigate.json").write_text("[]")
    with pytest.raises(DatasetError, match="not a BBH task file"):
        load_questions("bbh", data_dir=tmp_path)


@pytest.mark.parametrize("name", ["gsm8k", "mmlu", "mmlu_pro", "scienceqa"])
def test_missing_files_name_the_path(tmp_path, name):
    with pytest.raises(DatasetError, match="not found"):
        load_questions(name, data_dir=tmp_path)


def _questions(sizes: dict[str, int]) -> list[Question]:
    return [Question(text=f"{group} {i}", id=f"{group}-{i}", metadata={"group": group})
            for group, size in sizes.items() for i in range(size)]


def test_stratified_order_is_proportional_nested_and_seeded():
    questions = _questions({"a": 600, "b": 300, "c": 100})
    order = stratified_order(questions, lambda q: q.metadata["group"])
    assert sorted(q.id for q in order) == sorted(q.id for q in questions)  # a permutation
    for n in (10, 100, 500):
        counts = Counter(q.metadata["group"] for q in order[:n])
        for group, share in (("a", 0.6), ("b", 0.3), ("c", 0.1)):
            assert abs(counts[group] - share * n) <= 1  # systematic sampling: off by ≤ 1
    small, large = take_sample(questions, 50, lambda q: q.metadata["group"]), \
        take_sample(questions, 200, lambda q: q.metadata["group"])
    assert large[:50] == small  # a larger --limit reuses the smaller sample's answers
    assert take_sample(questions, 50, lambda q: q.metadata["group"], seed=1) != small
    assert take_sample(questions, None, lambda q: "x") == questions  # no limit: file order
