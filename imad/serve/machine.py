"""What one machine can run: the bounds of `imad serve`'s processes, slots and queue.

The constraints table (`ServeSettings.constraints`) bounds each setting alone; these bounds
come from the machine the server starts on, so a configuration that cannot run there (16,384
processes, more sockets than the process may open) is a `ConfigError` at start-up instead of
a server that thrashes or fails on its thousandth connection:

- processes: `workers × (1 + scoring_processes)` ≤ `PROCESSES_PER_CORE` × the usable cores
  (at least `MIN_PROCESS_BUDGET`). Each process beyond a few per core only waits for a core
  and holds its own router and spaCy pipeline (~0.5 GB).
- slots: `max_concurrency` ≤ `SLOTS_PER_CORE` × the cores (at least `MIN_SLOTS`): each slot is a
  thread of the server process that mostly waits for the upstream, but is still a thread and
  takes its share of the GIL when its answer comes back.
- sockets: each running request holds its client's connection and one upstream connection,
  each waiting request its client's connection, so `2 × max_concurrency + queue` plus
  `RESERVED_FDS` (log files, the scoring processes' pipes, caches) must fit the process's
  soft file-descriptor limit (`ulimit -n`; per server process, since each has its own).
"""

from __future__ import annotations

import os

PROCESSES_PER_CORE = 8
MIN_PROCESS_BUDGET = 16
"""Processes of one server (workers and their scoring processes) per usable core, and the
budget of a small machine (so 1–2 cores still run `--workers 2` with a few children each)."""
SLOTS_PER_CORE = 256
MIN_SLOTS = 64
"""Most pipelines one server process runs at once per usable core, and that of a small machine."""
RESERVED_FDS = 64
"""File descriptors a server process needs besides its connections."""


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def process_budget(cores: int | None = None) -> int:
    """Most processes (server processes and scoring processes) one server may start here."""
    return max(MIN_PROCESS_BUDGET, PROCESSES_PER_CORE * (usable_cores() if cores is None else cores))


def slot_budget(cores: int | None = None) -> int:
    """Most pipelines one server process may run at once here."""
    return max(MIN_SLOTS, SLOTS_PER_CORE * (usable_cores() if cores is None else cores))


def descriptor_limit() -> int | None:
    """The soft limit on open files of this process (None: unlimited or unknown)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def descriptors_needed(max_concurrency: int, queue_limit: int) -> int:
    """File descriptors a server process needs for its slots and queue at full load."""
    return 2 * max_concurrency + queue_limit + RESERVED_FDS
