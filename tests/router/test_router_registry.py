"""Shipped routers by name (`imad.router.registry`): default, name, path, unknown name."""

from __future__ import annotations

import pytest

from imad.errors import CheckpointError
from imad.router import DEFAULT_CHECKPOINT, Router, available_routers
from imad.router.registry import DEFAULT_ROUTER, resolve_checkpoint, shipped_directory


def test_shipped_names_resolve_inside_the_shelf():
    assert available_routers() == ["imad-router-v1", "imad-router-v1.1", "imad-router-v2",
                                   "imad-router-v2.1"]
    for name in available_routers():
        assert resolve_checkpoint(name) == shipped_directory() / name
    assert resolve_checkpoint(None) == DEFAULT_CHECKPOINT == shipped_directory() / DEFAULT_ROUTER


def test_a_bare_path_object_is_a_name_too():
    from pathlib import Path

    assert resolve_checkpoint(Path("imad-router-v1.1")) == shipped_directory() / "imad-router-v1.1"


def test_unknown_name_lists_the_shipped_ones():
    with pytest.raises(CheckpointError, match=r"no shipped router named 'imad-router-v9'; shipped "
                                              r"routers: imad-router-v1, imad-router-v1.1, "
                                              r"imad-router-v2, imad-router-v2.1"):
        Router.load("imad-router-v9")


def test_a_path_is_taken_as_a_path(tmp_path, router):
    saved = router.save(tmp_path / "imad-router-v1")  # a shipped name, but given as a path
    assert Router.load(saved).name == "test-router"
    assert Router.load(str(saved)).name == "test-router"
    with pytest.raises(CheckpointError, match="no router checkpoint directory"):
        Router.load(tmp_path / "missing")


def test_a_folder_in_the_working_directory_wins_over_a_shipped_name(tmp_path, router, monkeypatch):
    router.save(tmp_path / "imad-router-v1")
    monkeypatch.chdir(tmp_path)
    assert Router.load("imad-router-v1").name == "test-router"
