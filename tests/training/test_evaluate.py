"""`python -m training.evaluate` end to end: report, JSON, PNGs, the answer cache, and errors.

The CLI test replays the real embedded model's recorded answers to a 10-question generic file
(tests/fixtures/evaluate); the API tests use a scripted model. The router has seeded random
weights (tests/router/router_helpers.py); the logistic-regression baseline is fitted on the
synthetic fixture corpus.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score

from imad.errors import CheckpointError, ConfigError, DatasetError
from imad.llm.scripted import ScriptedChat
from imad.question import Question
from imad.router import Router
from tests.router.router_helpers import make_router
from training.data import load_questions
from training.evaluate import evaluate, main
from training.evaluation.config import EvaluateConfig
from training.evaluation.plots import DPI, PANEL_SIZE_IN
from training.evaluation.report import JSON_FILE, MARKDOWN_FILE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
QUESTIONS = FIXTURES / "evaluate" / "questions.jsonl"
RECORDED = FIXTURES / "evaluate" / "smollm2-calls.sqlite"
TRAIN_CORPUS = FIXTURES / "corpus_small"
PNG_SIZE = (int(3 * PANEL_SIZE_IN * DPI), int(PANEL_SIZE_IN * DPI))
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("evaluate")


@pytest.fixture(scope="module")
def router_dir(workdir) -> Path:
    router = make_router(seed=3, tau=0.5).with_record(data={
        "model_ids": ["synthetic-fixture"], "prompt_versions": ["self-critique-v1"],
        "datasets": {"pubmedqa": {"records": 90, "labelled": 85, "parse_failures": 5}},
    })
    return router.save(workdir / "router")


def config(workdir: Path, name: str, datasets, **overrides) -> EvaluateConfig:
    settings = dict(datasets=tuple(datasets), router=str(workdir / "router"),
                    corpus_dir=str(workdir / name / "corpus"), out=str(workdir / name / "out"),
                    train_corpus=(str(TRAIN_CORPUS),), feature_cache=str(workdir / "features"),
                    progress=False)
    return EvaluateConfig(**{**settings, **overrides})


def scripted(gold: dict[str, Question], right: float = 0.5, garbage: tuple[str, ...] = ()):
    """A model that answers right for about `right` of the questions, confident when right."""

    def respond(request):
        text = request.messages[-1].text
        question = next(q for t, q in gold.items() if f"Question: {t}" in text)
        if question.id in garbage:
            return "I refuse to answer in JSON."
        digest = int(hashlib.sha256(question.id.encode()).hexdigest(), 16)
        correct = (digest % 100) < right * 100
        options = request.json_schema["properties"]["initial_answer"].get("enum")
        wrong = next((o for o in options or () if o != question.gold), "nonsense")
        answer = question.gold if correct else wrong
        if question.task_type.value == "multiple_choice" and len(question.gold) > 1:
            answer = "B" if correct else "A"  # the fixture's "cow" question, gold given as text
        confidence = 55 + digest % 45 if correct else digest % 70
        return json.dumps({
            "initial_answer": answer, "alternative_answer": answer, "final_answer": answer,
            "initial_reasoning": "I recall this fact clearly from general knowledge.",
            "critique": "One might argue for another option, however that seems unlikely.",
            "confidence_initial": confidence, "confidence_critique": 100 - confidence})

    return ScriptedChat(respond, model_id="scripted-test")


def gold_of(*datasets, data_dir=None) -> dict[str, Question]:
    return {q.text.strip(): q for d in datasets for q in load_questions(d, data_dir=data_dir)}


def replay_spec(tmp_path: Path) -> str:
    copy = tmp_path / "calls.sqlite"
    shutil.copyfile(RECORDED, copy)  # SQLite writes journal files beside the database
    return f"cached:{copy}::local"


@pytest.fixture
def no_generation(monkeypatch):
    """Fail loudly if a replayed answer is missing and the real model would be called."""
    from imad.llm.local_gguf import LocalGGUFChat

    def refuse(self, request):
        raise AssertionError("cache miss: rerun tests/fixtures/evaluate/record_fixture.py")

    monkeypatch.setattr(LocalGGUFChat, "chat", refuse)


def test_cli_writes_report_json_and_pngs(workdir, router_dir, tmp_path, capsys, no_generation):
    arguments = ["--dataset", str(QUESTIONS), "--router", str(router_dir),
                 "--llm", replay_spec(tmp_path), "--corpus-dir", str(tmp_path / "corpus"),
                 "--out", str(tmp_path / "out"), "--train-corpus", str(TRAIN_CORPUS),
                 "--feature-cache", str(workdir / "features"), "--no-progress"]
    assert main(arguments) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "out"
    assert f"report: {out / MARKDOWN_FILE}" in printed and "| router |" in printed
    document = json.loads((out / JSON_FILE).read_text())
    data = document["datasets"]["questions"]
    assert data["questions"] == 10 and data["generated_answers"] == 10
    assert data["corpus"].endswith("smollm2-135m-instruct-q4_1/eval/questions.jsonl")
    assert document["llm"]["model_id"] == "SmolLM2-135M-Instruct-Q4_1"

    with Image.open(out / data["plot"]) as image:
        assert image.format == "PNG" and image.size == PNG_SIZE
        pixels = np.asarray(image.convert("L"))
    assert pixels.std() > 10  # a drawing, not a blank canvas

    # Every scorer's numbers agree with sklearn on the per-answer probabilities in the JSON.
    answers = [a for a in data["answers"] if a["status"] == "ok"]
    assert len(answers) == data["parsed"] and data["parsed"] + sum(data["failures"].values()) == 10
    labels = np.array([a["label"] for a in answers])
    assert data["accuracy"] == pytest.approx(labels.mean())
    for name in ("router", "confidence_initial", "logistic_regression"):
        p = np.array([a["p"][name] for a in answers])
        metrics = data["scorers"][name]
        assert metrics["brier"] == pytest.approx(brier_score_loss(labels, p))
        assert metrics["trigger_rate"] == pytest.approx(np.mean(p < 0.5))
        if len(set(labels)) == 2:
            assert metrics["auroc"] == pytest.approx(roc_auc_score(labels, p))
        else:
            assert metrics["auroc"] is None and any("AUROC is undefined" in n for n in data["notes"])
        pooled = data["scoreboard"]["pooled"][name]  # issue 35: the interval beside the number
        assert pooled["auroc"] == metrics["auroc"] and pooled["n"] == data["parsed"]
        if pooled["auroc"] is not None:
            assert pooled["low"] <= pooled["auroc"] <= pooled["high"]
        assert sum(row[name]["n"] for row in data["scoreboard"]["task_type"].values()) == data["parsed"]
        prob_true, prob_pred = calibration_curve(labels, p, n_bins=15)
        np.testing.assert_allclose(metrics["bins"]["accuracy"], prob_true)
        np.testing.assert_allclose(metrics["bins"]["confidence"], prob_pred)
    # The raw-confidence baseline is the model's own confidence_initial.
    records = [json.loads(line) for line in Path(data["corpus"]).read_text().splitlines()]
    confidence = {r["question_id"]: r["parsed"]["confidence_initial"] for r in records if r["parsed"]}
    assert all(a["p"]["confidence_initial"] == confidence[a["id"]] for a in answers)
    fitted = document["baselines"]["logistic_regression"]["fitted_on"]
    assert fitted["train_rows"] == 132 and fitted["files"] == [str(TRAIN_CORPUS)]
    markdown = (out / MARKDOWN_FILE).read_text()
    assert "## questions" in markdown and f"]({data['plot']})" in markdown
    assert "fitted on the 132 training-split rows" in markdown
    assert "AUROC [95% bootstrap interval] on this dataset: router" in markdown
    assert "Within task type multiple_choice" in markdown

    # A rerun reuses every cached answer and prints the same JSON document.
    assert main([*arguments, "--json"]) == 0
    rerun = json.loads(capsys.readouterr().out)
    assert rerun["datasets"]["questions"]["reused_answers"] == 10
    assert rerun["datasets"]["questions"]["generated_answers"] == 0
    for key in ("generated_answers", "reused_answers"):
        rerun["datasets"]["questions"].pop(key), document["datasets"]["questions"].pop(key)
    assert rerun == document


def test_several_datasets_parse_failures_and_the_training_overlap(workdir, router_dir,
                                                                 fixture_data_dir):
    gold = gold_of(str(QUESTIONS), "mmlu", "pubmedqa", data_dir=fixture_data_dir)
    model = scripted(gold, garbage=("sky", "paris"))
    result = evaluate(config(workdir, "several", [str(QUESTIONS), "mmlu", "pubmedqa"],
                             limit=6, data_dir=str(fixture_data_dir)), model=model)
    datasets = result.document["datasets"]
    assert list(datasets) == ["questions", "mmlu", "pubmedqa"]
    assert len(model.calls) == 18
    questions = datasets["questions"]
    assert questions["questions"] == 6 and questions["parsed"] == 4
    assert questions["failures"] == {"parse_error": 2}
    assert questions["parse_failure_rate"] == pytest.approx(2 / 6)
    router = questions["scorers"]["router"]
    assert router["n"] == 4
    assert router["trigger_rate_all"] == pytest.approx((2 + router["trigger_rate"] * 4) / 6)
    assert datasets["pubmedqa"]["in_router_training_data"]
    assert "not zero-shot" in " ".join(datasets["pubmedqa"]["notes"])
    assert not datasets["mmlu"]["in_router_training_data"]
    assert len({load_questions("mmlu", data_dir=fixture_data_dir)[0].metadata["subject"]}) == 1
    assert set(result.plots) == set(datasets) and all(p.is_file() for p in result.plots.values())
    summary = result.document["summary"]["router"]
    eces = [d["scorers"]["router"]["ece"] for d in datasets.values()]
    assert summary["ece"] == pytest.approx(np.mean(eces)) and summary["ece_datasets"] == 3
    assert "## Mean over datasets" in result.markdown


def test_random_and_oracle_references_and_the_routers_importance(workdir, router_dir):
    """Issue 35: the report places each scorer between a blind guess and perfection, computed
    through the same metric code, and says which features the router leaned on here."""
    gold = gold_of(str(QUESTIONS))
    result = evaluate(config(workdir, "references", [str(QUESTIONS)]), model=scripted(gold))
    data = result.document["datasets"]["questions"]
    labels = np.array([a["label"] for a in data["answers"] if a["status"] == "ok"])
    assert 0 < labels.sum() < labels.size  # both classes, so every AUROC is defined
    oracle, random = data["scorers"]["oracle"], data["scorers"]["random"]
    assert (oracle["auroc"], oracle["auroc_low"], oracle["auroc_high"]) == (1.0, 1.0, 1.0)
    assert (oracle["ece"], oracle["ece_low"], oracle["ece_high"], oracle["brier"]) == (0.0, 0.0, 0.0, 0.0)
    assert oracle["kept_accuracy"] == 1.0
    random_p = np.array([a["p"]["random"] for a in data["answers"] if a["status"] == "ok"])
    np.testing.assert_array_equal(random_p, np.random.default_rng(0).uniform(size=labels.size))
    assert random["auroc"] == pytest.approx(roc_auc_score(labels, random_p))
    assert random["auroc_low"] <= 0.5 <= random["auroc_high"]
    assert random["ece_low"] <= random["ece"] <= random["ece_high"]
    for name in ("router", "confidence_initial", "logistic_regression"):  # intervals everywhere
        row = data["scorers"][name]
        assert row["ece_low"] <= row["ece"] <= row["ece_high"]
        assert row["auroc_low"] <= row["auroc"] <= row["auroc_high"]
    assert data["scoreboard"]["pooled"]["oracle"]["auroc"] == 1.0
    assert result.document["summary"]["oracle"]["ece"] == 0.0
    importance = data["importance"]
    router = Router.load(router_dir)
    assert [row["feature"] for row in importance] != list(router.feature_names)  # sorted by drop
    assert {row["feature"] for row in importance} == set(router.feature_names)
    assert len(importance) == len(router.feature_names) == 41
    drops = [row["auroc_drop"] for row in importance]
    assert drops == sorted(drops, reverse=True) and all(np.isfinite(drops))
    assert "| oracle (reference) | 0.000 [0.00, 0.00] |" in result.markdown
    assert "| random (reference) |" in result.markdown
    assert f"What the router leans on here (drop in its AUROC when one feature is shuffled, mean " \
           f"of 5): {importance[0]['feature']} {drops[0]:+.3f}" in result.markdown
    with Image.open(result.plots["questions"]) as image:  # the references are not drawn
        assert image.size == PNG_SIZE


def test_all_answers_wrong_gives_null_auroc_and_still_a_report(workdir, router_dir):
    gold = gold_of(str(QUESTIONS))
    result = evaluate(config(workdir, "wrong", [str(QUESTIONS)]), model=scripted(gold, right=0.0))
    data = result.document["datasets"]["questions"]
    assert data["accuracy"] == 0.0
    for metrics in data["scorers"].values():
        assert metrics["auroc"] is None and metrics["brier"] is not None
        assert metrics["kept_accuracy"] in (None, 0.0)
    assert data["notes"] == ["all 10 parsed answers are wrong: AUROC is undefined (null)"]
    assert "n/a" in result.markdown


def test_no_parsed_answers_and_no_logistic_baseline(workdir, router_dir):
    gold = gold_of(str(QUESTIONS))
    model = scripted(gold, garbage=tuple(q.id for q in gold.values()))
    result = evaluate(config(workdir, "garbage", [str(QUESTIONS)], train_corpus=()), model=model)
    data = result.document["datasets"]["questions"]
    assert data["parsed"] == 0 and data["parse_failure_rate"] == 1.0 and data["accuracy"] is None
    assert data["scorers"]["logistic_regression"] is None
    assert data["scorers"]["router"]["trigger_rate_all"] == 1.0
    assert data["scorers"]["router"]["ece"] is None
    assert any("records no training corpus" in note for note in data["notes"])
    assert result.document["baselines"]["logistic_regression"]["fitted_on"] is None
    with Image.open(result.plots["questions"]) as image:
        assert image.size == PNG_SIZE


def test_cached_answers_must_fit_the_run(workdir, router_dir):
    gold = gold_of(str(QUESTIONS))
    first = config(workdir, "stale", [str(QUESTIONS)])
    evaluate(first, model=scripted(gold))
    with pytest.raises(DatasetError, match="does not fit this run.*max_tokens 512 instead of 256"):
        evaluate(config(workdir, "stale", [str(QUESTIONS)], max_tokens=256), model=scripted(gold))
    edited = Path(first.out).parent / "edited" / QUESTIONS.name  # same name: same cache file
    edited.parent.mkdir()
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
    rows[0]["answer"] = "no"
    edited.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(DatasetError, match="gold 'yes' instead of 'no'"):
        evaluate(config(workdir, "stale", [str(edited)], corpus_dir=first.corpus_dir),
                 model=scripted(gold_of(str(edited))))


@pytest.mark.parametrize(("arguments", "code", "message"), [
    (["--dataset", "imagenet"], 2, "unknown dataset 'imagenet'"),
    (["--dataset", "EMPTY"], 3, "dataset 'empty' has no questions"),
    (["--dataset", "NO_GOLD"], 3, "have no gold answer"),
    (["--dataset", str(QUESTIONS), "--limit", "0"], 2,
     "limit (--limit): must be none or an integer in [1, 1000000], got 0"),
    (["--dataset", str(QUESTIONS), "--router", "MISSING"], 3, "no router checkpoint directory"),
    (["--dataset", str(QUESTIONS), "--dataset", str(QUESTIONS)], 2, "a dataset is named twice"),
])
def test_bad_inputs_give_clear_errors(arguments, code, message, tmp_path, router_dir, capsys):
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "no_gold.jsonl").write_text('{"question": "Is it?", "task_type": "yes_no_maybe"}\n')
    replaced = [str(tmp_path / "empty.jsonl") if a == "EMPTY" else
                str(tmp_path / "no_gold.jsonl") if a == "NO_GOLD" else
                str(tmp_path / "missing") if a == "MISSING" else a for a in arguments]
    if "--router" not in replaced:
        replaced += ["--router", str(router_dir)]
    assert main([*replaced, "--llm", "scripted-never-built", "--out", str(tmp_path / "out"),
                 "--no-progress"]) == code
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing is written before the inputs are checked


def test_config_errors_are_typed():
    with pytest.raises(ConfigError, match="name at least one dataset"):
        EvaluateConfig(datasets=())
    with pytest.raises(ConfigError, match="confidence_source"):
        EvaluateConfig(datasets=("gsm8k",), confidence_source="vibes")
    with pytest.raises(CheckpointError):
        evaluate(EvaluateConfig(datasets=("gsm8k",), router="/nonexistent/router"))
