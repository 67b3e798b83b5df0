"""Cross features: confidences, answer flip, critique/reasoning length, negations.

Definitions and choices:
- `conf_initial`, `conf_critique`: the response's confidences, which must be finite numbers
  in [0, 1] (the self-critique parser maps 0–100 and percents to [0, 1]); anything else is a
  FeatureError rather than a silently clipped value;
- `conf_gap` = conf_initial − conf_critique (positive: the critique lowered the confidence);
- `answer_changed` = 1 when the canonical final answer differs from the initial one;
- `length_ratio` = critique tokens / max(reasoning tokens, 1): finite for an empty reasoning,
  0 for an empty critique, above 1 for a critique longer than the reasoning;
- `c_negations`: negators in the critique (lexicon `negation`, see `features/lexical.py`).
"""

from __future__ import annotations

import math
from numbers import Real

from features.errors import FeatureError
from features.response import CritiqueFields, answer_changed


def check_confidence(value: object, field: str) -> float:
    """`value` as a float if it is a finite number in [0, 1], else FeatureError."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise FeatureError(f"{field} must be a number in [0, 1], got {type(value).__name__}")
    number = float(value)
    if not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise FeatureError(f"{field} must be a number in [0, 1], got {number!r}")
    return number


def length_ratio(critique_tokens: float, reasoning_tokens: float) -> float:
    """Critique tokens per reasoning token; the reasoning counts as at least one token."""
    return critique_tokens / max(reasoning_tokens, 1.0)


def cross_features(response: CritiqueFields, reasoning_tokens: float, critique_tokens: float,
                   critique_negations: float) -> dict[str, float]:
    """The 6 cross features of one response, given token and negation counts of R and C."""
    initial = check_confidence(response.confidence_initial, "confidence_initial")
    critique = check_confidence(response.confidence_critique, "confidence_critique")
    return {
        "conf_initial": initial,
        "conf_critique": critique,
        "conf_gap": initial - critique,
        "answer_changed": float(answer_changed(response)),
        "length_ratio": length_ratio(critique_tokens, reasoning_tokens),
        "c_negations": float(critique_negations),
    }
