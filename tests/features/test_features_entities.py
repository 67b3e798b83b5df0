"""Schema v2's entity counts and pipeline (issue 17), against references that share no code.

- `tagged_entities` on hand-tagged docs (no model: the POS tags are set by hand);
- the v2 pipeline's compiled POS rules (features/pos_rules.py) give every token the POS tag
  the genuine attribute ruler gives, on real text;
- on real responses from the committed corpus, v1 and v2 agree on every feature but the three
  entity counts, and v2's entity counts equal runs of PROPN/NUM tags from the full pipeline,
  counted with `itertools.groupby`.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from features import FEATURE_NAMES, extract_batch
from features.entities import tagged_entities
from features.pipeline import PIPELINES, SPACY_MODEL, load_pipeline
from imad.critique.schema import CritiqueResponse

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "smollm2-135m-instruct-q4_1"
ENTITY_COLUMNS = ("q_entities", "r_entities", "c_entities")


def hand_tagged(words: list[str], tags: list[str]):
    """A spaCy Doc with the universal POS tags given by hand (a blank English vocabulary)."""
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import Doc

    return Doc(spacy.blank("en").vocab, words=words, pos=tags)


@pytest.mark.parametrize("words, tags, expected", [
    # "New York" is one run of proper nouns; "Paris" another: 2
    (["New", "York", "and", "Paris"], ["PROPN", "PROPN", "CCONJ", "PROPN"], 2),
    # a number run "3 000" and a one-number run "two": 2
    (["3", "000", "cats", "and", "two", "dogs"], ["NUM", "NUM", "NOUN", "CCONJ", "NUM", "NOUN"],
     2),
    # "May 2020": a proper-noun run, then a number run (the NER would give one DATE span): 2
    (["May", "2020"], ["PROPN", "NUM"], 2),
    (["It", "rains"], ["PRON", "VERB"], 0),
    ([], [], 0),
])
def test_tagged_entities_counts_runs_of_proper_nouns_and_of_numbers(words, tags, expected):
    assert tagged_entities(hand_tagged(words, tags)) == expected


def corpus_pairs(limit_per_file: int) -> tuple[list[str], list[CritiqueResponse]]:
    """The first labelled responses of each committed corpus file (real model output)."""
    questions, responses = [], []
    for path in sorted(CORPUS.glob("*.jsonl")):
        kept = 0
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("parsed") is None:
                continue
            questions.append(record["question"]["text"])
            responses.append(CritiqueResponse.from_dict(record["parsed"]))
            kept += 1
            if kept == limit_per_file:
                break
    return questions, responses


@pytest.fixture(scope="module")
def real_pairs() -> tuple[list[str], list[CritiqueResponse]]:
    questions, responses = corpus_pairs(40)
    assert len(questions) == 80
    return questions, responses


def test_the_v2_pipeline_runs_only_what_the_features_read():
    assert load_pipeline(1).pipe_names == ["tok2vec", "tagger", "parser", "attribute_ruler", "ner"]
    assert load_pipeline(2).pipe_names == ["tok2vec", "tagger", "parser", "imad_pos_rules"]
    assert PIPELINES[2].compiled_pos_rules and not PIPELINES[1].compiled_pos_rules


# Sentences that reach the ruler's special rules: expletive "there is" (the one two-token
# rule), auxiliaries and main-verb "have"/"do", "but" as an adverb, subordinators, "that" as a
# pronoun, negations, whitespace tokens.
SPECIAL_CASES = [
    "There is a cure. There're two cures. Is the man who's standing there tall?",
    "I can't say; he doesn't seem to be. They have had it. Do it! Did they do it?",
    "It is all but over. If it rains, we stay, because that is what we do.",
    "That is the one that I like.\n\nI've  been  there.  \t Not now.",
]


def test_the_compiled_pos_rules_give_the_genuine_rulers_tags_on_real_text(real_pairs):
    spacy = pytest.importorskip("spacy")
    genuine = spacy.load(SPACY_MODEL, exclude=["lemmatizer", "ner"])
    texts = [text for question, response in zip(*real_pairs, strict=True)
             for text in (question, response.initial_reasoning, response.critique)]
    texts.extend(SPECIAL_CASES)
    compiled = load_pipeline(2)
    for reference, doc in zip(genuine.pipe(texts), compiled.pipe(texts), strict=True):
        assert [t.pos_ for t in doc] == [t.pos_ for t in reference], doc.text
        assert [t.tag_ for t in doc] == [t.tag_ for t in reference]  # same tagger, same input


def test_v1_and_v2_differ_only_in_entity_counts_on_real_responses(real_pairs):
    questions, responses = real_pairs
    v1 = extract_batch(questions, responses, schema_version=1)
    v2 = extract_batch(questions, responses, schema_version=2)
    entity = np.array([name in ENTITY_COLUMNS for name in FEATURE_NAMES])
    assert np.array_equal(v1[:, ~entity], v2[:, ~entity])
    assert not np.array_equal(v1[:, entity], v2[:, entity])  # the definitions do differ


def test_v2_entity_counts_equal_tag_runs_of_the_full_pipeline(real_pairs):
    spacy = pytest.importorskip("spacy")
    full = spacy.load(SPACY_MODEL, exclude=["lemmatizer"])
    questions, responses = real_pairs
    v2 = extract_batch(questions, responses, schema_version=2)
    columns = [FEATURE_NAMES.index(name) for name in ENTITY_COLUMNS]
    for row, (question, response) in enumerate(zip(questions, responses, strict=True)):
        texts = (question, response.initial_reasoning, response.critique)
        expected = [sum(1 for pos, _ in itertools.groupby(t.pos_ for t in doc)
                        if pos in ("PROPN", "NUM"))
                    for doc in full.pipe(texts)]
        assert v2[row, columns].tolist() == expected, texts
