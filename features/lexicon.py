"""The versioned word lists behind the lexical-cue features.

Four lexicons ship as plain-text data files in `features/lexicons/`, one file per name and
version (`hedge.v1.txt`, `certainty.v1.txt`, `contrast.v1.txt`, `negation.v1.txt`):

- `hedge`: words and phrases that weaken a claim ("might", "it is possible", "to some extent");
- `certainty`: words and phrases that strengthen one ("clearly", "without a doubt");
- `contrast`: discourse markers that turn against what came before ("however",
  "on the other hand");
- `negation`: negators ("not", "n't", "never", "without").

File format: UTF-8, one entry per line, a `#` starts a comment, blank lines are ignored.
An entry is a word or a multi-word phrase written as in running text ("it's possible",
"on the other hand"); entries are lowercased and deduplicated here. How entries are matched
against a text (token sequences, longest match first, no overlaps) is in `features/lexical.py`.

Editing a file changes the features a router was trained on: add a new version file
(`hedge.v2.txt`), point `LEXICON_VERSIONS` at it and bump the feature schema version. A test
pins each file's sha256 so an accidental edit fails loudly.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from features.errors import FeatureError

LEXICON_VERSIONS: dict[str, int] = {
    "hedge": 1,
    "certainty": 1,
    "contrast": 1,
    "negation": 1,
}
"""The lexicon version the features use (the same in feature schemas v1 and v2)."""

LEXICON_PACKAGE = "features"
LEXICON_DIR = "lexicons"


def lexicon_filename(name: str, version: int) -> str:
    """The data file of lexicon `name` at `version`, e.g. `hedge.v1.txt`."""
    return f"{name}.v{version}.txt"


def parse_lexicon(text: str) -> tuple[str, ...]:
    """The entries of a lexicon file's text: lowercased, whitespace-normalised, deduplicated.

    Order of first appearance is kept so the result is deterministic.
    """
    entries: dict[str, None] = {}
    for line in text.splitlines():
        entry = " ".join(line.split("#", 1)[0].lower().replace("\u2019", "'").split())
        if entry:
            entries[entry] = None
    return tuple(entries)


@cache
def load_lexicon(name: str, version: int | None = None) -> tuple[str, ...]:
    """The entries of lexicon `name` (default: the version `LEXICON_VERSIONS` names).

    Raises FeatureError naming the known lexicons when `name` or `version` does not exist.
    """
    if name not in LEXICON_VERSIONS:
        known = ", ".join(sorted(LEXICON_VERSIONS))
        raise FeatureError(f"unknown lexicon {name!r}; known lexicons: {known}")
    version = LEXICON_VERSIONS[name] if version is None else version
    filename = lexicon_filename(name, version)
    resource = resources.files(LEXICON_PACKAGE).joinpath(LEXICON_DIR).joinpath(filename)
    if not resource.is_file():
        raise FeatureError(
            f"lexicon file {filename} is missing from the installed package "
            f"({LEXICON_PACKAGE}/{LEXICON_DIR}); reinstall imad or check the version"
        )
    entries = parse_lexicon(resource.read_text(encoding="utf-8"))
    if not entries:
        raise FeatureError(f"lexicon file {filename} has no entries")
    return entries


def load_lexicons() -> dict[str, tuple[str, ...]]:
    """Every lexicon at the version `LEXICON_VERSIONS` names, keyed by name (sorted)."""
    return {name: load_lexicon(name) for name in sorted(LEXICON_VERSIONS)}
