"""The entry-point rule, where the `imad` sub-commands import it from (`imad.commandline.entry`)."""

from __future__ import annotations

from imad.commandline.entry import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_USAGE,
    USAGE_ERRORS,
    debug_requested,
    exit_status_of,
    run_entry_point,
)

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_STATUS_HELP",
           "EXIT_USAGE", "USAGE_ERRORS", "debug_requested", "exit_status_of", "run_entry_point"]
