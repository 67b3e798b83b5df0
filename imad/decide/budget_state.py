"""A trigger budget kept in a file (`imad ask --budget-state FILE`): it outlives the process and
is shared by runs.

`imad ask` answers one question and exits, so a budget held in memory would never leave its
warm-up (the checkpoint's τ for the first 50 answers): the budget's window lives in FILE (JSON,
`TriggerBudget.state_dict()`), so a shell loop, `xargs -P` or cron jobs of `imad ask` calls
spend the budget like one long-running pipeline.

Concurrent runs on one file (issue 22, item 2): the budget `imad ask` builds is a
`FileBackedBudget`, whose every observation is read → observe → write under an advisory lock on
`FILE.lock` (`imad.file_lock`). The lock is taken at decision time, after the self-critique
call, and held for milliseconds, so the runs' LLM calls still overlap but each decides with the
window as the others left it and every answer lands in the file. A run killed while holding the
lock frees it (the kernel drops a dead process's flock); the write is atomic (a temporary file,
then a rename), so the file is always the last complete state.

Before any LLM call the file is checked (issues 23 item 3, 24 item 5, 34): its directory exists
and is writable, the file (when present) is a regular, writable file (no FIFO, device, directory,
link to /dev/zero or symlink loop) holding a valid state read with the untrusted-JSON reader.
Each failure is a `ConfigError` naming --budget-state and the file, which is left as it is.
Writes keep the file what it was: through a symlink the target is updated (the link stays), and
its mode is kept.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from imad.atomic_file import write_atomic
from imad.decide.budget import TriggerBudget
from imad.errors import ConfigError
from imad.file_lock import held_lock
from imad.jsonio import UntrustedJSONError, read_untrusted_file

MAX_STATE_BYTES = 64 * 1024 * 1024
"""A window of a million answers is about 30 MB; a larger file is no budget state."""

FLAG = "--budget-state"


class FileBackedBudget(TriggerBudget):
    """A trigger budget whose observations go through its state file under the file's lock."""

    path: Path
    """The state file itself (a symlink resolved), where the lock and the writes go."""

    def observe_with_source(self, p: float) -> tuple[float, bool]:
        with self._synced():
            return super().observe_with_source(p)

    def observe_unparsed(self) -> tuple[float | None, bool]:
        with self._synced():
            return super().observe_unparsed()

    @contextmanager
    def _synced(self) -> Iterator[None]:
        """Reread the window other runs left, let the block observe, write the result back."""
        with held_lock(self.path, blocking=True):
            if self.path.exists():
                saved = read_budget(self.path)
                check_same_settings(saved, self.target_rate, self.window, self.path)
                self.load_state_dict(saved.state_dict())
            yield
            write_budget(self, self.path)


def file_backed(budget: TriggerBudget, path: Path, *,
                initial_source: str | None = None) -> FileBackedBudget:
    """`budget` as a `FileBackedBudget` on `path` (same settings, same window); its warm-up
    decisions name `initial_source` (default: the budget's)."""
    shared = FileBackedBudget(budget.target_rate, window=budget.window,
                              min_observations=budget.min_observations,
                              initial_threshold=budget.initial_threshold,
                              initial_source=initial_source or budget.initial_source)
    shared.load_state_dict(budget.state_dict())
    shared.path = path
    return shared


def check_same_settings(budget: TriggerBudget, rate: float | None, window: int | None,
                        path: Path) -> None:
    """Refuse flags (or another run's budget) that differ from the state saved in `path`."""
    for flag, given, saved in (("--target-trigger-rate", rate, budget.target_rate),
                               ("--budget-window", window, budget.window)):
        if given is not None and given != saved:
            raise ConfigError(flag, f"{given} differs from the {saved} saved in {path}; drop the "
                              "flag, or start a new budget with another --budget-state file")


def check_state_file(path: Path) -> Path:
    """The file the state lives in (`path` with symlinks resolved), after checking that the
    directory takes the temporary file and the lock and that an existing file is a regular,
    writable one. `ConfigError` naming the file otherwise."""
    target = Path(os.path.realpath(path))
    directory = target.parent
    if not directory.is_dir():
        raise ConfigError(FLAG, f"cannot keep a budget state in {path}: the directory "
                          f"{directory} does not exist; create it first")
    if not _writable(directory):
        raise ConfigError(FLAG, f"cannot keep a budget state in {path}: the directory "
                          f"{directory} is not writable (the state is replaced through a "
                          "temporary file and locked with a .lock file beside it)")
    if os.path.lexists(target):
        try:
            mode = os.stat(target).st_mode
        except OSError as error:  # a symlink loop (ELOOP), a link into a vanished directory
            raise ConfigError(FLAG, f"cannot keep a budget state in {path}: "
                              f"{error.strerror or error}; give the path of a budget state file, "
                              "or of one to create") from None
        if not stat.S_ISREG(mode):
            raise ConfigError(FLAG, f"{path} is not a regular file ({_kind(mode)}): give the path "
                              "of a budget state file, or of one to create")
        if not _writable(target):
            raise ConfigError(FLAG, f"{path} is read-only: make it writable (chmod u+w) or give "
                              "another --budget-state file; every run writes its answer into it")
    return target


def read_budget(path: Path) -> TriggerBudget:
    """The budget saved in `path`; `ConfigError` (naming --budget-state) if it is not one."""
    try:
        state = read_untrusted_file(path, max_bytes=MAX_STATE_BYTES)
    except (OSError, UntrustedJSONError) as error:
        raise ConfigError(FLAG, f"cannot read a budget state from {path}: {error}") from None
    try:
        return TriggerBudget.from_state_dict(state)
    except ConfigError as error:
        raise ConfigError(FLAG, f"{path} is not a trigger budget state ({error})") from None


def write_budget(budget: TriggerBudget, path: Path) -> None:
    """Save the budget's state to `path` atomically, keeping the mode of the file it replaces."""
    write_atomic(path, (json.dumps(budget.state_dict(), allow_nan=False) + "\n").encode("utf-8"),
                 mode=_mode_to_keep(path))


def _mode_to_keep(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _writable(path: Path) -> bool:
    """Writable by this process, and not marked read-only for everyone (root's `os.access`
    ignores the mode bits, but a file a user made read-only is refused for root too)."""
    return os.access(path, os.W_OK) and bool(os.stat(path).st_mode & 0o222)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"
