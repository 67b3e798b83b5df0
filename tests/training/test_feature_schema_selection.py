"""Training on a chosen feature schema (issue 17): the config field, the cache, the export.

`python -m training.fit --feature-schema N` trains on schema N (default: the newest, 2); the
feature cache keeps each schema's matrix in its own file, so v1 and v2 rows never mix; the
exported router records the schema it was trained on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import features
from imad.errors import ConfigError
from imad.router import RouterNet, RouterNetConfig
from training.config import FitConfig, config_from_args
from training.datamodule import load_corpus
from training.export import build_router

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small"
ENTITY_COLUMNS = [features.FEATURE_NAMES.index(name)
                  for name in ("q_entities", "r_entities", "c_entities")]


def test_the_schema_is_a_validated_config_field_and_flag():
    assert FitConfig().feature_schema == 2
    assert config_from_args(["--feature-schema", "1"]).feature_schema == 1
    with pytest.raises(ConfigError, match=r"feature_schema \(--feature-schema\): must be an integer "
                                          r"in \[1, 2\], got 3"):
        config_from_args(["--feature-schema", "3"])


def test_each_schema_is_cached_in_its_own_file_and_never_mixed(tmp_path, monkeypatch):
    v1 = load_corpus([FIXTURE], feature_cache=tmp_path, schema_version=1)
    v2 = load_corpus([FIXTURE], feature_cache=tmp_path, schema_version=2)
    files = sorted(path.name[:12] for path in tmp_path.glob("features-*.npy"))
    assert files == ["features-v1-", "features-v2-"]
    others = [column for column in range(features.N_FEATURES) if column not in ENTITY_COLUMNS]
    assert np.array_equal(v1.features[:, others], v2.features[:, others])
    assert not np.array_equal(v1.features[:, ENTITY_COLUMNS], v2.features[:, ENTITY_COLUMNS])

    def refuse(*args, **kwargs):
        raise AssertionError("features re-extracted despite the cache")

    monkeypatch.setattr(features, "extract_batch", refuse)
    again = load_corpus([FIXTURE], feature_cache=tmp_path, schema_version=1)
    assert np.array_equal(again.features, v1.features)


@pytest.mark.parametrize("version", [1, 2])
def test_the_exported_router_records_its_schema(version):
    width = len(features.FEATURE_NAMES)
    router = build_router(RouterNet(RouterNetConfig(width=8, depth=1)),
                          scaler_mean=np.zeros(width), scaler_scale=np.ones(width), tau=0.5,
                          name="schema-test", metadata_record={},
                          feature_schema_version=version)
    assert router.feature_schema_version == version
    assert router.feature_hash == features.FEATURE_SCHEMA_HASHES[version]
    assert router.metadata["versions"]["feature_schema"] == str(version)
