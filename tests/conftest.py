"""Shared fixtures: the real embedded model, a real loopback llama.cpp server, dataset folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURE_DATA_DIR = REPO_ROOT / "tests" / "fixtures" / "datasets"
SHARED_DATA_DIR = REPO_ROOT.parent / "shared" / "datasets"
ANSWERED_MEDQA_DIR = REPO_ROOT / "tests" / "fixtures" / "medqa_answered"
"""100 MedQA questions whose answers are in corpus/…/eval/medqa.jsonl (a data directory)."""


@pytest.fixture(scope="session")
def fixture_data_dir() -> Path:
    """First 20 items of PubMedQA, GQA and MedQA in the shared layout (committed)."""
    return FIXTURE_DATA_DIR


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real shared datasets when present (as in CI), else the committed fixtures."""
    return SHARED_DATA_DIR if SHARED_DATA_DIR.is_dir() else FIXTURE_DATA_DIR


@pytest.fixture(scope="session")
def embedded_model():
    """The real embedded SmolLM2-135M model, loaded once for the whole run."""
    from imad.llm.spec import chat_model_from_spec

    return chat_model_from_spec("local")


@pytest.fixture(scope="session")
def llama_server_url():
    """A real `python -m llama_cpp.server` serving the embedded GGUF on loopback."""
    from imad.llm.local_gguf import default_model_path
    from tests.support.servers import llama_server

    with llama_server(default_model_path(), threads=1) as url:
        yield url


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL cluster started for the run (skipped, saying what is missing, where
    its binaries or psycopg are absent)."""
    from tests.support.postgres import missing_reason, running_postgres

    reason = missing_reason()
    if reason is not None:
        pytest.skip(f"no PostgreSQL server for the tests: {reason}")
    with running_postgres() as server:
        yield server


@pytest.fixture()
def postgres_url(postgres_server) -> str:
    """The URL of a new, empty database owned by the role `imad` (one per test)."""
    return postgres_server.url(postgres_server.fresh_database())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules that hold slow or real-model tests first, each whole and in its own
    order: pytest-xdist hands tests out in this order, so a minute-long test dealt last would
    keep one core busy while the other idles at the end of the run. With bin/test's
    `--dist worksteal` (measured: 12 min 19 s; 15 min 53 s with the default `load`, which
    pre-assigns the first quarter round-robin and strands a worker with the long ones)."""
    heavy = {item.module.__name__ for item in items
             if item.get_closest_marker("slow") or item.get_closest_marker("llm")}
    items.sort(key=lambda item: item.module.__name__ not in heavy)
