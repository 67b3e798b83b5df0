"""`imad serve`: the OpenAI-compatible routing server (needs the `serve` extra)."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import sys
from typing import TYPE_CHECKING, Any

from imad.cli.common import DEFAULT_LLM, add_routing_arguments, flag_error
from imad.cli.decision_log_flags import add_decision_log_arguments
from imad.cli.shadow_flags import add_shadow_arguments, shadow_from_args
from imad.constraints import Integer, ascii_int, check_value, parse_text, table_of
from imad.errors import ConfigError
from imad.routing_options import DEFAULT_BUDGET_WINDOW
from imad.serve.auth import api_key_from_env
from imad.serve.openai.model_names import SERVE_BACKENDS
from imad.serve.settings import AUTO_SCORING_PROCESSES_CAP, QUEUE_PER_SLOT, ServeSettings

if TYPE_CHECKING:
    from imad.serve.startup_clock import StartupClock

_DEFAULTS = ServeSettings()


def _from_flag(value: Any, field: str, flag: str) -> Any:
    """A flag's text read by the ServeSettings row of `field` (a default passes as it is), so
    `--max-concurrency ١٢` or `--request-timeout 1e308` is one `error:` line naming the allowed
    values (argparse's own `int` takes any Unicode digits)."""
    return parse_text(value, table_of(ServeSettings)[field], flag) if isinstance(value, str) else value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--router", default=None,
                        help="router checkpoint directory or shipped name (default: the shipped "
                             "imad-router-v2)")
    parser.add_argument("--llm", default=DEFAULT_LLM,
                        help="chat back-end behind the router: local | gguf:PATH | openai:MODEL[@URL] | "
                             "cached:PATH::LLM (default: %(default)s)")
    parser.add_argument("--backend", default=_DEFAULTS.default_backend, choices=SERVE_BACKENDS,
                        help="debate back-end of the model name 'imad' (default: %(default)s)")
    parser.add_argument("--tau", type=float, default=None,
                        help="threshold of model names without one (default: the checkpoint's)")
    add_routing_arguments(parser, serving=True)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument("--port", type=ascii_int, default=8000, help="port to bind (default: %(default)s)")
    parser.add_argument("--api-key-env", default=None, metavar="VAR",
                        help="require 'Authorization: Bearer <key>' with the key read from this "
                             "environment variable (default: no auth)")
    parser.add_argument("--max-concurrency", default=_DEFAULTS.max_concurrency,
                        help="pipelines running at once per process; also the upstream client's "
                             "limit unless the --llm spec sets max_concurrency (default: %(default)s)")
    parser.add_argument("--max-queue", default=None,
                        help="requests waiting for a slot; one more gets 429 at once (default: "
                             f"{QUEUE_PER_SLOT} x --max-concurrency)")
    parser.add_argument("--queue-timeout", default=_DEFAULTS.queue_timeout_s,
                        metavar="SECONDS", help="429 after waiting this long for a slot "
                                                "(default: %(default)s)")
    parser.add_argument("--workers", default=_DEFAULTS.workers,
                        help="server processes on the port (uvicorn workers); slots, queue and "
                             "budgets are per process (default: %(default)s)")
    parser.add_argument("--metrics-public", action="store_true",
                        help="serve GET /metrics without the API key (default: auth like /v1)")
    parser.add_argument("--scoring-processes", default=None, metavar="N",
                        help="child processes of each server process that score answers, 0 for "
                             "a thread of the server process (~0.5 GB each; default: one per "
                             "core of the process's share, cores // --workers, 1 to "
                             f"{AUTO_SCORING_PROCESSES_CAP})")
    parser.add_argument("--no-scoring-process", action="store_true",
                        help="the same as --scoring-processes 0")
    parser.add_argument("--request-timeout", default=_DEFAULTS.request_timeout_s,
                        metavar="SECONDS", help="504 after this long (default: %(default)s)")
    parser.add_argument("--max-request-bytes", default=_DEFAULTS.max_request_bytes,
                        help="largest request body (default: %(default)s)")
    parser.add_argument("--max-question-chars", default=_DEFAULTS.max_question_chars,
                        help="longest question with its context and choices (default: %(default)s)")
    parser.add_argument("--retry-after", default=_DEFAULTS.retry_after_s, metavar="SECONDS",
                        help="Retry-After of a 429 (default: %(default)s)")
    parser.add_argument("--shutdown-timeout", default=_DEFAULTS.shutdown_timeout_s,
                        metavar="SECONDS",
                        help="on SIGTERM, how long in-flight requests may finish (default: %(default)s)")
    parser.add_argument("--log-prompts", action="store_true",
                        help="include question text in the JSON logs (default: sizes only)")
    add_decision_log_arguments(parser, serving=True)
    add_shadow_arguments(parser, serving=True)
    parser.add_argument("--on-violation", default=_DEFAULTS.on_violation, metavar="flag|escalate-all",
                        help="when the live check of the router's certificate rejects: flag (report "
                             "it in /v1/imad/stats, /metrics and the log) or escalate-all (also "
                             "escalate every answer until a router with a new certificate is "
                             "loaded); needs --decision-log (default: %(default)s)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                        help="(default: %(default)s)")
    parser.add_argument("--print-dashboard", action="store_true",
                        help="print the Grafana dashboard of /metrics as JSON and exit (checks the "
                             "other flags' values; loads no model, binds no port)")
    parser.add_argument("--datasource-uid", default=None, metavar="UID",
                        help="with --print-dashboard: bind the dashboard to this Prometheus data "
                             "source (default: Grafana's import asks for one)")


def settings_from_args(args: argparse.Namespace) -> ServeSettings:
    check_value(args.port, Integer(0, 65535), "--port")
    shadow, shadow_debate_rate, shadow_seed = shadow_from_args(args)
    if args.budget_window is not None and args.target_trigger_rate is None:
        raise ConfigError("--budget-window", "sets the window of a trigger budget, which only "
                          "--target-trigger-rate turns on: add --target-trigger-rate R or drop it")
    return ServeSettings(
        api_key=api_key_from_env(args.api_key_env),
        max_request_bytes=_from_flag(args.max_request_bytes, "max_request_bytes", "--max-request-bytes"),
        max_question_chars=_from_flag(args.max_question_chars, "max_question_chars",
                                      "--max-question-chars"),
        max_concurrency=_from_flag(args.max_concurrency, "max_concurrency", "--max-concurrency"),
        max_queue=_from_flag(args.max_queue, "max_queue", "--max-queue"),
        queue_timeout_s=_from_flag(args.queue_timeout, "queue_timeout_s", "--queue-timeout"),
        workers=_from_flag(args.workers, "workers", "--workers"),
        metrics_public=args.metrics_public, scoring_processes=scoring_processes_from_args(args),
        request_timeout_s=_from_flag(args.request_timeout, "request_timeout_s", "--request-timeout"),
        retry_after_s=_from_flag(args.retry_after, "retry_after_s", "--retry-after"),
        default_backend=args.backend, default_tau=args.tau, log_prompts=args.log_prompts,
        shutdown_timeout_s=_from_flag(args.shutdown_timeout, "shutdown_timeout_s",
                                      "--shutdown-timeout"), target_trigger_rate=args.target_trigger_rate,
        budget_window=DEFAULT_BUDGET_WINDOW if args.budget_window is None else args.budget_window,
        ood_policy=args.ood_policy, decision_log=args.decision_log, log_text=args.log_text,
        decision_log_max_rows=_from_flag(args.decision_log_max_rows, "decision_log_max_rows",
                                         "--decision-log-max-rows"),
        shadow=shadow, shadow_debate_rate=shadow_debate_rate, shadow_seed=shadow_seed,
        on_violation=args.on_violation)


def scoring_processes_from_args(args: argparse.Namespace) -> int | None:
    """--scoring-processes N, or 0 for --no-scoring-process; both at once is an error (which
    one was meant cannot be guessed)."""
    if args.no_scoring_process:
        if args.scoring_processes is not None:
            raise ConfigError("--no-scoring-process", "means --scoring-processes 0; give one of "
                                                      "the two, not both")
        return 0
    return _from_flag(args.scoring_processes, "scoring_processes", "--scoring-processes")


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def print_dashboard(args: argparse.Namespace) -> bool:
    """Print the dashboard when --print-dashboard asks for it (after the other flags' values
    passed `settings_from_args`, so a serve command line with a typo fails the same way with
    or without it); --datasource-uid alone is an error, not a flag silently ignored."""
    if not args.print_dashboard:
        if args.datasource_uid is not None:
            raise ConfigError("--datasource-uid", "only sets the data source of --print-dashboard's "
                                                  "JSON: add --print-dashboard or drop it")
        return False
    from imad.serve.dashboard import dashboard_text

    sys.stdout.write(dashboard_text(args.datasource_uid))
    return True


def run(args: argparse.Namespace) -> int:
    from imad.serve import require_serve_dependencies
    from imad.serve.startup_clock import StartupClock

    clock = StartupClock()

    settings = settings_from_args(args)
    if print_dashboard(args):
        return 0
    require_serve_dependencies()
    from imad import tracing

    # OTEL_* variables; a bad one is an error before binding (and before FastAPI is imported:
    # the OpenTelemetry API it imports reads OTEL_PROPAGATORS)
    tracing.configure_from_environment()
    from imad.serve.app import open_decision_log

    check_log = open_decision_log(settings)  # a file that is not a decision log: error, no model loaded
    if check_log is not None:
        check_log.close()
    from imad.serve.logs import configure_logging, log_event
    from imad.serve.metrics_files import MULTIPROCESS_ENV, prepare_multiprocess_dir
    from imad.serve.processes.server import bind_socket, serve, serve_workers
    from imad.serve.shadow_debates import shadow_upstream_slots
    from imad.serve.upstream import spec_with_concurrency

    metrics_dir = prepare_multiprocess_dir()  # PROMETHEUS_MULTIPROC_DIR: checked, emptied
    llm = spec_with_concurrency(args.llm, settings.max_concurrency + shadow_upstream_slots(settings))
    with bind_socket(args.host, args.port) as sock:  # first: a bad host or port ends here
        configure_logging(args.log_level)
        if metrics_dir is not None:
            os.environ[MULTIPROCESS_ENV] = str(metrics_dir[0])
            if metrics_dir[1]:
                log_event("metrics_dir_emptied", level=logging.WARNING, path=str(metrics_dir[0]),
                          removed_files=metrics_dir[1],
                          reason="the directory held an earlier run's metrics")
        if settings.api_key is None and not _is_loopback(args.host):
            log_event("no_api_key", level=logging.WARNING, host=args.host,
                      warning="anyone who can reach this address can use the server; set --api-key-env")
        log_event("server_starting", host=args.host, port=sock.getsockname()[1],
                  workers=settings.workers, pid=os.getpid(),
                  note="requests are answered 503 server_starting until server_ready")
        if settings.workers > 1:
            serve_workers(sock, settings, router=args.router, llm=llm,
                          api_key_env=args.api_key_env, log_level=args.log_level)
            return 0
        serve(_ready_app(args, settings, llm, sock, clock), settings, sock=sock)
    return 0


def _ready_app(args: argparse.Namespace, settings: ServeSettings, llm: str, sock: socket.socket,
               clock: StartupClock) -> Any:
    """The app of a one-process server, built while the port answers 503 starting."""
    from imad.serve.processes.starting import StartingResponder

    starting = StartingResponder(sock).start()
    try:
        from imad.serve.app import create_app
        from imad.serve.factory import PipelineFactory

        clock.lap("imports_and_checks")
        factory = PipelineFactory.from_specs(router=args.router, llm=llm)
        clock.lap("router_and_chat_model")
        return create_app(settings, factory, clock=clock,
                          router_spec=None if args.router is None else str(args.router))
    except ConfigError as error:
        raise flag_error(error) from None
    finally:
        starting.stop()
