"""The wheel is a working library on its own (issue 13): built from this tree, installed with
`pip install --no-deps --target TMP`, and used from a directory outside the repository, it
loads the shipped routers by name and scores a recorded answer bit for bit like the source tree.

The dependencies come from the running environment (`--no-deps`); the wheel is built without
build isolation so the test needs no network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import imad
from imad.critique.schema import CritiqueResponse

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "corpus" / "smollm2-135m-instruct-q4_1" / "eval" / "medqa.jsonl"

_SCORE = """
import json, sys
import imad
from imad.critique.schema import CritiqueResponse

record = json.loads(open(sys.argv[1], encoding="utf-8").readline())
response = CritiqueResponse.from_dict(record["parsed"])
result = {"file": imad.__file__, "version": imad.__version__, "names": imad.available_routers()}
for name in result["names"]:
    result[name] = imad.Router.load(name).score(record["question"]["text"], response).p.hex()
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(out), str(ROOT)], check=True, cwd=out)
    (found,) = out.glob("imad-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_ships_every_router(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for router in imad.available_routers():
        for file in ("config.json", "model.safetensors", "README.md"):
            assert f"imad/_checkpoints/{router}/{file}" in names
    assert not any(name.startswith(("checkpoints/", "tests/")) for name in names)


@pytest.mark.slow
def test_the_wheel_ships_the_grafana_dashboard(wheel):
    """`imad serve --print-dashboard` reads it as package data (pyproject's package-data)."""
    shipped = zipfile.ZipFile(wheel).read("imad/serve/dashboard/imad.json")
    assert shipped == (ROOT / "imad" / "serve" / "dashboard" / "imad.json").read_bytes()


@pytest.mark.slow
def test_installed_wheel_scores_like_the_source_tree(wheel, tmp_path):
    target, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target",
                    str(target), str(wheel)], check=True)
    env = {**os.environ, "PYTHONPATH": str(target)}  # TMP first; nothing of the checkout
    result = subprocess.run([sys.executable, "-c", _SCORE, str(RECORDED)], capture_output=True,
                            text=True, check=True, cwd=elsewhere, env=env)
    installed = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(installed["file"]).is_relative_to(target)
    assert installed["version"] == imad.__version__
    assert installed["names"] == imad.available_routers()
    record = json.loads(RECORDED.read_text(encoding="utf-8").splitlines()[0])
    response = CritiqueResponse.from_dict(record["parsed"])
    for name in installed["names"]:
        p = imad.Router.load(name).score(record["question"]["text"], response).p
        assert installed[name] == p.hex()


@pytest.mark.slow
def test_the_sdist_carries_the_routers_and_builds_a_wheel_with_them(tmp_path):
    subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                    "build_meta.build_sdist(sys.argv[1])", str(tmp_path)], check=True, cwd=ROOT,
                   capture_output=True)
    (sdist,) = tmp_path.glob("imad-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
        archive.extractall(tmp_path / "src", filter="data")
    top = sdist.name.removesuffix(".tar.gz")
    for router in imad.available_routers():
        assert f"{top}/checkpoints/{router}/model.safetensors" in names
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(tmp_path / "wheel"), str(tmp_path / "src" / top)], check=True)
    (wheel,) = (tmp_path / "wheel").glob("imad-*.whl")
    assert {f"imad/_checkpoints/{r}/config.json" for r in imad.available_routers()} <= set(
        zipfile.ZipFile(wheel).namelist())


_BUILD_BOTH = """
import sys
from setuptools import build_meta
out = sys.argv[1]  # build_wheel rewrites sys.argv
build_meta.build_wheel(out)
build_meta.build_sdist(out)
"""


def test_the_wheel_and_the_sdist_carry_license_and_notice(tmp_path):
    """Apache-2.0 asks that its text travel with the code, and NOTICE names the data licences:
    both must be in what pip installs and in what a packager rebuilds from, byte for byte."""
    subprocess.run([sys.executable, "-c", _BUILD_BOTH, str(tmp_path)], check=True, cwd=ROOT,
                   capture_output=True)
    (wheel,) = tmp_path.glob("imad-*.whl")
    (sdist,) = tmp_path.glob("imad-*.tar.gz")
    expected = {name: (ROOT / name).read_bytes() for name in ("LICENSE", "NOTICE")}
    dist_info = wheel.name.split("-py")[0] + ".dist-info"
    with zipfile.ZipFile(wheel) as archive:
        for name, content in expected.items():
            assert archive.read(f"{dist_info}/licenses/{name}") == content
        metadata = archive.read(f"{dist_info}/METADATA").decode("utf-8")
    assert "License-Expression: Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata and "License-File: NOTICE" in metadata
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        for name, content in expected.items():
            member = archive.extractfile(f"{top}/{name}")
            assert member is not None and member.read() == content


def test_license_is_the_complete_apache_2_text():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    # sha256 of https://www.apache.org/licenses/LICENSE-2.0.txt, unmodified
    import hashlib

    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == (
        "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30")
    assert "END OF TERMS AND CONDITIONS" in text
