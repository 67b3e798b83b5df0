"""Training-time code (SPEC §1): corpus building, FocusCal, Lightning training, export,
evaluation. Nothing in `imad` imports it at run time; importing it loads nothing."""
