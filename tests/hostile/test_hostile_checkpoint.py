"""Hostile checkpoints (issue 14, items 2 and 8): every damaged checkpoint is a `CheckpointError`
naming what is wrong, refused before the network is built; a score that is still not finite
escalates, flagged, with no NaN in the decision's JSON.

Table-driven cases edit a saved router's config.json or rewrite its weights (with a matching
sha256, so the check under test is the one that fires); a hypothesis property applies random
damage and requires a `CheckpointError` or a router whose decisions are strict JSON with p None
(flagged) or in [0, 1].
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from imad.critique.schema import CritiqueResponse
from imad.decide import checkpoint_policy
from imad.decide.schema import NON_FINITE
from imad.errors import CheckpointError
from imad.router import Router
from imad.router.checkpoint import CONFIG_FILE, WEIGHTS_FILE
from tests.router.router_helpers import make_router

QUESTION = "Does aspirin reduce the risk of a second heart attack?"
RESPONSE = CritiqueResponse(
    initial_answer="yes", initial_reasoning="Trials suggest it may, although effects vary.",
    critique="Perhaps no: bleeding could outweigh the benefit.", alternative_answer="no",
    final_answer="yes", confidence_initial=0.7, confidence_critique=0.4)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return make_router(seed=5).save(tmp_path_factory.mktemp("hostile") / "ckpt")


@pytest.fixture
def checkpoint(pristine, tmp_path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "ckpt"))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit of config.json: the value at a dotted path (`scaler.mean.0`) replaced."""
    *parents, last = path.split(".")

    def edit(config: dict[str, Any]) -> None:
        node: Any = config
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value

    return edit


CONFIG_CASES = [
    # item 2: absurd but finite scaler values used to pass and give p = NaN
    ("scaler.mean.0", 1e308, "scaler.mean[0]: must be a finite number in [-1000000, 1000000], got 1e+308"),
    ("scaler.mean.3", -1e7, "scaler.mean[3]: must be a finite number in [-1000000, 1000000]"),
    ("scaler.scale.0", 1e-300, "scaler.scale[0]: must be a finite number in [1e-06, 1000000]"),
    ("scaler.scale.0", 0.0, "scaler.scale[0]: must be a finite number in [1e-06, 1000000], got 0.0"),
    ("scaler.scale.0", -1.0, "scaler.scale[0]: must be a finite number in [1e-06, 1000000], got -1.0"),
    ("scaler.scale.5", math.inf, "scaler.scale[5]: must be a finite number"),
    ("scaler.mean.2", math.nan, "scaler.mean[2]: must be a finite number"),
    # item 8: types checked strictly
    ("scaler.mean.0", "abc", "scaler.mean[0]: must be a finite number in [-1000000, 1000000], got 'abc'"),
    ("scaler.mean", "abc", "scaler.mean: must be a list of numbers"),
    ("scaler.scale.1", True, "scaler.scale[1]: must be a finite number in [1e-06, 1000000], got True"),
    ("scaler.mean.1", None, "scaler.mean[1]: must be a finite number in [-1000000, 1000000], got None"),
    ("schema_version", True, "schema_version must be an integer, got True"),
    ("schema_version", "1", "schema_version must be an integer, got '1'"),
    ("schema_version", 1.0, "schema_version must be an integer, got 1.0"),
    ("threshold.tau", True, "threshold.tau: must be a finite number, got True"),
    ("threshold.tau", "0.5", "threshold.tau: must be a finite number"),
    ("threshold.tau", math.nan, "threshold.tau: must be a finite number"),
    ("threshold.tau", -0.1, "tau: must be a number in [0, 1]"),
    # issue 34: a subnormal τ is damage, not a threshold (it would escalate only p = 0)
    ("threshold.tau", 1e-320, "threshold.tau: must be a finite number, got 1e-320 (a subnormal number)"),
    ("threshold.tau", -5e-324, "(a subnormal number)"),
    ("threshold.method", 7, "threshold.method: must be a string"),
    # item 8: shapes and sane bounds, before anything is allocated
    ("model.width", 1_000_000, "width: must be an integer in [1, 4096]"),
    ("model.depth", 1_000_000, "depth: must be an integer in [1, 64]"),
    ("model.width", 0, "width: must be an integer in [1, 4096]"),
    ("model.depth", -3, "depth: must be an integer in [1, 64]"),
    ("model.width", 32.0, "width: must be an integer"),
    ("model.width", True, "width: must be an integer"),
    ("model.n_features", 10**12, "n_features: must be an integer in [1, 1024]"),
    ("model.dropout", True, "dropout: must be a number"),
    ("model.dropout", math.nan, "dropout: must be in [0, 1)"),
    ("model.confidence_clip", 0.7, "confidence_clip: must be in (0, 0.5)"),
    ("model.heads", 3, "heads: unknown router-model hyper-parameter"),
    ("model", [], "model: must be a JSON object (the section is required), got []"),
    ("model.depth", 4, "does not fit the configured network"),
    ("model.width", 64, "has shape (32, 41), the network in config.json expects (64, 41)"),
    ("model.width", 4096, "expects (4096, 41)"),  # checked on the meta device: nothing allocated
    # the feature section and the rest
    ("features.names", "conf_initial", "features.names: must be a list, got 'conf_initial'"),
    ("features.names.0", 17, "features.names[0]: must be a string of at most 1,000,000 characters, got 17"),
    ("features.schema_version", True, "features.schema_version: must be an integer"),
    ("features.hash", 5, "features.hash: must be a string"),
    ("features.hash", "0" * 64, "the feature hash does not match"),
    ("name", 5, "name: must be a string"),
    ("imad_version", ["0.1"], "imad_version: must be a string"),
    ("imad_version", "999.0.0", "written by imad 999.0.0"),
    ("weights.sha256", None, "weights.sha256: must be a string"),
    ("format", "imad-router-v2", "not an imad router config"),
    ("data", {"confidence_sources": ["psychic"]}, "data.confidence_sources must name one of"),
    ("data", {"confidence_sources": ["verbal", "token_probability"]}, "confidence_sources"),
    ("data", 1, "invalid data: must be a JSON object, got 1"),
    ("data", ["verbal"], "invalid data: must be a JSON object, got ['verbal']"),
    ("data", {"confidence_sources": 5}, "data.confidence_sources: must be a list, got 5"),
    ("data", {"confidence_sources": [{"a": 1}]}, "data.confidence_sources[0]: must be a string"),
]


