"""Resolving data references (data-transfer-protocol §2–§3).

A `Resolver` turns one reference into data through the `Sources` it is given (plain
callables: the engine reads no database itself) and applies the §3.2 failure handling:
each error code has a default, a reference's `fallback_config` overrides it, and every
failure becomes a `ResolutionFailure` in the seed's shape.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from engine.context import errors
from engine.context.errors import RefError
from engine.context.filters import apply_filter, keep_matching, matches, require_field
from engine.errors import EngineError
from engine.jsonpath import PathError, compile_path, find_nodes

NOT_READY = object()
"""What a task-output source returns for a task that has not finished yet."""
NAMED_INPUT = "input_mapping"
"""The `ref_type` a failure of a named input (a JSONPath in a node's input_mapping) records."""


@dataclass
class Sources:
    """Where references read from. Each callable raises RefError when it cannot answer."""

    task_output: Callable[[str], Any] | None = None  # task id → output, or NOT_READY
    read_file: Callable[[dict[str, Any]], Any] | None = None  # the file reference → its data
    query: Callable[[dict[str, Any]], list[Any] | CappedRows] | None = None  # the db_query reference → rows

    def completed(self, task_id: str) -> bool:
        if self.task_output is None:
            return False
        try:
            return self.task_output(task_id) is not NOT_READY
        except RefError:
            return True  # it will fail now rather than later


@dataclass
class ResolutionFailure:
    """§3.2 `resolution_failure`, plus the input's name and how many attempts were made."""

    reference: dict[str, Any]
    name: str
    error_code: str
    error_message: str
    fallback_strategy: str
    fallback_value: Any = None
    attempts: int = 1
    timestamp: str = ""

    def as_dict(self) -> dict[str, Any]:
        ref = self.reference
        target: dict[str, Any] = {key: ref[key] for key in ("task_id", "path", "table") if key in ref}
        return {
            "ref_type": ref.get("ref_type"),
            **target,
            "input": self.name,
            "error_code": self.error_code,
            "error_message": self.error_message,
            "fallback_strategy": self.fallback_strategy,
            "fallback_value": self.fallback_value,
            "attempts": self.attempts,
            "timestamp": self.timestamp,
        }


class ResolutionAborted(EngineError):
    """A reference failed and its handling says to stop the node; the code is the failure's."""

    code = "RESOLUTION_ABORTED"

    def __init__(self, failure: ResolutionFailure):
        super().__init__(f"input '{failure.name}': {failure.error_code}: {failure.error_message}",
                         code=failure.error_code)
        self.failure = failure
        self.failures: list[dict[str, Any]] = []  # every failure of the node up to this one (the assembler's)


@dataclass
class CappedRows:
    """What a db_query source answers when it cut the rows at its own cap rather than the
    reference's `limit`: the rows, and what was asked and left out, for the record."""

    rows: list[Any]
    requested: int
    cap: int
    left_out: int

    def record(self) -> dict[str, Any]:
        return {"limit_requested": self.requested, "limit_applied": self.cap, "rows_passed": len(self.rows),
                "rows_left_out": self.left_out}


@dataclass
class Resolved:
    """A reference's data, or `skipped` when its fallback left nothing to pass; `cap` when
    the source cut a query's rows at its cap (CappedRows.record)."""

    data: Any = None
    skipped: bool = False
    resolved_at: str = "before_scheduling"
    failures: list[ResolutionFailure] = field(default_factory=list)
    cap: dict[str, Any] | None = None


def timing(reference: dict[str, Any], sources: Sources) -> str:
    """§3.1: files, queries and outputs of finished tasks resolve before scheduling; the
    outputs of unfinished tasks resolve at execution, once the task completes."""
    if reference["ref_type"] == "task_output" and not sources.completed(reference["task_id"]):
        return "at_execution"
    return "before_scheduling"


def select_path(data: Any, path: str, spec: dict[str, Any] | None = None) -> Any:
    """The value a JSONPath selects, kept only where the `filter` object matches.

    RFC 9535 answers with a nodelist; a reference passes a value. The rule, the same for
    references, output mappings and conditions: a singular query (names and indices only:
    `$.atoms[0].content`) passes its node's value; any other query (a wildcard, a slice, a
    filter, a union, `..`) passes the list of its nodes' values, in order; a query that
    selects no node is REF_NOT_FOUND, never an empty list or null passed as if it were data.

    The filter looks at each selected object; for a selected list, at its elements; and
    for a selected scalar, at the object holding it, so the seed's example
    (`$.atoms[*].content` filtered on `atom_type`) keeps the contents of matching atoms.
    A filter field that none of those has is REF_FILTER_ERROR (see filters.apply_filter); a
    filter that keeps nothing is REF_NOT_FOUND, as a path that selects nothing is.
    """
    try:
        expression = compile_path(path)
        if spec is not None:
            apply_filter([], spec)  # refuses a malformed filter even when nothing is selected
        found = find_nodes(path, data)
    except PathError as error:
        raise RefError(errors.REF_PATH_INVALID, str(error)) from None
    if not found:
        raise RefError(errors.REF_NOT_FOUND, f"path '{path}' selects nothing in the output")
    if expression.singular_query():
        value = found[0].value
        if spec is None:
            return value
        kept = apply_filter(value, spec)
        if kept == []:
            raise _kept_nothing(path)
        return kept
    if spec is None:
        return [node.value for node in found]
    holders = [_holder(node) for node in found]
    considered = [element for node in found if isinstance(node.value, list) for element in node.value]
    considered += [holder for node, holder in zip(found, holders, strict=True)
                   if not isinstance(node.value, list) and holder is not None]
    require_field(considered, spec)
    selected = []
    for node, holder in zip(found, holders, strict=True):
        if isinstance(node.value, list):
            selected.append(keep_matching(node.value, spec))
        elif holder is not None and matches(holder, spec):
            selected.append(node.value)
    if all(part == [] for part in selected):  # nothing kept, or only empty lists
        raise _kept_nothing(path)
    return selected


def _kept_nothing(path: str) -> RefError:
    return RefError(errors.REF_NOT_FOUND, f"the filter keeps nothing of what path '{path}' selects")


def _holder(node: Any) -> dict[str, Any] | None:
    """The object a selected value belongs to (itself when it is one)."""
    while node is not None and not isinstance(node.value, dict):
        node = node.parent
    return node.value if node is not None else None


def keys_only(data: Any) -> Any:
    """`transform: keys_only` — the shape of the data without its values."""
    if isinstance(data, dict):
        return sorted(data)
    if isinstance(data, list):
        keys = sorted({key for element in data if isinstance(element, dict) for key in element})
        return {"count": len(data), "keys": keys}
    return type(data).__name__


class Resolver:
    """Resolves references with §3.2 failure handling.

    `wait_timeout_s` bounds how long a dynamic task-output reference waits for its task
    (REF_TIMEOUT after that); `sleep` and `clock` are injectable so tests need not wait.
    """

    def __init__(self, sources: Sources, *, wait_timeout_s: float = 0.0, poll_s: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self.sources = sources
        self.wait_timeout_s = wait_timeout_s
        self.poll_s = poll_s
        self.sleep = sleep
        self.clock = clock
        self.now = now

    # -- one attempt -------------------------------------------------------------------

    def fetch(self, reference: dict[str, Any]) -> Any:
        """One attempt at the raw data, before path and filter."""
        kind = reference["ref_type"]
        if kind == "task_output":
            return self._task_output(reference["task_id"])
        if kind == "file":
            if self.sources.read_file is None:
                raise RefError(errors.REF_PERMISSION_DENIED, "file references are not available here")
            return self.sources.read_file(reference)
        if kind == "db_query":
            if self.sources.query is None:
                raise RefError(errors.REF_PERMISSION_DENIED, "db_query references are not available here")
            return self.sources.query(reference)
        raise RefError(errors.REF_FORMAT_ERROR, f"unknown ref_type {kind!r}")

    def _task_output(self, task_id: str) -> Any:
        if self.sources.task_output is None:
            raise RefError(errors.REF_NOT_FOUND, f"no output of task '{task_id}' is available")
        deadline = self.clock() + self.wait_timeout_s
        while True:
            output = self.sources.task_output(task_id)
            if output is not NOT_READY:
                return output
            if self.clock() >= deadline:
                raise RefError(errors.REF_TIMEOUT, f"task '{task_id}' did not complete within {self.wait_timeout_s:g} s")
            self.sleep(self.poll_s)

    # -- a named input ---------------------------------------------------------------------

    def resolve_named(self, name: str, path: str, scope: dict[str, Any]) -> Resolved:
        """An input_mapping key that names a JSONPath over the run (`scope`: its input, state
        and the nodes' outputs). A path that selects nothing is REF_NOT_FOUND, as it is for a
        reference, with §3.2's default handling (a named input has no fallback_config, so
        `skip`): the input is left out and the failure recorded. Its `ref_type` is
        `input_mapping`: it is not one of §2's references, and says where it was written."""
        resolved = Resolved()
        try:
            return _with(resolved, select_path(scope, path))
        except RefError as error:
            if error.code == errors.REF_NOT_FOUND:
                error = RefError(errors.REF_NOT_FOUND, f"path '{path}' selects nothing in this run")
            reference = {"ref_type": NAMED_INPUT, "path": path}
            return self._fall_back(reference, name, error, default_fallback(error, {}), 1, {}, resolved)

    # -- a whole reference -------------------------------------------------------------

    def resolve(self, reference: dict[str, Any], name: str) -> Resolved:
        resolved = Resolved(resolved_at=timing(reference, self.sources))
        config = reference.get("fallback_config") or {}
        fetched, attempts = reference, 0
        data: Any = None
        while True:
            attempts += 1
            try:
                data = self.fetch(fetched)
                break
            except RefError as error:
                fallback = config.get("strategy") or default_fallback(error, config)
                if fallback == "retry" and attempts <= int(config.get("retry_count", 3)):
                    self.sleep(int(config.get("retry_delay_ms", 1000)) / 1000)
                    continue
                if fallback == "ignore_filter" and fetched is reference:
                    # §3.2: the data without the conditions or sections it could not apply.
                    resolved.failures.append(self._failure(reference, name, error, fallback, None, attempts))
                    fetched, attempts = unfiltered(reference), 0
                    continue
                return self._fall_back(reference, name, error, fallback, attempts, config, resolved)
        if isinstance(data, CappedRows):
            resolved.cap, data = data.record(), data.rows
        if reference["ref_type"] == "task_output":
            data = self._select(reference, name, data, resolved)
        return resolved if resolved.skipped else _with(resolved, data)

    def _select(self, reference: dict[str, Any], name: str, data: Any, resolved: Resolved) -> Any:
        """Path and filter, then transform; an invalid path or filter degrades as §3.2 says."""
        path, spec = reference.get("path"), reference.get("filter")
        try:
            data = self._path_and_filter(reference, name, data, path, spec, resolved)
        except RefError as error:
            config = reference.get("fallback_config") or {}
            fallback = config.get("strategy") or default_fallback(error, config)
            self._fall_back(reference, name, error, fallback, 1, config, resolved)
            return resolved.data
        if reference.get("transform") == "keys_only":
            data = keys_only(data)
        return data

    def _path_and_filter(self, reference: dict[str, Any], name: str, data: Any, path: str | None, spec: Any,
                         resolved: Resolved) -> Any:
        """A path or filter error falls back to the data without it (`full_data`,
        `ignore_filter`) unless the reference's fallback_config names a `strategy`."""
        try:
            return select_path(data, path, spec) if path else data if spec is None else apply_filter(data, spec)
        except RefError as error:
            if "strategy" in (reference.get("fallback_config") or {}):
                raise
            if error.code == errors.REF_FILTER_ERROR:
                resolved.failures.append(self._failure(reference, name, error, "ignore_filter", None, 1))
                return self._path_and_filter(reference, name, data, path, None, resolved)
            if error.code == errors.REF_PATH_INVALID:
                resolved.failures.append(self._failure(reference, name, error, "full_data", None, 1))
                return data if spec is None else self._path_and_filter(reference, name, data, None, spec, resolved)
            raise

    def _fall_back(self, reference: dict[str, Any], name: str, error: RefError, fallback: str, attempts: int,
                   config: dict[str, Any], resolved: Resolved) -> Resolved:
        if fallback == "retry":  # retries exhausted
            fallback = config.get("on_final_failure", "skip")
        if fallback in ("ignore_filter", "full_data"):  # already without it, and it still failed
            fallback = "skip"
        if fallback == "convert":
            value = error.convertible
        elif fallback == "use_default":
            value = config.get("default_value")
        else:
            value = None
        failure = self._failure(reference, name, error, fallback, value, attempts)
        resolved.failures.append(failure)
        if fallback == "abort":
            raise ResolutionAborted(failure)
        if fallback == "skip":
            resolved.skipped = True
        else:
            resolved.data = value
        return resolved

    def _failure(self, reference: dict[str, Any], name: str, error: RefError, fallback: str, value: Any,
                 attempts: int) -> ResolutionFailure:
        return ResolutionFailure(
            reference=reference, name=name, error_code=error.code, error_message=error.message,
            fallback_strategy=fallback, fallback_value=value, attempts=attempts,
            timestamp=self.now().isoformat().replace("+00:00", "Z"),
        )


def unfiltered(reference: dict[str, Any]) -> dict[str, Any]:
    """The reference without what filters what its source reads: a query's `conditions`,
    a file's `sections`."""
    return {key: value for key, value in reference.items() if key not in ("conditions", "sections")}


def _with(resolved: Resolved, data: Any) -> Resolved:
    resolved.data = data
    return resolved


def default_fallback(error: RefError, config: dict[str, Any]) -> str:
    """§3.2's default handling for each error code."""
    code = error.code
    if code == errors.REF_NOT_FOUND:
        return "use_default" if "default_value" in config else "skip"
    if code == errors.REF_TIMEOUT:
        return "retry"
    if code == errors.REF_FORMAT_ERROR:
        return "convert" if error.convertible is not None else "abort"
    if code == errors.REF_PATH_INVALID:
        return "full_data"
    if code == errors.REF_FILTER_ERROR:
        return "ignore_filter"
    return "abort"  # REF_PERMISSION_DENIED

