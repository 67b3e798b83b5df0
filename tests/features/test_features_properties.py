"""Property tests: any unicode input yields 41 finite floats with consistent structure."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from features import FEATURE_NAMES, extract
from features.lexicon import load_lexicons
from imad.critique.schema import CritiqueResponse

COUNT_FEATURES = [name for name in FEATURE_NAMES
                  if name not in {"conf_gap"} and "flesch" not in name and "coleman" not in name]
QUESTION_TYPES = [name for name in FEATURE_NAMES if name.startswith("q_is_")]

# Text made of lexicon entries, English words, punctuation and odd characters, so that the
# cue matcher and the parser see realistic input as well as pure noise.
_PIECES = sorted({entry for entries in load_lexicons().values() for entry in entries}) + [
    "the", "answer", "is", "Paris", "because", "2.5", "%", ",", ".", "?", "!", "'", "’",
    "\n", "\t", "  ", "—", "(", ")", "e.g.", "🙂", "這", "ﬁ", "\u200b", "\u0301",
]
english_like = st.lists(st.sampled_from(_PIECES), max_size=60).map(" ".join)
any_text = st.one_of(st.text(max_size=300), english_like)
confidence = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(question=any_text, reasoning=any_text, critique=any_text,
       initial_answer=st.text(max_size=8), final_answer=st.text(max_size=8),
       confidence_initial=confidence, confidence_critique=confidence)
def test_any_unicode_input_gives_41_finite_floats(question, reasoning, critique, initial_answer,
                                                  final_answer, confidence_initial,
                                                  confidence_critique):
    response = CritiqueResponse(initial_answer, reasoning, critique, "alternative", final_answer,
                                confidence_initial, confidence_critique)
    vector = extract(question, response)
    assert vector.shape == (41,) and vector.dtype == np.float64
    assert np.isfinite(vector).all()
    got = dict(zip(FEATURE_NAMES, vector.tolist(), strict=True))
    assert all(got[name] >= 0 for name in COUNT_FEATURES)
    assert sum(got[name] for name in QUESTION_TYPES) in (0.0, 1.0)
    assert got["conf_gap"] == confidence_initial - confidence_critique
    assert got["answer_changed"] == float(initial_answer != final_answer)
    for prefix in ("r_", "c_"):
        assert got[prefix + "sentences"] <= got[prefix + "tokens"]
        if got[prefix + "tokens"] == 0:
            assert got[prefix + "avg_sentence_len"] == 0.0
