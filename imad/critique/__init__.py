"""The structured self-critique call: prompts, schema, parser, canonical answers."""

from imad.critique.canonical import answers_match, canonicalise
from imad.critique.schema import CritiqueResponse, response_schema

__all__ = ["CritiqueResponse", "answers_match", "canonicalise", "response_schema"]
