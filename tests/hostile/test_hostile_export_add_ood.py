"""Hostile table for `python -m training.export --add-ood ROUTER [--output DIR]` (issue 23, item 4).

Every damaged value of the checkpoint's training record (the split it recomputes) and every bad
`--output` is one `error:` line with exit 2 or 3, before the corpus is read, and the source
checkpoint stays byte-identical. Values are written into config.json as raw literals, so
400-digit integers and 1e400 reach the reader as a user's editor would leave them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from training.export import main


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A copy of the shipped v2 router: a real training record, corpus files and card."""
    return Path(shutil.copytree(REPO_ROOT / "checkpoints" / "imad-router-v2",
                                tmp_path_factory.mktemp("add-ood") / "router"))


def snapshot(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def damaged_copy(pristine: Path, tmp_path: Path, training_literal: str) -> Path:
    """A copy of the checkpoint whose `training` section is the raw JSON `training_literal`."""
    config = json.loads((pristine / "config.json").read_text(encoding="utf-8"))
    config["training"] = "@@"
    copy = tmp_path / "router"
    copy.mkdir()
    for name, data in snapshot(pristine).items():
        (copy / name).write_bytes(data)
    (copy / "config.json").write_text(json.dumps(config).replace('"@@"', training_literal),
                                      encoding="utf-8")
    return copy


def _config(key: str, literal: str) -> str:
    return '{"config": {"' + key + '": ' + literal + "}}"


TRAINING_CASES = [
    ("training a list", '["config"]', "invalid training: must be a JSON object"),
    ("training.config a string", '{"config": "x"}', "invalid training.config: must be a JSON object"),
    ("validation_fraction 'abc'", _config("validation_fraction", '"abc"'), "validation_fraction"),
    ("validation_fraction NaN", _config("validation_fraction", "NaN"), "validation_fraction"),
    ("validation_fraction 2.0", _config("validation_fraction", "2.0"), "validation_fraction"),
    ("validation_fraction 0", _config("validation_fraction", "0"), "validation_fraction"),
    ("validation_fraction 1e400", _config("validation_fraction", "1e400"), "validation_fraction"),
    ("validation_fraction true", _config("validation_fraction", "true"), "validation_fraction"),
    ("validation_fraction 80-digit int", _config("validation_fraction", "9" * 80), "validation_fraction"),
    ("split_seed 'x'", _config("split_seed", '"x"'), "split_seed"),
    ("split_seed 1e400", _config("split_seed", "1e400"), "split_seed"),
    ("split_seed -1", _config("split_seed", "-1"), "split_seed"),
    ("split_seed 2**32", _config("split_seed", str(2**32)), "split_seed"),
    ("split_seed 4.5", _config("split_seed", "4.5"), "split_seed"),
    ("split_seed 400-digit int", _config("split_seed", "7" * 400), "not valid JSON"),
    ("split_seed 100k nesting", _config("split_seed", "[" * 100_000 + "]" * 100_000), "not valid JSON"),
]


@pytest.mark.parametrize(("name", "literal", "message"), TRAINING_CASES,
                         ids=[case[0] for case in TRAINING_CASES])
def test_a_damaged_training_record_is_one_error_line_and_the_source_untouched(
        pristine, tmp_path, capsys, name, literal, message):
    source = damaged_copy(pristine, tmp_path, literal)
    before = snapshot(source)
    assert main(["--add-ood", str(source), "--feature-cache", str(tmp_path / "cache")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: " in err and message in err, err
    assert "Traceback" not in err and "a bug in imad" not in err
    assert snapshot(source) == before
    assert not (tmp_path / "cache").exists()  # refused before any corpus was read


def _existing_file(tmp_path: Path) -> Path:
    path = tmp_path / "out.txt"
    path.write_text("keep me")
    return path


def _under_a_file(tmp_path: Path) -> Path:
    return _existing_file(tmp_path) / "ckpt"


def _read_only_directory(tmp_path: Path) -> Path:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    return folder / "ckpt"


OUTPUT_CASES = [
    ("an existing file", _existing_file, "exists and is not a directory"),
    ("a path under a file", _under_a_file, "is not a writable directory"),
    ("a read-only directory", _read_only_directory, "is not a writable directory"),
    ("/proc", lambda tmp_path: Path("/proc/imad-checkpoint"), "cannot write a checkpoint"),
]


@pytest.mark.parametrize(("name", "make", "message"), OUTPUT_CASES, ids=[c[0] for c in OUTPUT_CASES])
def test_a_bad_output_is_one_error_line_and_nothing_written(pristine, tmp_path, capsys, name,
                                                           make, message):
    before = snapshot(pristine)
    output = make(tmp_path)
    try:
        status = main(["--add-ood", str(pristine), "--output", str(output),
                       "--feature-cache", str(tmp_path / "cache")])
    finally:
        for folder in tmp_path.iterdir():
            if folder.is_dir():
                folder.chmod(0o755)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err and "--output" in err, err
    assert snapshot(pristine) == before
    assert not (tmp_path / "cache").exists()
    if name == "an existing file":
        assert output.read_text() == "keep me"
