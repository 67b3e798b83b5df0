"""The end-to-end benchmark and its command line (`python -m training.evaluate --e2e`): exact
numbers on a scripted case, the call cache, failures, bad inputs, and one run with the real
embedded model (marked `llm`).

The scripted case: four MedQA fixture questions; the self-critique is right on the first two;
every other call (debate agents, CoT, samples) answers right on questions 1, 3 and 4; the
router's p is read from a table (0.9, 0.2, 0.1, 0.95 at τ = 0.5), so iMAD keeps questions 1
and 4 and debates 2 and 3 — one cell of each kind the paper's breakdown has.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imad.critique.call import SelfCritique
from imad.debate import MADConfig, create_backend
from imad.decide import RouterScore
from imad.errors import LLMServerError
from imad.llm.cache import CachedChat
from imad.llm.local_gguf import DEFAULT_MODEL_ID
from imad.llm.scripted import ScriptedChat, count_words
from imad.pipeline import Pipeline, router_confidence_source
from tests.router.router_helpers import make_router
from training.data import load_questions
from training.e2e.benchmark import evaluate_e2e
from training.e2e.config import E2EConfig
from training.e2e.metrics import DECISIONS, TRANSITIONS
from training.e2e.paper_table3 import SPEC_SOURCE
from training.e2e.report import E2E_JSON_FILE, E2E_MARKDOWN_FILE
from training.evaluate import main, parse_backend_options
from training.evaluation.deferral import deferral_curves, outcomes
from training.evaluation.responses import collect_responses

FIXTURE_DATA = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
CRITIQUE_RIGHT = (True, True, False, False)
AGENTS_RIGHT = (True, False, True, True)
CONFIDENCE = (95, 95, 40, 40)  # DOWN (θ = 0.8) keeps questions 1 and 2, debates 3 and 4
ROUTER_P = (0.9, 0.2, 0.1, 0.95)
SMALL = {"self_consistency": {"n_samples": 3}, "mad": {"n_agents": 3, "n_rounds": 2},
         "acemad": {"n_agents": 3, "n_rounds": 1}, "svrmad": {"n_agents": 3, "consensus_agree": 2},
         "down": {"debate_config": MADConfig(n_agents=3, n_rounds=2)}}
METHODS = ("cot", "self_consistency", "mad", "down", "imad_acemad", "imad_svrmad")


@pytest.fixture(scope="module")
def questions():
    return load_questions("medqa", data_dir=FIXTURE_DATA, limit=4)


def _wrong(question):
    return next(letter for letter in question.option_letters if letter != question.gold)


def _fill(schema, answer, confidence):
    """A reply that fits `schema`: the answer wherever an answer goes, beliefs all on it."""
    if schema.get("type") == "object":
        properties = schema.get("properties", {})
        if answer in properties:  # a belief map over the options
            return {option: 100 if option == answer else 0 for option in properties}
        return {name: _fill(part, answer, confidence) for name, part in properties.items()}
    if schema.get("type") == "integer":
        return confidence
    if "enum" in schema:
        return answer if answer in schema["enum"] else schema["enum"][0]
    return f"Because {answer} fits best."


def responder(questions, fail_on: str | None = None):
    """The scripted model's reply function (module docstring); calls other than the
    self-critique raise LLMServerError on question `fail_on`."""

    def respond(request):
        index = next(i for i, q in enumerate(questions) if q.text in request.messages[-1].text)
        question = questions[index]
        schema = request.json_schema
        if "critique" in schema["properties"]:
            answer = question.gold if CRITIQUE_RIGHT[index] else _wrong(question)
            other = _wrong(question) if answer == question.gold else question.gold
            return json.dumps({
                "initial_answer": answer, "initial_reasoning": "I recall this clearly.",
                "critique": "Another option is possible but unlikely.",
                "alternative_answer": other, "final_answer": answer,
                "confidence_initial": CONFIDENCE[index],
                "confidence_critique": 100 - CONFIDENCE[index]})
        if question.id == fail_on:
            raise LLMServerError("HTTP 503 after 3 retries")
        answer = question.gold if AGENTS_RIGHT[index] else _wrong(question)
        return json.dumps(_fill(schema, answer, CONFIDENCE[index]))

    return respond


def table_router(questions, tau=0.5):
    """A router whose p is ROUTER_P by question (no features), so decisions are exact."""
    router = make_router(tau=tau)
    table = {q.id: p for q, p in zip(questions, ROUTER_P, strict=True)}

    def score(question, response, *, parse_error=None, featurizer=None):
        return RouterScore(question.id, table[question.id])  # the checkpoint's policy decides

    router.score = score
    return router


def config(tmp_path, **overrides) -> E2EConfig:
    settings = dict(datasets=("medqa",), data_dir=str(FIXTURE_DATA), limit=4,
                    cache=str(tmp_path / "calls.sqlite"), out=str(tmp_path / "out"),
                    corpus_dir=None, progress=False, backend_options=SMALL)
    return E2EConfig(**{**settings, **overrides})


def scripted(questions, **kwargs) -> ScriptedChat:
    return ScriptedChat(responder(questions, **kwargs), model_id="scripted-e2e")


def reference_tokens(method, question, questions, router) -> int:
    """Tokens the method spends on `question` by the scripted model's own count, on a fresh
    model with no cache: words of every prompt sent plus words of every reply."""
    chat = scripted(questions)
    backend_name = {"imad_acemad": "acemad", "imad_svrmad": "svrmad"}.get(method, method)
    backend = create_backend(backend_name, chat, **SMALL.get(backend_name, {}))
    if method.startswith("imad"):
        Pipeline(router, chat, backend).answer(question)
    else:
        backend.run(question)
    respond = responder(questions)
    return sum(sum(count_words(m.text) for m in request.messages) + count_words(respond(request))
               for request in chat.calls)


def test_exact_numbers_on_a_scripted_case(tmp_path, questions):
    router = table_router(questions)
    chat = scripted(questions)
    result = evaluate_e2e(config(tmp_path), model=chat, router=router)
    data = result.document["datasets"]["medqa"]
    methods = data["methods"]
    assert list(methods) == list(METHODS) and data["questions"] == 4

    accuracy = {m: methods[m]["accuracy"] for m in METHODS}
    assert accuracy == {"cot": 0.75, "self_consistency": 0.75, "mad": 0.75, "down": 0.75,
                        "imad_acemad": 0.5, "imad_svrmad": 0.5}
    assert [a["correct"] for a in data["answers"]["imad_svrmad"]] == [True, False, True, False]
    calls = {m: methods[m]["calls_per_question"] for m in METHODS}
    # iMAD: 1 self-critique call each + 2 fresh agents on the 2 debated questions (agent 0 is
    # the self-critique); DOWN: 1 opening + 5 MAD calls on its 2 debated questions.
    assert calls == {"cot": 1.0, "self_consistency": 3.0, "mad": 6.0, "down": 3.5,
                     "imad_acemad": 2.0, "imad_svrmad": 2.0}
    assert methods["mad"]["messages_per_question"] == 6.0  # N(N−1)(R−1) = 3·2·1
    assert methods["down"]["messages_per_question"] == 3.0  # two debates of 6 over 4 questions
    assert all(methods[m]["failures"] == 0 for m in METHODS)

    # Tokens: every question's count is the scripted model's own count of that method's calls,
    # and the summary sums them.
    for method in METHODS:
        answers = data["answers"][method]
        for answer, question in zip(answers, questions, strict=True):
            assert answer["total_tokens"] == reference_tokens(method, question, questions, router)
            assert answer["total_tokens"] == answer["prompt_tokens"] + answer["completion_tokens"]
        row = methods[method]
        assert row["total_tokens"] == sum(a["total_tokens"] for a in answers)
        assert row["tokens_per_question"] == row["total_tokens"] / 4
        assert row["apt"] == pytest.approx(100 * row["accuracy"] * 100_000
                                           / row["tokens_per_question"])

    # The paper's decision breakdown: every cell, summing to the questions.
    imad = methods["imad_acemad"]["decisions"]
    assert imad["skip"] == {"right_to_right": 1, "right_to_wrong": 0, "wrong_to_right": 0,
                            "wrong_to_wrong": 1}
    assert imad["trigger"] == {"right_to_right": 0, "right_to_wrong": 1, "wrong_to_right": 1,
                               "wrong_to_wrong": 0}
    assert methods["imad_svrmad"]["decisions"] == imad
    assert imad["trigger_rate"] == 0.5 and imad["single_agent_accuracy"] == 0.5
    assert imad["fixed_share_of_triggers"] == 0.5 and imad["broken_share_of_triggers"] == 0.5
    down = methods["down"]["decisions"]
    assert down["skip"]["right_to_right"] == 1 and down["skip"]["wrong_to_wrong"] == 1
    assert down["trigger"]["right_to_right"] == 2
    for method in ("down", "imad_acemad", "imad_svrmad"):
        cells = methods[method]["decisions"]
        assert sum(cells[d][t] for d in DECISIONS for t in TRANSITIONS) + cells["undecided"] == 4
    assert "decisions" not in methods["cot"]

    # Against full MAD: the token share, the accuracy lost, the goal not met.
    versus = methods["imad_svrmad"]["versus_full_mad"]
    assert versus["tokens_ratio"] == pytest.approx(methods["imad_svrmad"]["tokens_per_question"]
                                                   / methods["mad"]["tokens_per_question"])
    assert versus["accuracy_delta_pct"] == -25.0 and versus["goal_met"] is False
    assert "versus_full_mad" not in methods["cot"]

    out = tmp_path / "out"
    assert json.loads((out / E2E_JSON_FILE).read_text()) == result.document
    markdown = (out / E2E_MARKDOWN_FILE).read_text()
    assert markdown == result.markdown
    assert "| iMAD + SVR-MAD | 50.0% |" in markdown and "trigger ✗→✓" in markdown
    assert "Gemini 2.0 Flash, a different model" in markdown and "→ **not met**" in markdown
    assert result.document["paper"]["mean_of_six"][0] == {
        "method": "CoT", "ours": ["cot"], "accuracy_pct": 81.1, "tokens_per_question": 1324,
        "source": SPEC_SOURCE}


def test_replay_makes_no_new_call_and_gives_the_same_numbers(tmp_path, questions):
    router = table_router(questions)
    first = evaluate_e2e(config(tmp_path), model=scripted(questions), router=router)
    again = scripted(questions)
    rerun = evaluate_e2e(config(tmp_path), model=again, router=router)  # record mode: all hits
    replay = scripted(questions)
    replayed = evaluate_e2e(config(tmp_path, cache_mode="replay"), model=replay, router=router)
    assert again.calls == [] and replay.calls == []
    assert rerun.document == first.document
    for document in (first.document, replayed.document):
        document["config"].pop("cache_mode"), document["cache"].pop("mode")
    assert replayed.document == first.document


def test_a_failing_question_is_recorded_and_the_run_goes_on(tmp_path, questions):
    broken = questions[1].id  # iMAD debates it (p = 0.2)
    result = evaluate_e2e(config(tmp_path), model=scripted(questions, fail_on=broken),
                          router=table_router(questions))
    data = result.document["datasets"]["medqa"]
    for method in ("cot", "self_consistency", "mad", "down"):
        row = data["methods"][method]
        assert row["failures"] == 1 and row["failure_kinds"] == {"DebateError": 1}
        failed = data["answers"][method][1]
        assert failed["error"].startswith("DebateError: every opening call")
        assert failed["answer"] == "" and failed["total_tokens"] == 0 and failed["failed_calls"] > 0
        assert [a["error"] is None for a in data["answers"][method]] == [True, False, True, True]
    assert data["methods"]["cot"]["accuracy"] == 0.75  # it got the failed question wrong anyway
    imad = data["answers"]["imad_svrmad"][1]
    # Both fresh agents failed; the self-critique, agent 0's opening, carries the debate.
    assert imad["stop"] == "debate" and imad["correct"] and imad["error"] is None
    assert imad["total_tokens"] > 0 and imad["failed_calls"] == 2 and imad["calls"] == 3
    assert data["methods"]["imad_svrmad"]["failures"] == 0
    assert data["methods"]["imad_svrmad"]["failed_calls"] == 2
    assert "| CoT | 75.0% |" in result.markdown
    assert "| 1 (DebateError 1); 1 failed call |" in result.markdown
    assert "| 0; 2 failed calls |" in result.markdown


def test_a_replay_miss_fails_its_question(tmp_path, questions):
    evaluate_e2e(config(tmp_path, methods=("cot",)), model=scripted(questions))
    result = evaluate_e2e(config(tmp_path, methods=("cot", "mad"), cache_mode="replay"),
                          model=scripted(questions))
    methods = result.document["datasets"]["medqa"]["methods"]
    assert methods["cot"]["failures"] == 0 and methods["cot"]["accuracy"] == 0.75
    assert methods["mad"]["failures"] == 4 and methods["mad"]["failure_kinds"] == {
        "ReplayMissError": 4}
    assert methods["mad"]["accuracy"] == 0.0 and methods["mad"]["total_tokens"] == 0
    assert result.document["router"] is None  # no iMAD method: no router needed


def test_self_critiques_of_the_calibration_run_are_reused(tmp_path, questions):
    corpus = tmp_path / "corpus"
    model = scripted(questions)
    router = table_router(questions)
    critique = SelfCritique(model, confidence_source=router_confidence_source(router))
    collect_responses("medqa", questions, critique, corpus, progress=False)
    chat = scripted(questions)
    result = evaluate_e2e(config(tmp_path, methods=("imad_svrmad",), corpus_dir=str(corpus)),
                          model=chat, router=router)
    assert result.document["cache"]["primed_from_corpus"] == {"medqa": 4}
    assert not [r for r in chat.calls if "critique" in r.json_schema["properties"]]
    assert len(chat.calls) == 4  # only the two debates' fresh agents
    assert result.document["datasets"]["medqa"]["methods"]["imad_svrmad"]["accuracy"] == 0.5


@pytest.mark.slow
def test_cli_replays_a_recorded_run_with_the_real_router(tmp_path, questions, capsys, monkeypatch):
    """The CLI with a saved router (real features) and `--llm local` in replay mode: the
    embedded model is named, never loaded or called."""
    from imad.llm.local_gguf import LocalGGUFChat

    router_dir = make_router(seed=3, tau=0.5).save(tmp_path / "router")
    recorded = evaluate_e2e(config(tmp_path, router=str(router_dir), backend_options={}),
                            model=ScriptedChat(responder(questions), model_id=DEFAULT_MODEL_ID,
                                               supports_logprobs=True))  # as LocalGGUFChat

    def refuse(self, request):
        raise AssertionError("the replay called the embedded model")

    monkeypatch.setattr(LocalGGUFChat, "chat", refuse)
    arguments = ["--e2e", "--dataset", "medqa", "--data-dir", str(FIXTURE_DATA), "--limit", "4",
                 "--router", str(router_dir), "--llm", "local", "--e2e-cache",
                 str(tmp_path / "calls.sqlite"), "--e2e-cache-mode", "replay", "--out",
                 str(tmp_path / "cli"), "--no-progress"]
    assert main([*arguments, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["datasets"] == recorded.document["datasets"]
    assert printed["llm"] == {"model_id": DEFAULT_MODEL_ID, "spec": "local"}
    assert (tmp_path / "cli" / E2E_MARKDOWN_FILE).is_file()
    assert main(arguments) == 0
    assert "# End-to-end benchmark" in capsys.readouterr().out


@pytest.mark.parametrize(("arguments", "code", "message"), [
    (["--router", "MISSING"], 3, "no router checkpoint directory"),
    (["--dataset", "EMPTY"], 3, "dataset 'empty' has no questions"),
    (["--e2e-cache-mode", "replay", "--e2e-cache", "OTHER_MODEL"], 2,
     "holds calls of ['scripted-e2e'], not of 'SmolLM2-135M-Instruct-Q4_1'"),
    (["--e2e-cache-mode", "replay", "--e2e-cache", "NOTHING"], 2, "nothing to replay"),
    (["--backend-option", "mad.n_agentz=2"], 2,
     "--backend-option mad.n_agentz: unknown setting of MADConfig"),
    (["--backend-option", "n_agents=2"], 2, "write BACKEND.FIELD=VALUE"),
    (["--tau", "1.5"], 2, "tau (--tau): must be none or a finite number in [0, 1], got 1.5"),
])
def test_bad_inputs_give_clear_errors(arguments, code, message, tmp_path, questions, capsys):
    (tmp_path / "empty.jsonl").write_text("\n")
    evaluate_e2e(config(tmp_path, methods=("cot",), cache=str(tmp_path / "other.sqlite")),
                 model=scripted(questions))
    router = make_router().save(tmp_path / "router")
    replaced = {"MISSING": str(tmp_path / "missing"), "EMPTY": str(tmp_path / "empty.jsonl"),
                "OTHER_MODEL": str(tmp_path / "other.sqlite"),
                "NOTHING": str(tmp_path / "nothing.sqlite")}
    arguments = [replaced.get(a, a) for a in arguments]
    defaults = {"--dataset": "medqa", "--router": str(router)}
    for flag, value in defaults.items():
        if flag not in arguments:
            arguments += [flag, value]
    assert main(["--e2e", *arguments, "--data-dir", str(FIXTURE_DATA), "--llm", "local",
                 "--out", str(tmp_path / "cli"), "--no-progress"]) == code
    assert message in capsys.readouterr().err
    assert not (tmp_path / "cli").exists()  # nothing is written before the inputs are checked
    assert not (tmp_path / "nothing.sqlite").exists()


def test_end_to_end_flags_need_e2e(capsys):
    assert main(["--dataset", "medqa", "--e2e-cache", "x.sqlite"]) == 2
    assert "--e2e-cache: only applies to the end-to-end benchmark; add --e2e" in \
        capsys.readouterr().err


def test_backend_options_are_parsed_as_json():
    assert parse_backend_options(["mad.n_agents=2", "down.theta=0.5", "acemad.aggregation=hard",
                                  "mad.n_rounds=3"]) == {
        "mad": {"n_agents": 2, "n_rounds": 3}, "down": {"theta": 0.5},
        "acemad": {"aggregation": "hard"}}


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.long_e2e
def test_real_model_two_medqa_questions(embedded_model, fixture_data_dir, tmp_path):
    """Two MedQA questions with the embedded model: CoT, self-consistency (2 samples) and
    iMAD + SVR-MAD (3 agents) at a τ between the two router scores, so exactly one is debated;
    then a replay that calls nothing and gives the same document."""
    two = load_questions("medqa", data_dir=fixture_data_dir, limit=2)
    router = make_router(tau=0.5)
    cache = tmp_path / "calls.sqlite"
    cached = CachedChat(embedded_model, cache)
    critique = SelfCritique(cached, confidence_source=router_confidence_source(router))
    scores = []
    for question in two:
        result = critique.run(question)
        scores.append(router.score(question, result.response).p if result.ok else None)
    cached.close()
    parsed = sorted(p for p in scores if p is not None)
    tau = (parsed[0] + parsed[1]) / 2 if len(parsed) == 2 else 0.0
    expected_triggers = sum(p is None or p < tau for p in scores)
    settings = dict(datasets=("medqa",), data_dir=str(fixture_data_dir), limit=2,
                    methods=("cot", "self_consistency", "imad_svrmad"), cache=str(cache),
                    out=str(tmp_path / "out"), corpus_dir=None, progress=False, tau=tau,
                    backend_options={"self_consistency": {"n_samples": 2},
                                     "svrmad": {"n_agents": 3, "consensus_agree": 3,
                                                "max_debates": 2}})
    first = evaluate_e2e(E2EConfig(**settings), model=embedded_model, router=router)
    data = first.document["datasets"]["medqa"]
    assert first.document["llm"]["model_id"] == DEFAULT_MODEL_ID
    for name, row in data["methods"].items():
        assert row["questions"] == 2 and 0.0 <= row["accuracy"] <= 1.0
        assert all(a["total_tokens"] > 100 and a["calls"] >= 1 for a in data["answers"][name])
        assert row["apt"] is None or row["apt"] == pytest.approx(
            row["accuracy_pct"] * 100_000 / row["tokens_per_question"])
    decisions = data["methods"]["imad_svrmad"]["decisions"]
    assert decisions["triggered"] == expected_triggers
    if len(parsed) == 2 and parsed[0] != parsed[1]:
        assert decisions["triggered"] == 1 and decisions["skipped"] == 1
    assert sum(decisions[d][t] for d in DECISIONS for t in TRANSITIONS) == 2
    replay = evaluate_e2e(E2EConfig(**{**settings, "cache_mode": "replay"}),
                          model=ScriptedChat(lambda r: pytest.fail("replay made a call"),
                                             model_id=DEFAULT_MODEL_ID,
                                             supports_logprobs=embedded_model.supports_logprobs),
                          router=router)
    assert replay.document["datasets"] == first.document["datasets"]


def test_deferral_escalates_every_question_and_draws_the_curves(tmp_path, questions):
    """--deferral: τ = 1, so each record holds the self-critique's and the debate's outcome;
    single answers right on 1, 2 and debates right on 1, 3, 4 (the agents outvote agent 0)."""
    result = evaluate_e2e(config(tmp_path, methods=("imad_acemad",), deferral=True),
                          model=scripted(questions), router=table_router(questions))
    answers = result.document["datasets"]["medqa"]["answers"]["imad_acemad"]
    assert result.document["router"]["tau"] == 1.0
    assert [a["escalated"] for a in answers] == [True] * 4
    assert [a["single_correct"] for a in answers] == [True, True, False, False]
    assert [a["correct"] for a in answers] == [True, False, True, True]
    assert [a["confidence"] for a in answers] == [0.95, 0.95, 0.40, 0.40]
    assert all(0 < a["single_tokens"] < a["total_tokens"] for a in answers)
    section = result.document["deferral"]["medqa"]["imad_acemad"]
    assert (section["used"], section["left_out"]) == (4, 0)
    assert section["single_accuracy"] == 0.5 and section["debate_accuracy"] == 0.75
    curves = section["curves"]
    # oracle: q3, q4 first (+1 each), then q1, q2 tied (0, −1): by hand
    assert curves["oracle"]["accuracy"] == pytest.approx([0.5, 0.75, 1.0, 0.875, 0.75])
    assert curves["oracle"]["area"] == pytest.approx(0.8125)  # (0.625 + 0.875 + 0.9375 + 0.8125)/4
    assert curves["random"]["accuracy"] == pytest.approx([0.5, 0.5625, 0.625, 0.6875, 0.75])
    data = outcomes([a["single_correct"] for a in answers], [a["single_tokens"] for a in answers],
                    [a["correct"] for a in answers],
                    [a["total_tokens"] - a["single_tokens"] for a in answers])
    expected = deferral_curves(data, [a["p"] for a in answers], [a["confidence"] for a in answers])
    for gate, curve in expected.items():
        assert curves[gate]["accuracy"] == pytest.approx(curve.accuracy.tolist())
        assert curves[gate]["tokens_per_question"] == pytest.approx(curve.tokens.tolist())
        assert curves[gate]["area"] == pytest.approx(curve.area)
    assert curves["random"]["tokens_per_question"][-1] == pytest.approx(
        sum(a["total_tokens"] for a in answers) / 4)
    assert (tmp_path / "out" / section["plot"]).read_bytes()[:4] == b"\x89PNG"
    assert "## Deferral curves" in result.markdown and "| oracle (wrong first) | 0.812 |" in \
        result.markdown


@pytest.mark.parametrize(("arguments", "message"), [
    (["--tau", "0.5"], "deferral (--deferral): runs the iMAD methods at τ = 1"),
    (["--methods", "cot"], "deferral (--deferral): needs an iMAD method"),
])
def test_deferral_refuses_what_it_cannot_draw(arguments, message, capsys):
    assert main(["--e2e", "--deferral", "--dataset", "medqa", *arguments]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_deferral_replays_the_recorded_real_run(tmp_path, data_dir, capsys):
    """The embedded model's recorded MedQA run (tests/fixtures/deferral): replayed through the
    command, the questions with both outcomes make the curves; each curve is the deferral
    module's on the replayed records, and the end points are the single and debate accuracy."""
    import shutil

    from imad.llm.local_gguf import DEFAULT_MODEL_ID

    if data_dir.name != "datasets" or not (data_dir / "medqa" / "test_4options.jsonl").is_file():
        pytest.skip("needs the shared MedQA test set the run was recorded on")
    cache = tmp_path / "calls.sqlite"
    shutil.copy(Path(__file__).resolve().parents[2] / "fixtures" / "deferral"
                / "smollm2-medqa-calls.sqlite", cache)
    assert main(["--e2e", "--deferral", "--dataset", "medqa", "--limit", "20", "--methods",
                 "imad_acemad", "--backend-option", "acemad.n_agents=2", "--backend-option",
                 "acemad.n_rounds=1", "--e2e-cache", str(cache), "--e2e-cache-mode", "replay",
                 "--data-dir", str(data_dir), "--out", str(tmp_path / "out"), "--no-progress",
                 "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["llm"]["model_id"] == DEFAULT_MODEL_ID
    section = document["deferral"]["medqa"]["imad_acemad"]
    assert (section["questions"], section["used"], section["left_out"]) == (20, 5, 15)
    answers = [a for a in document["datasets"]["medqa"]["answers"]["imad_acemad"]
               if a["error"] is None and a["escalated"] and a["confidence"] is not None]
    assert len(answers) == 5
    data = outcomes([a["single_correct"] for a in answers], [a["single_tokens"] for a in answers],
                    [a["correct"] for a in answers],
                    [a["total_tokens"] - a["single_tokens"] for a in answers])
    expected = deferral_curves(data, [a["p"] for a in answers], [a["confidence"] for a in answers])
    for gate, curve in expected.items():
        assert section["curves"][gate]["accuracy"] == pytest.approx(curve.accuracy.tolist())
        assert section["curves"][gate]["accuracy"][0] == pytest.approx(section["single_accuracy"])
        assert section["curves"][gate]["accuracy"][-1] == pytest.approx(section["debate_accuracy"])
    assert (tmp_path / "out" / section["plot"]).is_file()