@pytest.mark.parametrize(("path", "value", "message"), CONFIG_CASES,
                         ids=[f"{path}={value!r}"[:50] for path, value, _ in CONFIG_CASES])
def test_damaged_config_value_is_refused(checkpoint, path, value, message):
    config = json.loads((checkpoint / CONFIG_FILE).read_text())
    _set(path, value)(config)
    (checkpoint / CONFIG_FILE).write_text(json.dumps(config, allow_nan=True))
    with pytest.raises(CheckpointError) as error:
        Router.load(checkpoint)
    assert message in str(error.value)


DEEP = 100_000


@pytest.mark.parametrize(("text", "message"), [
    ("[" * DEEP + "]" * DEEP, "nested too deeply"),
    ('{"format": "imad-router", "schema_version": 1, "x": ' + "[" * DEEP + "]" * DEEP + "}",
     "nested too deeply"),
    ("{}", "not an imad router config"),
    ("[]", "not an imad router config (format 'list'"),
    ("null", "not an imad router config"),
    ('"imad-router"', "not an imad router config"),
    ("{not json", "not valid JSON"),
    ("", "not valid JSON"),
])
def test_malformed_config_text_is_refused(checkpoint, text, message):
    (checkpoint / CONFIG_FILE).write_text(text)
    with pytest.raises(CheckpointError, match=re.escape(message)):
        Router.load(checkpoint)


def test_nesting_within_json_limits_but_absurd_is_refused(checkpoint):
    config = json.loads((checkpoint / CONFIG_FILE).read_text())
    config["training"] = json.loads("[" * 200 + "]" * 200)
    (checkpoint / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="nested deeper than 32 levels"):
        Router.load(checkpoint)


def test_oversized_config_is_refused_unread(checkpoint):
    with (checkpoint / CONFIG_FILE).open("r+b") as file:
        file.truncate(17 * 1024 * 1024)  # sparse: nothing is written
    with pytest.raises(CheckpointError, match="a router config.json holds a few kB"):
        Router.load(checkpoint)


def test_non_utf8_config_is_refused(checkpoint):
    (checkpoint / CONFIG_FILE).write_bytes(b'{"format": "\xff"}')
    with pytest.raises(CheckpointError, match="not UTF-8"):
        Router.load(checkpoint)


def _rewrite_weights(checkpoint: Path, edit: Callable[[dict[str, torch.Tensor]], None]) -> None:
    """Change the tensors and record the new file's sha256, so only the value checks can fire."""
    tensors = load_safetensors((checkpoint / WEIGHTS_FILE).read_bytes())
    edit(tensors)
    data = save_safetensors(tensors, metadata={"format": "pt"})
    (checkpoint / WEIGHTS_FILE).write_bytes(data)
    config = json.loads((checkpoint / CONFIG_FILE).read_text())
    config["weights"]["sha256"] = hashlib.sha256(data).hexdigest()
    (checkpoint / CONFIG_FILE).write_text(json.dumps(config))


def _fill(name: str, value: float) -> Callable[[dict[str, torch.Tensor]], None]:
    return lambda tensors: tensors[name].view(-1)[0].fill_(value)


