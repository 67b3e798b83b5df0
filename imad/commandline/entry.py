"""One rule for every command-line entry point.

`imad …` and every `python -m training.*` command run their work through `run_entry_point`:
a typed error (`ImadError`) prints `error: <message>` on stderr, with no traceback, and exits
non-zero — 2 when the user's input was unusable (a bad flag, value or question), 3 when the run
failed (no answer, a failed call, a bad file). `--debug` or `IMAD_DEBUG=1` re-raises instead,
so the traceback shows. An error that is not typed is a bug: it still prints one line and
exits 3, and asks for `--debug` to see where it came from. A reader that closes the pipe early
(`imad ask … --json | head -c 10`) ends the command quietly with 141 (128 + SIGPIPE), as a
shell tool killed by SIGPIPE does; a stdout that refuses the output (`> /dev/full`, a full
disk) is one `error:` line and 3 (`finish_output`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from imad.errors import ConfigError, DecisionLogDatabaseError, ImadError, InvalidQuestionError

EXIT_OK = 0
EXIT_USAGE = 2
"""The input could not be used: a bad flag or value, an invalid question (argparse uses 2 too)."""
EXIT_FAILED = 3
"""The run failed: no answer was produced, a call or a file failed."""
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""stdout's reader went away (`| head`): nothing is wrong with the run, and nothing is printed."""

EXIT_STATUS_HELP = (
    "exit status: 0 success; 2 usage error (bad flag, value or question); 3 failed run (no "
    "answer produced, a call or file failed); 130 interrupted. Errors print 'error: …' without "
    "a traceback; --debug or IMAD_DEBUG=1 shows it."
)
"""The epilog every entry point's `--help` ends with."""

USAGE_ERRORS: tuple[type[ImadError], ...] = (ConfigError, InvalidQuestionError,
                                             DecisionLogDatabaseError)
"""A decision-log database that cannot be reached or used is a wrong `--decision-log`/`--log`."""


def debug_requested(argv: Sequence[str] | None = None) -> bool:
    """True when `--debug` is among the arguments or IMAD_DEBUG is set to a true value."""
    arguments = sys.argv[1:] if argv is None else argv
    flag = os.environ.get("IMAD_DEBUG", "").strip().lower()
    return "--debug" in arguments or flag in {"1", "true", "yes", "on"}


def exit_status_of(error: BaseException) -> int:
    """The exit status an error ends a run with."""
    if isinstance(error, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_USAGE if isinstance(error, USAGE_ERRORS) else EXIT_FAILED


def run_entry_point(prog: str, run: Callable[[], int | None], *, debug: bool = False) -> int:
    """Run `run()` under the entry-point rule and return the process exit status.

    `prog` names the command in each message ("imad ask", "python -m training.fit").
    """
    try:
        with watch_stdout() as watched:
            status = int(run() or EXIT_OK)
    except BrokenPipeError:
        _detach_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ImadError as error:
        if debug:
            raise
        print(f"{prog}: error: {error}", file=sys.stderr)
        return exit_status_of(error)
    except Exception as error:  # a bug, not bad input: one line, the traceback behind --debug
        if debug:
            raise
        if error is watched.failure:
            return _stdout_failed(prog, error)
        print(f"{prog}: error: unexpected {type(error).__name__}: {error} (this is a bug in "
              "imad; rerun with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAILED
    return finish_output(prog, status, watched)


@contextmanager
def watch_stdout() -> Iterator[_WatchedStdout]:
    """Within the block, sys.stdout notes a failed write (`_WatchedStdout`); restored after."""
    watched = _WatchedStdout(sys.stdout)
    sys.stdout = watched
    try:
        yield watched
    finally:
        if sys.stdout is watched:
            sys.stdout = watched.stream


def finish_output(prog: str, status: int, watched: _WatchedStdout) -> int:
    """Flush stdout and return `status`, or the status of an output that did not arrive: 141
    when the reader went away, 3 with one `error:` line when stdout refused it (`> /dev/full`,
    a full disk), also where the writer swallowed the error (argparse's `--help` does)."""
    if isinstance(watched.failure, BrokenPipeError):
        _detach_stdout()
        return EXIT_BROKEN_PIPE
    if watched.failure is not None:
        return _stdout_failed(prog, watched.failure)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _detach_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as error:
        return _stdout_failed(prog, error)
    return status


class _WatchedStdout:
    """stdout as a command writes it: the same stream, noting the OSError a write or flush
    raised, so the entry point tells "stdout refused the output" from a bug (the error itself
    propagates unchanged)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as error:
            self.failure = error
            raise

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as error:
            self.failure = error
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _stdout_failed(prog: str, error: OSError) -> int:
    print(f"{prog}: error: cannot write standard output ({error.strerror or error}); the output "
          "is incomplete: check the disk or the file it was sent to", file=sys.stderr)
    _detach_stdout()  # the interpreter's last flush would fail on it again
    return EXIT_FAILED


def print_json(data: Any, *, allow_nan: bool = True) -> None:
    """`data` as indented JSON on stdout, non-ASCII text as written: every command's `--json`.
    `allow_nan=False`: a NaN or infinity is a ValueError before anything is printed (a card
    promised to be finite is never printed half or as invalid JSON)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=allow_nan)
    sys.stdout.write(text + "\n")


def _detach_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (pytest's capture)
        pass
    finally:
        os.close(devnull)
