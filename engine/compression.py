"""Compression of dependency outputs (parallel-agent-compression).

A DAG node with `compress: true` has its dependencies' outputs compressed before it runs
(`compress_model`, default "flash"; `compress_ratio`, 0.05–1.0, default 0.3). For each
dependency output, in this order (the seed's compressor.py):

1. the cache (key: SHA-256 of the content + ratio + model) — a hit is returned as it is;
2. content under MIN_LINES lines is returned unchanged (and not cached);
3. a compression prompt ("将以下内容压缩到原长度的 30% 左右…", `compression_prompt`);
4. the model is called (here: a caller-supplied `compressor`);
5. the result is cached and returned.

A compression that fails (the compressor raises, returns no text, or returns a text longer
than the original) falls back to the original text and is not cached: graceful degradation.
The cache is also allowed to fail: a cache that raises counts as a miss / a write not made.

The outputs are injected into the node's content as one block:

    ---
    [依赖任务压缩输出 | 模型: flash, 压缩比: 30%]

    ### task_a
    <compressed>

    ### task_b
    <compressed>
    ---

Pure Python: the cache is any object with get/set (executions.compression_cache holds the
Redis-backed one), the compressor any callable `(content, ratio, model) -> text`.
`llm_compressor` makes one from a prompt-taking model call; `extractive_compressor` is the
offline builtin backend.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.context.summary import summarize
from engine.errors import reraise_interrupt
from engine.tokens import TokenCounter

MIN_LINES = 50
MIN_RATIO = 0.05
MAX_RATIO = 1.0
DEFAULT_RATIO = 0.3
DEFAULT_MODEL = "flash"
CACHE_KEY_VERSION = "v1"

# (content, ratio, model) -> compressed text
Compressor = Callable[[str, float, str], str]


class CompressionCache(Protocol):
    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...


class DictCompressionCache:
    """An in-process cache (tests, a single process; the seed's "内存缓存")."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.entries.get(key)

    def set(self, key: str, value: str) -> None:
        self.entries[key] = value


# --------------------------------------------------------------------------- parameters


def validate_ratio(ratio: float) -> float:
    """`ratio` as a float, or ValueError naming compress_ratio when outside 0.05–1.0."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
        # A configuration value: ValueError like any other bad one.
        raise ValueError(f"compress_ratio must be a number between {MIN_RATIO} and {MAX_RATIO}, got {ratio!r}")  # noqa: TRY004
    ratio = float(ratio)
    if not (MIN_RATIO <= ratio <= MAX_RATIO):  # also rejects NaN
        raise ValueError(f"compress_ratio must be between {MIN_RATIO} and {MAX_RATIO}, got {ratio!r}")
    return ratio


def percent(ratio: float) -> int:
    """The ratio as a whole percentage (0.3 -> 30)."""
    return round(ratio * 100)


def count_lines(text: str) -> int:
    return len(text.splitlines())


def cache_key(content: str, ratio: float, model: str) -> str:
    """"compress:v1:<sha256 of content>:<ratio>:<model>", e.g. "compress:v1:9f86…:0.3:flash"."""
    digest = hashlib.sha256(content.encode("utf-8", errors="surrogatepass")).hexdigest()
    return f"compress:{CACHE_KEY_VERSION}:{digest}:{float(ratio)!r}:{model}"


def compression_prompt(content: str, ratio: float) -> str:
    """The prompt asking a model to compress `content` to about `ratio` of its length."""
    share = percent(ratio)
    return (
        f"将以下内容压缩到原长度的 {share}% 左右。"
        "保留关键结论、数据、数字、文件名、代码标识符和待办事项；删除重复、铺垫和冗余描述；"
        "保持原有的结构（标题、列表）。只输出压缩后的内容，不要添加任何解释或前言。\n"
        f"(Compress the following to about {share}% of its length. Keep key conclusions, data, "
        "numbers, names and identifiers; drop repetition and filler; keep the structure. "
        "Output only the compressed text.)\n\n"
        "---\n"
        f"{content}\n"
        "---"
    )


def header(model: str, ratio: float) -> str:
    return f"[依赖任务压缩输出 | 模型: {model}, 压缩比: {percent(ratio)}%]"


# --------------------------------------------------------------------------- one dependency


@dataclass
class Compressed:
    """The outcome for one dependency output."""

    node_id: str
    text: str  # what is passed on: compressed, cached, or the original
    lines_before: int
    lines_after: int
    cache_hit: bool
    skipped_short: bool
    failed: bool
    error: str = ""
    tokens_before: int | None = None
    tokens_after: int | None = None
    cache_error: str = ""  # the cache failed (treated as a miss / a write not made)

    @property
    def compressed(self) -> bool:
        """Freshly compressed by the compressor (not a cache hit, not skipped, not failed)."""
        return not (self.cache_hit or self.skipped_short or self.failed)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def compress_text(
    node_id: str,
    content: str,
    *,
    ratio: float,
    model: str,
    cache: CompressionCache,
    compressor: Compressor,
) -> Compressed:
    """One dependency output, per the seed: cache, then the short-content skip, then the
    compressor (its result cached); a failed compression passes the original."""
    ratio = validate_ratio(ratio)
    lines_before = count_lines(content)
    key = cache_key(content, ratio, model)
    cache_error = ""

    # 1. cache
    try:
        cached = cache.get(key)
    except Exception as error:  # noqa: BLE001 - a cache that fails is a miss
        reraise_interrupt(error)
        cached, cache_error = None, f"get: {_describe(error)}"
    if isinstance(cached, str) and cached:
        return Compressed(node_id, cached, lines_before, count_lines(cached), True, False, False)

    # 2. short content passes unchanged
    if lines_before < MIN_LINES:
        return Compressed(node_id, content, lines_before, lines_before, False, True, False, cache_error=cache_error)

    # 3 + 4. the compressor (which builds the prompt, see llm_compressor)
    def failed(error: str) -> Compressed:
        return Compressed(node_id, content, lines_before, lines_before, False, False, True, error, cache_error=cache_error)

    try:
        text = compressor(content, ratio, model)
    except Exception as error:  # noqa: BLE001 - the backend's failure is recorded, not raised
        reraise_interrupt(error)
        return failed(f"compression failed ({_describe(error)}); passed the original")
    if not isinstance(text, str):
        return failed(f"compressor returned {type(text).__name__}, not text; passed the original")
    if not text.strip():
        return failed("compressor returned no text; passed the original")
    if len(text) > len(content):
        return failed(f"compressor returned a longer text ({len(text)} > {len(content)} characters); passed the original")

    # 5. cache and return
    try:
        cache.set(key, text)
    except Exception as error:  # noqa: BLE001 - a cache that fails keeps nothing
        reraise_interrupt(error)
        cache_error = "; ".join(filter(None, [cache_error, f"set: {_describe(error)}"]))
    return Compressed(node_id, text, lines_before, count_lines(text), False, False, False, cache_error=cache_error)


# --------------------------------------------------------------------------- all dependencies


@dataclass
class CompressionResult:
    sections: list[Compressed] = field(default_factory=list)
    text: str = ""  # the block injected into the node's content ("" for no dependencies)
    model: str = DEFAULT_MODEL  # the node's compress_model, as the header names it
    ratio: float = DEFAULT_RATIO
    model_called: str | None = None  # the model the compressor was asked for; None: no model

    def record(self) -> dict[str, Any]:
        """JSON for the node run."""
        counted = any(s.tokens_before is not None for s in self.sections)
        dependencies = []
        for s in self.sections:
            entry = {"node_id": s.node_id, "lines_before": s.lines_before, "lines_after": s.lines_after}
            if counted:
                entry["tokens_before"] = s.tokens_before
                entry["tokens_after"] = s.tokens_after
            entry.update(
                cache_hit=s.cache_hit,
                skipped_short=s.skipped_short,
                failed=s.failed,
                error=s.error,
                cache_error=s.cache_error,
            )
            dependencies.append(entry)
        totals = {
            "dependencies": len(self.sections),
            "lines_before": sum(s.lines_before for s in self.sections),
            "lines_after": sum(s.lines_after for s in self.sections),
        }
        if counted:
            totals["tokens_before"] = sum(s.tokens_before or 0 for s in self.sections)
            totals["tokens_after"] = sum(s.tokens_after or 0 for s in self.sections)
        totals.update(
            compressed=sum(s.compressed for s in self.sections),
            cache_hits=sum(s.cache_hit for s in self.sections),
            skipped_short=sum(s.skipped_short for s in self.sections),
            failed=sum(s.failed for s in self.sections),
        )
        return {
            "model": self.model,
            "model_called": self.model_called,
            "ratio": self.ratio,
            "ratio_percent": percent(self.ratio),
            "dependencies": dependencies,
            "totals": totals,
        }


def render_block(sections: list[Compressed], *, model: str, ratio: float) -> str:
    """The injected block: "---", the header, one "### node_id" section per dependency, "---"."""
    if not sections:
        return ""
    parts = ["---", header(model, ratio)]
    for section in sections:
        parts.append("")
        parts.append(f"### {section.node_id}")
        parts.append(section.text.rstrip("\n"))
    parts.append("---")
    return "\n".join(parts)


def compress_dependencies(
    outputs: dict[str, str],
    *,
    ratio: float = DEFAULT_RATIO,
    model: str = DEFAULT_MODEL,
    cache: CompressionCache,
    compressor: Compressor,
    counter: TokenCounter | None = None,
    model_called: str | None = None,
) -> CompressionResult:
    """Each dependency output (in the order given) compressed, and the block to inject.
    With a `counter`, tokens before and after are counted too.

    `model` is the node's compress_model (a name such as "flash", which the header shows);
    `model_called` the model it stands for on the backend, which the compressor is given
    and the cache key holds (None: the compressor calls no model, and the key holds `model`)."""
    ratio = validate_ratio(ratio)
    sections = []
    for node_id, content in outputs.items():
        section = compress_text(str(node_id), content, ratio=ratio, model=model_called or model, cache=cache,
                                compressor=compressor)
        if counter is not None:
            section.tokens_before = counter.count(content)
            section.tokens_after = counter.count(section.text)
        sections.append(section)
    return CompressionResult(sections, render_block(sections, model=model, ratio=ratio), model, ratio, model_called)


def with_compressed_context(content: str, result: CompressionResult) -> str:
    """The node's content with the compressed dependency block after it."""
    if not result.text:
        return content
    return f"{content.rstrip()}\n\n{result.text}" if content.strip() else result.text


# --------------------------------------------------------------------------- compressors


def llm_compressor(call: Callable[[str, str], str]) -> Compressor:
    """A compressor from a model call `(prompt, model) -> text`: it sends
    `compression_prompt(content, ratio)` to `model`."""

    def compress(content: str, ratio: float, model: str) -> str:
        return call(compression_prompt(content, ratio), model)

    return compress


# A Markdown heading, as engine.context.summary reads one (on a stripped line).
_HEADING = re.compile(r"#{1,6}[ \t]+\S")


def extractive_compressor(counter: TokenCounter) -> Compressor:
    """The offline builtin backend: about `ratio` of the content's tokens, as whole lines.

    Every non-blank line is handed to `summarize(..., method="extractive")` as one unit
    (a bullet, or a heading as it is), so lines are scored like extractive sentences and
    chosen whole; the chosen lines come back in their original order, each with the heading
    of its section, and with a blank line where the original had one between them.
    Deterministic; `model` is ignored."""

    def compress(content: str, ratio: float, model: str) -> str:
        lines = content.splitlines()
        kept_indexes = [i for i, line in enumerate(lines) if line.strip()]
        if not kept_indexes:
            return content
        units = []  # the text summarize sees, one unit per non-blank line
        headings = set()
        for i in kept_indexes:
            stripped = lines[i].strip()
            if _HEADING.match(stripped):
                units.append(stripped)
                headings.add(i)
            else:
                units.append(f"- {stripped}")
        text = "\n\n".join(units)
        target = max(1, math.ceil(counter.count(text) * ratio))
        summary = summarize(text, target_tokens=target, counter=counter, method="extractive").content
        if not isinstance(summary, str):
            summary = str(summary)

        # Map the summary's lines back to the original lines, in order.
        # A piece is a whole unit, or (a summary cut to fit) the beginning of one, passed
        # as that beginning of its line.
        chosen: dict[int, str] = {}
        cursor = 0
        for piece in summary.split("\n"):
            if not piece:
                continue
            found = next((j for j in range(cursor, len(units)) if units[j] == piece), None)
            if found is not None:
                chosen[kept_indexes[found]] = lines[kept_indexes[found]].rstrip()
            elif len(piece) >= 8:
                found = next((j for j in range(cursor, len(units)) if units[j].startswith(piece)), None)
                if found is not None:
                    line = lines[kept_indexes[found]]
                    added = len(units[found]) - len(line.strip())  # the "- " put before it
                    chosen[kept_indexes[found]] = line[: len(line) - len(line.lstrip())] + piece[added:]
            if found is not None:
                cursor = found + 1
        if not chosen:  # nothing fitted: the first line
            return lines[kept_indexes[0]].rstrip()
        # Headings kept: each chosen line brings the heading of its section.
        section = None
        for i in range(len(lines)):
            if i in headings:
                section = i
            elif i in chosen and section is not None and section not in chosen:
                chosen[section] = lines[section].rstrip()

        out: list[str] = []
        previous = None
        for i in sorted(chosen):
            if previous is not None and any(not lines[k].strip() for k in range(previous + 1, i)):
                out.append("")
            out.append(chosen[i])
            previous = i
        return "\n".join(out)

    return compress
