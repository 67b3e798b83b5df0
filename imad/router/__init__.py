"""The debate router (SPEC §5, §7): the two-head MLP, its checkpoint, and the keep/escalate
decision. Importing this package loads torch but no checkpoint and no spaCy model."""

from imad.router.checkpoint import CHECKPOINT_SCHEMA_VERSION
from imad.router.decision import Cue, RouterDecision
from imad.router.model import RouterNet, RouterNetConfig, RouterOutput
from imad.router.router import DEFAULT_CHECKPOINT, Router

__all__ = [
    "CHECKPOINT_SCHEMA_VERSION",
    "DEFAULT_CHECKPOINT",
    "Cue",
    "Router",
    "RouterDecision",
    "RouterNet",
    "RouterNetConfig",
    "RouterOutput",
]
