"""The Django side of the context builder: real files, database rows and task outputs
fed to the pure engine in `engine.context`.
"""
from __future__ import annotations

import functools
import socket
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings

from engine.context.assembler import ContextAssembly, ContextBuilder
from engine.context.errors import REF_NOT_FOUND, RefError
from engine.context.files import read_file
from engine.context.limits import ContextLimits
from engine.context.resolution import CappedRows, Resolver, Sources
from engine.tokens import DEFAULT_ENCODING, TokenCounter
from knowledge.registry import run_db_query


def read_workspace_file(reference: dict, *, host: str = "") -> Any:
    """`host` is the worker reading (a Celery node name, e.g. `worker@machine`), named when
    the file is missing: workers on several machines each read their own mount of the
    workspace. Outside a worker, this machine's name."""
    return read_file(reference, workspace_root=settings.WORKSPACE_ROOT, max_bytes=settings.REF_MAX_FILE_BYTES,
                     host=host or socket.gethostname())


def query_database(reference: dict) -> list[dict] | CappedRows:
    return run_db_query(reference, timeout_ms=settings.REF_DB_TIMEOUT_MS or None)  # 0: no timeout


def outputs_from(outputs: dict[str, Any]) -> Callable[[str], Any]:
    """A task-output source over outputs already at hand (task id → output)."""

    def task_output(task_id: str) -> Any:
        if task_id not in outputs:
            raise RefError(REF_NOT_FOUND, f"no output of task '{task_id}' is available")
        return outputs[task_id]

    return task_output


def context_builder(*, limits: ContextLimits, encoding: str = DEFAULT_ENCODING,
                    task_output: Callable[[str], Any] | None = None,
                    abstractive: Callable[[str, int], str] | None = None, host: str = "") -> ContextBuilder:
    sources = Sources(task_output=task_output, read_file=functools.partial(read_workspace_file, host=host),
                      query=query_database)
    resolver = Resolver(sources, wait_timeout_s=settings.REF_WAIT_SECONDS)
    return ContextBuilder(limits=limits, counter=TokenCounter(encoding), sources=sources, resolver=resolver,
                          abstractive=abstractive)


def assemble_node_context(*, limits: ContextLimits, encoding: str, task_id: str, node_input: dict,
                          task_output: Callable[[str], Any] | None = None, items: Sequence[dict] = (),
                          messages: Sequence[dict] = (),
                          abstractive: Callable[[str, int], str] | None = None, host: str = "") -> ContextAssembly:
    builder = context_builder(limits=limits, encoding=encoding, task_output=task_output, abstractive=abstractive,
                              host=host)
    return builder.assemble(task_id=task_id, references=node_input.get("data_references", []),
                            transfer_config=node_input.get("transfer_config"), items=items, messages=messages)
