"""Belief distributions over answer options: from written JSON, or from token log-probs.

Small models write poor probability JSON (one-hots, sums ≠ 1), but their next-token
distribution at the answer position is a proper belief. `option_distribution` reads it: it finds
the token where a JSON field's value starts (e.g. the letter after `"answer": "`), collects the
probability the model gave each option there (the chosen token and its top-k alternatives), and
renormalises over the options. The log-probs are the model's own, before any grammar constraint,
so this is "scoring each option" at the cost of zero extra calls.

Priors for SVR-MAD come from the same log-probs: the least likely generated token
(`min_logprob_prior` = exp(min log p)) or the mean (`perplexity_prior` = 1 / perplexity), over
the tokens of the reply's argument and answer (not the JSON scaffolding a grammar forces).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from imad.debate.parsing import parse_confidence
from imad.llm.types import TokenLogprob

Distribution = tuple[float, ...]


def uniform(n: int) -> Distribution:
    return tuple(1.0 / n for _ in range(n))


def one_hot(index: int, n: int) -> Distribution:
    return tuple(1.0 if i == index else 0.0 for i in range(n))


def normalise(values: Sequence[float]) -> Distribution | None:
    """`values` divided by their sum; None when any is negative/NaN or all are 0."""
    if any(v != v or v < 0 or math.isinf(v) for v in values):
        return None
    total = sum(values)
    return tuple(v / total for v in values) if total > 0 else None


def parse_distribution(value: Any, keys: Sequence[str]) -> Distribution | None:
    """A distribution over `keys` from a JSON value, or None when unusable.

    Accepts {key: number} (any scale: 0–1, 0–100, "30%"; missing keys count 0, unknown keys are
    ignored, keys match case-insensitively) or a list of len(keys) numbers; the numbers are
    renormalised. A negative or non-numeric value for an option makes the whole map unusable.
    """
    if isinstance(value, Mapping):
        index = {key.strip().lower(): i for i, key in enumerate(keys)}
        masses = [0.0] * len(keys)
        for raw_key, raw_value in value.items():
            i = index.get(str(raw_key).strip().lower())
            if i is None:
                continue
            number = _mass(raw_value)
            if number is None:
                return None
            masses[i] += number
        return normalise(masses)
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == len(keys):
        masses = [_mass(v) for v in value]
        if any(m is None for m in masses):
            return None
        return normalise([m for m in masses if m is not None])
    return None


def _mass(value: Any) -> float | None:
    """A non-negative number (no capping at 1: the distribution is renormalised anyway)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value >= 0 and value == value and not math.isinf(value) else None
    text = str(value).strip()
    number = parse_confidence(text) if text.endswith("%") else None
    if number is not None:
        return number
    try:
        parsed = float(text)
    except ValueError:
        return None
    return parsed if parsed >= 0 and parsed == parsed and not math.isinf(parsed) else None


# --- Log-prob option scoring ---------------------------------------------------------------------


def _value_start(text: str, field: str) -> int | None:
    matches = list(re.finditer(rf'"{re.escape(field)}"\s*:\s*"?', text))
    return matches[0].end() if matches else None


def option_distribution(token_logprobs: Sequence[TokenLogprob] | None, field: str,
                        keys: Sequence[str]) -> Distribution | None:
    """The model's distribution over `keys` at the first token of JSON field `field`'s value.

    None when there are no log-probs, the field is not in the generated text, or no option
    received any probability mass at that position.
    """
    if not token_logprobs:
        return None
    text, starts = "", []
    for token in token_logprobs:
        starts.append(len(text))
        text += token.token
    position = _value_start(text, field)
    if position is None or position >= len(text):
        return None
    index = max(i for i, start in enumerate(starts) if start <= position)
    token = token_logprobs[index]
    prefix = token.token[: position - starts[index]]
    alternatives = dict(token.top)
    alternatives.setdefault(token.token, token.logprob)
    masses = [0.0] * len(keys)
    for alternative, logprob in alternatives.items():
        key = _key_of(alternative, prefix, keys)
        if key is not None:
            masses[key] += math.exp(logprob)
    return normalise(masses)


def _key_of(token: str, prefix: str, keys: Sequence[str]) -> int | None:
    """Which option a candidate token starts: exact match, else the only key it is a prefix of."""
    rest = token[len(prefix):] if prefix and token.startswith(prefix) else token
    rest = rest.strip().strip('"').strip().lower()
    if not rest:
        return None
    lowered = [key.lower() for key in keys]
    if rest in lowered:
        return lowered.index(rest)
    starting = [i for i, key in enumerate(lowered) if key.startswith(rest)]
    return starting[0] if len(starting) == 1 else None


def value_tokens(token_logprobs: Sequence[TokenLogprob], fields: Sequence[str]
                 ) -> list[TokenLogprob]:
    """The tokens that overlap the string values of JSON `fields` (all tokens if none is found).

    Under a JSON-schema grammar the braces, keys and quotes are forced, but their log-probs are
    the model's unconstrained ones, often tiny; they say nothing about the answer, so a prior
    is computed over the values the model chose.
    """
    text, starts = "", []
    for token in token_logprobs:
        starts.append(len(text))
        text += token.token
    spans = []
    for field in fields:
        match = re.search(rf'"{re.escape(field)}"\s*:\s*"(?P<value>(?:[^"\\]|\\.)*)', text)
        if match:
            spans.append((match.start("value"), match.end("value")))
    if not spans:
        return list(token_logprobs)
    return [token for token, start in zip(token_logprobs, starts, strict=True)
            if any(start < end and start + len(token.token) > begin for begin, end in spans)]


def min_logprob_prior(token_logprobs: Sequence[TokenLogprob] | None,
                      fields: Sequence[str] = ()) -> float | None:
    """exp(min token log-prob): the probability of the least likely generated token (of the
    `fields` values, when given and found)."""
    tokens = value_tokens(token_logprobs, fields) if token_logprobs else []
    if not tokens:
        return None
    return math.exp(min(t.logprob for t in tokens))


def perplexity_prior(token_logprobs: Sequence[TokenLogprob] | None,
                     fields: Sequence[str] = ()) -> float | None:
    """1 / perplexity = exp(mean token log-prob), in (0, 1] (over the `fields` values, when
    given and found)."""
    tokens = value_tokens(token_logprobs, fields) if token_logprobs else []
    if not tokens:
        return None
    return math.exp(sum(t.logprob for t in tokens) / len(tokens))
