"""`imad features`: the 41 router features of a saved self-critique response.

    imad features "Does aspirin prevent stroke?" --response response.json [--json]
                  [--schema-version 1]

The response file holds a JSON object with the `CritiqueResponse` fields (initial_answer,
initial_reasoning, critique, alternative_answer, final_answer, confidence_initial,
confidence_critique; confidences in [0, 1]), e.g. as printed by `imad critique --json`
under "response". Extra keys are ignored. `--schema-version` picks the feature schema (default
the newest, v2; v1 is what a router trained on schema v1 reads). The spaCy pipeline is loaded
only when the command runs, never when `imad --help` lists it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from imad.cli.common import print_json
from imad.constraints import ascii_int
from imad.critique.schema import FIELDS, CritiqueResponse
from imad.errors import ConfigError, CritiqueParseError
from imad.jsonio import UntrustedJSONError, loads_untrusted, read_regular_file

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""A stored self-critique is a few kB; a larger --response file is not one."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the question text")
    parser.add_argument("--response", required=True, type=Path, metavar="FILE.json",
                        help="JSON file holding the self-critique response's fields")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON object {feature name: value} instead of text")
    parser.add_argument("--schema-version", type=ascii_int, default=None, metavar="N",
                        help="feature schema to compute (default: the newest, 2; 1 for a "
                             "router trained on schema v1)")


def read_response(path: Path) -> CritiqueResponse:
    """The CritiqueResponse stored in `path`; ConfigError or CritiqueParseError saying why not."""
    if not path.exists():
        raise ConfigError("--response", f"no such file: {path}")
    try:
        raw = read_regular_file(path, max_bytes=MAX_RESPONSE_BYTES)
    except OSError as error:
        raise ConfigError("--response", f"cannot read {path}: {error.strerror or error}") from error
    except UntrustedJSONError as error:  # a FIFO, device or directory: refused unread
        raise ConfigError("--response", f"cannot read {path}: {error}") from error
    text = raw.decode("utf-8", "replace")
    try:
        data: Any = loads_untrusted(raw, max_bytes=MAX_RESPONSE_BYTES)
    except UntrustedJSONError as error:
        raise CritiqueParseError(f"{path} is not valid JSON ({error})", text) from error
    if isinstance(data, dict) and isinstance(data.get("response"), dict):
        data = data["response"]  # the output of `imad critique --json`
    if not isinstance(data, dict):
        raise CritiqueParseError(f"{path} must hold a JSON object, got {type(data).__name__}",
                                 text)
    missing = [name for name in FIELDS if name not in data]
    if missing:
        raise CritiqueParseError(f"{path} lacks the fields {missing}; expected {list(FIELDS)}",
                                 text)
    return CritiqueResponse.from_dict(data)


def run(args: argparse.Namespace) -> int:
    from features import FEATURE_NAMES, FEATURE_SCHEMA_HASHES, FEATURE_SCHEMA_VERSION
    from imad.router import featurize

    response = read_response(args.response)
    version = FEATURE_SCHEMA_VERSION if args.schema_version is None else args.schema_version
    if version not in FEATURE_SCHEMA_HASHES:  # a bad flag value: a usage error, exit 2
        raise ConfigError("--schema-version", f"unknown feature schema version {version}; this "
                          f"imad computes {sorted(FEATURE_SCHEMA_HASHES)}")
    vector = featurize.extract(args.question, response, version)
    values = {name: float(value) for name, value in zip(FEATURE_NAMES, vector, strict=True)}
    if args.json:
        print_json(values)
        return 0
    print(f"# feature schema v{version}, hash {FEATURE_SCHEMA_HASHES[version][:16]}…")
    width = max(len(name) for name in FEATURE_NAMES)
    for name, value in values.items():
        print(f"{name:<{width}}  {value:.6g}")
    return 0
