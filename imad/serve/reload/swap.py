"""Hot reload of the router: a new checkpoint loaded off the request path, swapped at once.

The server serves one `Generation` at a time: a router's pipeline factory, the score batcher of
its scoring processes, and its identity (name, version, content hash). A request takes the
current generation when its pipeline starts and keeps it until its work has really ended, so a
request in flight finishes on the router it started with, and its decision names that router.

`ServingRouters.reload(spec)` (run in a thread: `POST /v1/imad/admin/reload`, SIGHUP) loads the
checkpoint, builds every back-end and scores a made-up answer with it (`PipelineFactory.prepare`),
and only then makes it current; the old generation's scoring processes are closed once its last
request ends. Until the swap, the old router keeps serving every request. A checkpoint that fails
any of these steps is refused (`ServeError` 422 with the `CheckpointError`'s message) and nothing
changes. With scoring processes, the new router first scores in a thread of the server (as the
watchdog's lane does while a replaced scoring process warms up) and its own scoring processes
take over once warm, a second swap of the same router: starting one loads spaCy, 12 s of the
12.5 s a reload took on a loaded 2-core machine (benchmarks/README.md). Reloads are one at a
time; the trigger budgets keep their state (their book only learns the new checkpoint's τ, the
warm-up τ of a model name seen for the first time) and their target and window, so the
`imad_budget_target_trigger_rate` and `imad_budget_window_answers` the server set at start stay
as they are: a reload changes the checkpoint, never the budget's flags.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from imad.decision_log.answer_row import RouterIdentity, router_identity
from imad.errors import ImadError, ServeError
from imad.serve.logs import log_event

if TYPE_CHECKING:
    from imad.router import Router
    from imad.serve.budgets import BudgetBook
    from imad.serve.factory import PipelineFactory
    from imad.serve.scoring.batcher import ScoreBatcher

OK, REFUSED = "ok", "refused"
RELOAD_RESULTS = (OK, REFUSED)


def identity_values(identity: RouterIdentity) -> dict[str, str | None]:
    """The decision schema's `router_name`, `router_version`, `router_hash` and `certificate`
    of `identity`."""
    return {"router_name": identity.name, "router_version": identity.version,
            "router_hash": identity.hash, "certificate": identity.certificate}


@dataclass
class Generation:
    """One router in service and what serves it; `users`: requests whose work still runs on it."""

    factory: PipelineFactory
    scorer: ScoreBatcher
    identity: RouterIdentity
    users: int = 0
    retired: bool = False


class ServingRouters:
    """The router generation in service, its users, and the reloads that replace it."""

    def __init__(self, factory: PipelineFactory, build_scorer: Callable[[Router], ScoreBatcher],
                 default_spec: str | None, budgets: BudgetBook | None = None,
                 on_result: Callable[[str], None] | None = None,
                 build_interim: Callable[[Router], ScoreBatcher] | None = None) -> None:
        """`build_scorer(router)`: a new batcher with its scoring processes (warming up);
        `build_interim(router)`: one scoring in the server's thread, in service while they warm
        up (None: wait for them before the swap);
        `default_spec`: what a reload without a router loads (the server's --router);
        `on_result(result)`: hears of every reload, `OK` or `REFUSED` (the metrics)."""
        self._build_scorer = build_scorer
        self._build_interim = build_interim
        self.default_spec = default_spec
        self.served_spec = default_spec
        """The router in service, as its last successful reload named it (SIGHUP reloads it)."""
        self._budgets = budgets
        self._on_result = on_result or (lambda result: None)
        self._current = Generation(factory, build_scorer(factory.router), router_identity(factory.router))
        self._lock = threading.Lock()
        self._reloading = threading.Lock()
        self._closed = False
        self._warming: ScoreBatcher | None = None
        """Scoring processes warming up to take over from the current (interim) generation."""
        self.board_generation = 0
        """The last reload board record this process applied or wrote (`imad.serve.reload.board`)."""

    @property
    def current(self) -> Generation:
        return self._current

    def acquire(self) -> Generation:
        """The current generation, held until `release` (a request's pipeline runs on it)."""
        with self._lock:
            generation = self._current
            generation.users += 1
            return generation

    def release(self, generation: Generation) -> None:
        with self._lock:
            generation.users -= 1
            closing = generation.retired and generation.users == 0
        if closing:
            generation.scorer.close()

    def reload(self, spec: str | None = None, *, why: str = "request", board_generation: int = 0,
               publish: Callable[[str | None, str], int] | None = None,
               expected_hash: str | None = None) -> Generation:
        """Load `spec` (default: `default_spec`), validate it and put it in service (blocks for
        the load and the scoring processes' warm-up); ServeError 422 when it cannot serve.

        Under --workers (`imad.serve.reload.board`): `board_generation` is the number of the
        board's record this reload follows (one no newer than the last applied is skipped, so
        concurrent reloads through two workers end on the same router); `publish(spec, hash)`
        records a reload made here on the board, for the other workers, and returns its number;
        `expected_hash`: the content hash the board's record names, refused (422) when the
        checkpoint loaded here differs (its file changed after the other worker loaded it)."""
        spec = self.default_spec if spec is None else spec
        with self._reloading:
            if board_generation and board_generation <= self.board_generation:
                return self._current
            self.board_generation = max(self.board_generation, board_generation)
            clock = time.perf_counter()
            old = self._current.identity
            try:
                generation = self._prepare(spec, expected_hash)
            except ServeError as error:
                self._on_result(REFUSED)
                log_event("router_reload_refused", level=logging.WARNING, router=spec, why=why,
                          error=error.message, serving=old.name, serving_hash=old.hash)
                raise
            self._swap(self._current, generation)
            self.served_spec = spec
            if self._budgets is not None:
                self._budgets.router = generation.factory.router
            if self._build_interim is not None:
                threading.Thread(target=self._take_over, args=(generation,), daemon=True,
                                 name="imad-reload-warm-up").start()
            if publish is not None:
                self.board_generation = publish(spec, generation.identity.hash)
            self._on_result(OK)
            log_event("router_reloaded", router=spec, why=why,
                      **identity_values(generation.identity), previous_hash=old.hash,
                      seconds=round(time.perf_counter() - clock, 3))
            return generation

    def _swap(self, old: Generation, new: Generation) -> bool:
        """Put `new` in service if `old` still is (False otherwise); `old` closes once unused,
        and scoring processes still warming up for another router are ended."""
        with self._lock:
            if self._current is not old or self._closed:
                return False
            self._current = new
            old.retired = True
            closing = old.users == 0
            warming, self._warming = self._warming, None
        if closing:
            old.scorer.close()
        if warming is not None:
            warming.close()
        return True

    def _take_over(self, interim: Generation) -> None:
        """Replace `interim` (scoring in a thread) by the same router on its own scoring
        processes once they are warm; not when another reload came first. A newer reload ends
        these processes while they warm up (`_swap`), so a burst of reloads warms one set of
        scoring processes at a time, not one per reload."""
        if not self._serving(interim):
            return
        scorer = self._build_scorer(interim.factory.router)
        with self._lock:
            still_serving = self._current is interim and not self._closed
            if still_serving:
                self._warming = scorer
        if not still_serving:
            scorer.close()
            return
        try:
            scorer.wait_ready()
        except Exception as error:  # the thread's lane keeps scoring for this router
            scorer.close()
            if self._serving(interim):  # not ended by a newer reload
                log_event("scoring_processes_not_started", level=logging.ERROR, error=str(error),
                          router_hash=interim.identity.hash)
            return
        finally:
            with self._lock:
                if self._warming is scorer:
                    self._warming = None
        if self._swap(interim, Generation(interim.factory, scorer, interim.identity)):
            log_event("router_scoring_processes_ready", router_hash=interim.identity.hash)
        else:
            scorer.close()

    def _prepare(self, spec: str | None, expected_hash: str | None = None) -> Generation:
        """A generation for `spec` (of content hash `expected_hash` when given), ready to
        serve; ServeError 422 otherwise."""
        from imad.router import Router  # torch: not in the --workers supervisor, which imports this

        current = self._current.factory
        try:
            router = Router.load(spec)
            identity = router_identity(router)
            if expected_hash is not None and identity.hash != expected_hash:
                raise ValueError(f"the checkpoint's content hash is {identity.hash[:12]}, not the "
                                 f"{expected_hash[:12]} another worker loaded: it changed in between")
            factory = replace(current, router=router)
            factory.prepare(current.ood_policy)
        except (ImadError, ValueError, OSError) as error:
            raise refused(spec, error) from None
        scorer = (self._build_interim or self._build_scorer)(router)
        try:
            scorer.wait_ready()
        except BaseException as error:
            scorer.close()
            if isinstance(error, Exception):
                raise refused(spec, error) from None
            raise
        return Generation(factory, scorer, identity)

    def _serving(self, generation: Generation) -> bool:
        with self._lock:
            return self._current is generation and not self._closed

    def close(self) -> None:
        """Close the scorer in service (a retired one closes when its last request ends); no
        swap after this."""
        with self._lock:
            self._closed = True
            warming, self._warming = self._warming, None
        if warming is not None:
            warming.close()
        self._current.scorer.close()


def refused(spec: str | None, error: BaseException) -> ServeError:
    return ServeError(422, f"router {spec or 'default'!r} was not loaded, the router in service "
                           f"keeps serving: {error}", code="router_refused", param="router")
