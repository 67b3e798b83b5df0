"""Packages of the imad distribution (the metadata is in pyproject.toml).

The shipped routers live in the top-level `checkpoints/` folder (SPEC §1 fixes it there); this
maps that folder into the wheel as the data package `imad._checkpoints`, so an installed imad
finds them beside its own code (`imad.router.registry`). A pure-pyproject configuration cannot
add a mapped package to the ones `packages.find` discovers.
"""

from setuptools import find_packages, setup

setup(
    # The data-only folders are packages too (setuptools warns about folders it would skip).
    packages=[*find_packages(include=["imad*", "features*", "training*"]), "features.lexicons",
              "imad._checkpoints"],
    package_dir={"imad._checkpoints": "checkpoints"},
)
