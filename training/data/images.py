"""Where a dataset's image may come from: inside the dataset's folder or `--image-dir`, nowhere else.

An image named by a dataset record is read and sent, base64-encoded, to the model's server. A
record that names `../../etc/passwd`, an absolute path elsewhere, or a symlink leading out of the
folder would ship that file upstream (issue 14, item 5), so every image path is resolved
(symlinks followed) and must land inside one of the allowed folders, as an existing file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from imad.errors import DatasetError


def contained_image(names: Sequence[str], roots: Sequence[Path]) -> Path:
    """The first existing file among `names` (relative to, or inside, one of `roots`), resolved.

    Each name is tried against each root in order; a name that resolves outside its root is
    skipped, and if nothing else is found that is the `DatasetError` (the caller adds the line).
    """
    escaped = False
    for name in names:
        if not name.strip() or "\x00" in name:
            raise DatasetError(f"image {name!r} is not a file name")
        for root in roots:
            try:
                base = root.resolve()
                candidate = (base / name).resolve()
                if not candidate.is_relative_to(base):
                    escaped = True
                elif candidate.is_file():
                    return candidate
            except (OSError, RuntimeError) as error:  # a name too long, a symlink loop
                raise DatasetError(f"image {name[:200]!r} cannot be resolved: {error}") from error
    folders = " or ".join(str(root) for root in roots)
    tried = names[0] if len(names) == 1 else list(names)
    if escaped:
        raise DatasetError(f"image {tried!r} resolves outside {folders}; images must lie inside "
                           "the dataset's folder or --image-dir")
    raise DatasetError(f"image {tried!r} not found in {folders}")
