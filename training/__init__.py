"""Training-time code (SPEC §1): corpus building, FocusCal, Lightning training, export,
evaluation. Nothing in `imad` imports it at run time; importing it loads nothing, but checks
that the `train` extra is installed (a missing one names its `pip install` command)."""

from imad.extras import require_extra

require_extra("train", "imad's training code (python -m training.*)")
