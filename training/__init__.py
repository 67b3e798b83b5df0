"""Training-time code: corpus building, FocusCal, Lightning training, export,
evaluation. Nothing in `imad` imports it at run time; importing it loads nothing, but checks
that the `train` extra is installed (a missing one names its `pip install` command).

Run as `python -m training.X` (Python sets sys.argv[0] to "-m" while it imports the package),
a missing extra follows the entry-point rule: one `error:` line and exit 3, no traceback."""

import sys

from imad.errors import MissingDependencyError
from imad.extras import require_extra

try:
    require_extra("train", "imad's training code (python -m training.*)")
except MissingDependencyError as missing:
    if sys.argv[:1] != ["-m"] or "--debug" in sys.argv:
        raise
    from imad.commandline.entry import EXIT_FAILED

    print(f"error: {missing}", file=sys.stderr)
    raise SystemExit(EXIT_FAILED) from None
