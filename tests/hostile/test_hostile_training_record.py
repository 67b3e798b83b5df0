"""Hostile training records (issue 21, item 2): a damaged `training` / `data` / `metrics` / …
section of a checkpoint's config.json is a `CheckpointError` naming the field's JSON path,
refused when the router loads; `python -m training.export --add-ood`, which reads the recorded
corpus and split, exits 3 with one `error:` line and leaves the source checkpoint untouched.

The base is a copy of the shipped `imad-router-v2.1` (it records every section but
`recalibration`); each case edits one value. `Raw` values are written into the JSON text as
they are (1e400, a 400-digit integer), since `json.dumps` cannot write them.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from imad.errors import CheckpointError
from imad.router import Router
from imad.router.checkpoint import CARD_FILE, CONFIG_FILE, WEIGHTS_FILE
from tests.hostile.test_hostile_checkpoint import _set
from training.export import main as export_main

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "imad-router-v2.1"
HUGE = "1" + "0" * 400


class Raw(str):
    """JSON text to place as it is."""


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


# (dotted path in config.json, new value, text the error must hold)
CASES: list[tuple[str, Any, str]] = [
    # whole sections of the wrong JSON type
    ("data", [], "invalid data: must be a JSON object, got []"),
    ("training", [1], "invalid training: must be a JSON object, got [1]"),
    ("training.config", "lr=1", "invalid training.config: must be a JSON object"),
    ("metrics", 0.3, "invalid metrics: must be a JSON object"),
    ("versions", ["torch"], "invalid versions: must be a JSON object"),
    ("ood_statistics", None, "invalid ood_statistics: must be a JSON object, got None"),
    ("calibration.token_budget", [], "invalid calibration.token_budget: must be a JSON object"),
    # counts: negative, fractional, boolean, text, 400 digits
    ("data.records", -1, "data.records: must be an integer in [0, 1000000000000], got -1"),
    ("data.labelled", 1.5, "data.labelled: must be an integer"),
    ("data.parse_failures", True, "data.parse_failures: must be an integer"),
    ("data.datasets.gqa.labelled", "994", "data.datasets.gqa.labelled: must be an integer"),
    ("data.files.0.records", Raw(HUGE), "is not valid JSON (an integer of 401 digits"),
    ("data.files.0.records", 10**20, "data.files[0].records: must be an integer in [0, "
                                     "1000000000000], got 100000000000000000000"),
    ("data.split.train", -5, "data.split.train: must be an integer in [0, "),
    ("metrics.validation.router.n", -3, "metrics.validation.router.n: must be an integer"),
    ("ood_statistics.rows.validation", -1, "ood_statistics.rows.validation: must be an integer"),
    ("calibration.validation.files", "runs/x.jsonl", "calibration.validation.files: must be a list"),
    # the split's settings
    ("training.config.validation_fraction", 0, "training.config.validation_fraction: must be a "
                                               "finite number in (0, 1), got 0"),
    ("training.config.validation_fraction", 1, "validation_fraction: must be a finite number in (0, 1)"),
    ("training.config.validation_fraction", 1.5, "validation_fraction: must be a finite number in (0, 1)"),
    ("training.config.validation_fraction", -0.2, "validation_fraction: must be a finite number"),
    ("training.config.validation_fraction", math.nan,
     "validation_fraction: must be a finite number in (0, 1), got nan"),
    ("training.config.validation_fraction", "0.2",
     "validation_fraction: must be a finite number in (0, 1), got '0.2'"),
    ("training.config.validation_fraction", None,
     "validation_fraction: must be a finite number in (0, 1), got None"),
    ("training.config.split_seed", -1, "training.config.split_seed: must be an integer in [0, "),
    ("training.config.split_seed", 4.2, "training.config.split_seed: must be an integer"),
    ("training.config.split_seed", True, "training.config.split_seed: must be an integer"),
    ("training.config.split_seed", Raw(HUGE), "is not valid JSON (an integer of 401 digits"),
    ("training.config.split_seed", 2**70, "training.config.split_seed: must be an integer in [0, "
                                          "4294967295]"),
    ("training.config.split_seed", 2**32, "training.config.split_seed: must be an integer in [0, "
                                          "4294967295], got 4294967296"),
    ("data.split.seed", "42", "data.split.seed: must be an integer"),
    ("seed", -1, "invalid seed: must be an integer in [0, "),
    ("training.config.corpus", "corpus/x", "training.config.corpus: must be a list"),
    ("training.config.corpus.0", 7, "training.config.corpus[0]: must be a string"),
    # numbers: NaN, ±inf (1e400), out of range, wrong type
    ("data.positive_rate", math.nan,
     "data.positive_rate: must be none or a finite number in [0, 1], got nan"),
    ("data.positive_rate", 1.5, "data.positive_rate: must be none or a finite number in [0, 1]"),
    ("data.split.train_positive_rate", Raw("1e400"), "train_positive_rate: must be a finite number"),
    ("metrics.validation.router.ece", Raw("1e400"), "metrics.validation.router.ece: must be a "
                                                    "finite number"),
    ("metrics.validation.router.brier", Raw("-1e400"), "router.brier: must be a finite number"),
    ("metrics.validation.router.auroc", "0.7", "metrics.validation.router.auroc: must be a finite number"),
    ("metrics.tau", 2.0, "metrics.tau: must be a finite number in [0, 1]"),
    ("training.optimizer.learning_rate", 0, "training.optimizer.learning_rate: must be a finite "
                                            "number in (0,"),
    ("training.optimizer.epochs_run", -1, "training.optimizer.epochs_run: must be an integer"),
    ("training.loss.n_bins", 0, "training.loss.n_bins: must be an integer in [1, "),
    ("training.loss.class_balanced_alpha", "no", "class_balanced_alpha: must be true or false"),
    ("calibration.token_budget", {"debate_tokens": -5.0}, "calibration.token_budget.debate_tokens"),
    # text fields
    ("versions.torch", 2,
     "invalid versions.torch: must be a string of at most 1,000,000 characters, got 2"),
    ("data.model_ids", "SmolLM2", "data.model_ids: must be a list"),
    ("data.files.0.sha256", None,
     "data.files[0].sha256: must be a string of at most 1,000,000 characters, got None"),
    ("ood_statistics.command", ["python"], "ood_statistics.command: must be a string"),
    # deep nesting in a free-form part, and a lone surrogate
    ("training.config.threads", nested(40), "nested deeper than 32 levels"),
    ("data.model_ids.0", Raw('"\\ud800"'), "surrogate"),
]


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    return Path(shutil.copytree(SHIPPED, tmp_path / "imad-router-v2.1"))


def damage(checkpoint: Path, path: str, value: Any) -> bytes:
    """Write the edited config.json; return its bytes."""
    config = json.loads((checkpoint / CONFIG_FILE).read_text(encoding="utf-8"))
    marker = "@@RAW@@"
    _set(path, marker if isinstance(value, Raw) else value)(config)
    text = json.dumps(config, indent=2, ensure_ascii=False, allow_nan=True)
    if isinstance(value, Raw):
        text = text.replace(f'"{marker}"', str(value))
    (checkpoint / CONFIG_FILE).write_text(text, encoding="utf-8")
    return (checkpoint / CONFIG_FILE).read_bytes()


@pytest.mark.parametrize(("path", "value", "message"), CASES,
                         ids=[f"{path}={value!r}"[:60] for path, value, _ in CASES])
def test_a_damaged_training_record_is_a_checkpoint_error_naming_the_field(checkpoint, path, value,
                                                                           message):
    damage(checkpoint, path, value)
    with pytest.raises(CheckpointError) as error:
        Router.load(checkpoint)
    assert message in str(error.value)
    assert str(checkpoint / CONFIG_FILE) in str(error.value)


ADD_OOD_CASES = [case for case in CASES if case[0].split(".")[0] in ("data", "training")][::3]


@pytest.mark.parametrize(("path", "value", "message"), ADD_OOD_CASES,
                         ids=[f"{path}={value!r}"[:60] for path, value, _ in ADD_OOD_CASES])
def test_add_ood_refuses_a_damaged_record_and_writes_nothing(checkpoint, capsys, path, value, message):
    before = {name: (checkpoint / name).read_bytes() if name != CONFIG_FILE
              else damage(checkpoint, path, value) for name in (CONFIG_FILE, WEIGHTS_FILE, CARD_FILE)}
    assert export_main(["--add-ood", str(checkpoint)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("python -m training.export: error: ") and message in err
    assert "Traceback" not in err
    assert {name: (checkpoint / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in checkpoint.iterdir()) == sorted(before)  # no temporary left
