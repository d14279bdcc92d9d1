"""structlog setup: JSON lines in a cluster (for log collectors), colored console output locally.

Context bound with `structlog.contextvars` (the controller binds controller, namespace, name and
reconcileID around every reconcile) is merged into every line logged within that task.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def configure_logging(*, json: bool | None = None, level: str = "info") -> None:
    """Configure structlog once for the process. `json=None` picks JSON when running in a pod."""
    use_json = in_cluster() if json is None else json
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: list[Any]
    if use_json:
        renderer = [
            structlog.processors.dict_tracebacks,
            structlog.processors.EventRenamer("msg"),
            structlog.processors.JSONRenderer(),
        ]
    else:
        # Plain tracebacks: structlog's default (rich, with every frame's locals) costs ~50 ms of the
        # event loop per logged error, 100x a plain one, and a failing reconcile logs one per retry;
        # it would also print local values (tokens, object bodies) into the log.
        renderer = [
            structlog.dev.ConsoleRenderer(
                colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
            )
        ]
    structlog.configure(
        processors=shared + renderer,
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS.get(level.lower(), logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        # Not cached: module-level loggers created before configuration must still pick it up.
        cache_logger_on_first_use=False,
    )


def get_logger(name: str, **bound: Any) -> Any:
    """A logger carrying `logger=name` and any extra bound fields."""
    return structlog.get_logger(name).bind(logger=name, **bound)
