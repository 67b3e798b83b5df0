"""A real `imad serve` process tree on loopback, in front of a loopback stub upstream, for the
fault tests (tests/hostile/test_hostile_process_tree.py).

`Upstream` answers every self-critique at once (the tag of the question, confidence 90) and
every debate call too, unless `hold_debates` is set: then debate calls wait until it is cleared,
so a request can be held inside its pipeline. `ServeProcess` starts `python -m imad.cli.main
serve` with its log in a file, waits for each worker's `server_ready`, and lists the processes
of its tree (supervisor, workers, scoring processes) with psutil. Every wait is bounded by a
deadline, so a broken server fails the test instead of hanging it.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import httpx
import psutil

from tests.conftest import REPO_ROOT
from tests.support.serving import echo_respond

WAIT_S = 180.0
"""Upper bound of any wait (a server start loads spaCy in every scoring process)."""


def wait_for(condition: Callable[[], bool], what: str, limit_s: float = WAIT_S) -> float:
    """Poll `condition` until true; the seconds it took, or AssertionError naming `what`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > limit_s:
            raise AssertionError(f"{what}: not within {limit_s:g} s")
        time.sleep(0.05)
    return time.monotonic() - started


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie waiting for its parent counts as ended)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Upstream:
    """The stub model server (see the module docstring); `calls` counts the calls seen by kind
    ("critique", "debate"); `respond`, when given, answers every call instead of `echo_respond`
    (e.g. self-critiques whose confidences and lengths vary, so p varies)."""

    def __init__(self, respond: Callable[[SimpleNamespace], str] | None = None) -> None:
        self.calls = {"critique": 0, "debate": 0}
        self._calls_lock = threading.Lock()
        self.hold_debates = threading.Event()
        self.debate_started = threading.Event()
        self._released = threading.Event()
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                response_format = body.get("response_format") or {}
                schema = ((response_format.get("json_schema") or {}).get("schema")
                          or response_format.get("schema"))
                request = SimpleNamespace(json_schema=schema, messages=[
                    SimpleNamespace(role=m.get("role"), text=m["content"])
                    for m in body["messages"] if isinstance(m.get("content"), str)])
                kind = "critique" if "critique" in json.dumps(schema) else "debate"
                with upstream._calls_lock:
                    upstream.calls[kind] += 1
                if kind == "debate" and upstream.hold_debates.is_set():
                    upstream.debate_started.set()
                    upstream._released.wait(WAIT_S)
                reply = json.dumps({
                    "id": "stub", "object": "chat.completion", "model": "stub",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant",
                                             "content": (respond or echo_respond)(request)}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                except OSError:  # the server that asked has gone
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def release(self) -> None:
        self._released.set()

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def upstream_stub(respond: Callable[[SimpleNamespace], str] | None = None) -> Iterator[Upstream]:
    upstream = Upstream(respond)
    try:
        yield upstream
    finally:
        upstream.close()


class ServeProcess:
    """`imad serve` as a subprocess (see the module docstring)."""

    def __init__(self, router_dir: Path, upstream: Upstream, workdir: Path, *flags: str,
                 env: dict[str, str] | None = None) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"serve-{self.port}.log"
        command = [sys.executable, "-m", "imad.cli.main", "serve", "--router", str(router_dir),
                   "--llm", f"openai:stub@{upstream.url}?max_retries=0", "--port", str(self.port),
                   "--metrics-public", *flags]
        path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        environ = {key: value for key, value in os.environ.items()
                   if key not in ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")}
        environ.update({"PYTHONPATH": path, "TMPDIR": str(workdir), **(env or {})})
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log,
                                            stderr=subprocess.STDOUT, env=environ)
        self.root = psutil.Process(self.process.pid)

    def events(self, name: str | None = None) -> list[dict]:
        """The JSON log lines so far (those of event `name`)."""
        lines = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if name is None or record.get("event") == name:
                    lines.append(record)
        return lines

    def wait_ready(self, workers: int = 1) -> None:
        def ready() -> bool:
            assert self.process.poll() is None, f"imad serve exited:\n{self.log.read_text()[-3000:]}"
            return len(self.events("server_ready")) >= workers

        wait_for(ready, f"{workers} worker(s) ready")

    def tree(self) -> list[psutil.Process]:
        """Every live process of the tree, the supervisor first."""
        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def spawned(self, parent: psutil.Process) -> list[int]:
        """Process ids of `parent`'s multiprocessing children (workers or scoring processes;
        not multiprocessing's resource tracker)."""
        return [child.pid for child in parent.children()
                if "spawn_main" in " ".join(child.cmdline())]

    def post(self, index: int, *, stream: bool = False, timeout: float = 60) -> httpx.Response:
        body = {"model": "imad", "stream": stream,
                "messages": [{"role": "user", "content": f"Which number is tagged #{index}?"}]}
        return httpx.post(f"{self.url}/v1/chat/completions", json=body, timeout=timeout)

    def post_together(self, indices: list[int]) -> dict[int, int]:
        """Post the tagged questions at once, each from its own thread; their statuses."""
        statuses: dict[int, int] = {}
        threads = [threading.Thread(target=lambda i=i: statuses.setdefault(i, self.post(i).status_code))
                   for i in indices]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        return statuses

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", timeout=30).text

    def health(self) -> dict:
        return httpx.get(f"{self.url}/health", timeout=30).json()

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM, then the exit status (SIGKILL for a server that did not stop)."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout_s)
        finally:
            for process in self.tree():
                process.kill()