WEIGHT_CASES = [
    ("bias NaN", _fill("bias", math.nan), "'bias' holds non-finite values"),
    ("weight +inf", _fill("encoder.0.weight", math.inf), "'encoder.0.weight' holds non-finite"),
    ("weight 1e30", _fill("head_p.weight", 1e30), "beyond ±1e+06"),
    ("running_var < 0", _fill("encoder.1.running_var", -1.0), "negative variances"),
    ("running_mean NaN", _fill("encoder.1.running_mean", math.nan), "non-finite"),
    ("float64 tensor", lambda t: t.update(bias=t["bias"].double()), "dtype torch.float64"),
    ("wrong shape", lambda t: t.update({"head_u.weight": torch.zeros(1, 7)}), "has shape (1, 7)"),
    ("extra tensor", lambda t: t.update(extra=torch.zeros(1)), "unexpected tensors ['extra']"),
    ("missing tensor", lambda t: t.pop("head_u.bias"), "missing tensors ['head_u.bias']"),
]


@pytest.mark.parametrize(("label", "edit", "message"), WEIGHT_CASES, ids=[c[0] for c in WEIGHT_CASES])
def test_damaged_weights_are_refused(checkpoint, label, edit, message):
    _rewrite_weights(checkpoint, edit)
    with pytest.raises(CheckpointError) as error:
        Router.load(checkpoint)
    assert message in str(error.value)


@pytest.mark.parametrize("data", [b"", b"\x00" * 7, b"\xff" * 64, b'{"a": 1}'])
def test_garbage_weights_file_is_refused(checkpoint, data):
    (checkpoint / WEIGHTS_FILE).write_bytes(data)
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        Router.load(checkpoint)


def test_a_non_finite_score_escalates_flagged_and_json_stays_strict():
    router = make_router(seed=5)
    with torch.no_grad():
        router.net.bias.fill_(math.nan)  # a damage no load check saw: the score is NaN
    decision = checkpoint_policy(router.config).decide(router.score(QUESTION, RESPONSE))
    assert decision.escalate and decision.p is None and decision.uncertainty is None
    assert decision.score_status == NON_FINITE
    (reason,) = decision.reasons
    assert reason.startswith("router score is not finite (p nan, u 0.") and reason.endswith("): escalate")
    assert json.loads(json.dumps(decision.to_dict(), allow_nan=False))["p"] is None


def test_a_score_that_overflows_to_infinity_escalates(checkpoint):
    router = Router.load(checkpoint)
    with torch.no_grad():
        router.net.confidence_weight.fill_(math.inf)  # logit_p = ±inf or NaN
        router.net.bias.fill_(-math.inf)
    decision = checkpoint_policy(router.config).decide(router.score(QUESTION, RESPONSE))
    assert decision.escalate and decision.p is None and decision.score_status == NON_FINITE


# --- random damage ---------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children,
                                                                       max_size=3),
    max_leaves=6,
)


def _leaf_paths(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return [prefix[:-1]]
    return [prefix[:-1]] * bool(prefix) + [p for k, v in items for p in _leaf_paths(v, f"{prefix}{k}.")]


def _check_router_or_error(directory: Path) -> None:
    try:
        router = Router.load(directory)
    except CheckpointError:
        return
    decision = checkpoint_policy(router.config).decide(router.score(QUESTION, RESPONSE))
    text = json.dumps(decision.to_dict(), allow_nan=False)  # raises on NaN or inf
    assert decision.p is None or 0.0 <= decision.p <= 1.0, text
    assert decision.p is not None or decision.escalate


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_config_damage_is_refused_or_harmless(pristine, data):
    config = json.loads((pristine / CONFIG_FILE).read_text())
    paths = sorted(set(_leaf_paths(config)))
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        path = data.draw(st.sampled_from(paths), label="path")
        try:
            _set(path, data.draw(JSON_VALUES, label="value"))(config)
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # an earlier edit removed the parent of this path
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(shutil.copytree(pristine, Path(folder) / "ckpt"))
        (directory / CONFIG_FILE).write_text(json.dumps(config, allow_nan=True))
        _check_router_or_error(directory)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file=st.sampled_from([CONFIG_FILE, WEIGHTS_FILE]), data=st.data())
def test_random_byte_damage_is_refused_or_harmless(pristine, file, data):
    original = (pristine / file).read_bytes()
    damaged = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        position = data.draw(st.integers(0, len(damaged) - 1), label="position")
        damaged[position] = data.draw(st.integers(0, 255), label="byte")
    cut = data.draw(st.integers(0, len(damaged)), label="length")
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(shutil.copytree(pristine, Path(folder) / "ckpt"))
        (directory / file).write_bytes(bytes(damaged[:cut]))
        _check_router_or_error(directory)
