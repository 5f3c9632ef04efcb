"""Summary transfer (data-transfer-protocol §4.2): data cut down to a token budget.

`summarize(data, target_tokens=…, counter=…)` passes text, lists of dicts (atoms) or any
other value in at most `target_tokens` tokens, always counted exactly on the text the
result is passed as (`content.render`). Strategies (§4.2):

* `extractive`  — the best-scoring sentences, in their original order;
* `abstractive` — a generated summary from a caller-supplied callable (an LLM backend);
* `key_points`  — the first sentence of each paragraph and the bullet lines, as bullets;
* `truncate`    — a token-exact prefix.

Table data (§5.3, "保留表头+统计信息") is summarised as a table whatever the strategy: its
header, the first rows that fit (each whole, on its own line) and its statistics (row
count; min, max and mean of each numeric column), recorded as the strategy `table`.

Token counts are the expensive part: the input's own count is assumed to be cached in the
`TokenCounter` already, so nothing here encodes the whole input again. Sizes of pieces are
estimated from the bytes they take, at the input's known tokens-per-byte, and only what is
chosen is counted (and trimmed if it turned out over). Very large texts are summarised from
an evenly spread sample of paragraphs rather than sentence by sentence over the whole text.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain, pairwise, repeat
from typing import Any

from engine.context.content import FALLBACK_PRIORITY, element_priority, render
from engine.errors import reraise_interrupt
from engine.tokens import TokenCounter

METHODS = ("extractive", "abstractive", "key_points", "truncate")

# Strings up to this many characters count as short scalars: kept verbatim by default.
SHORT_STRING = 40
# Choose content for this share of a budget by estimate; the exact count decides the rest.
_MARGIN = 0.92
# A summarised field gets at least this many tokens (or its whole size) or its element is dropped.
_MIN_FIELD_TOKENS = 32
# Texts longer than this many tokens' worth (or _POOL_FACTOR × the budget) are summarised
# from an evenly spread sample of that size: going over every sentence of a huge text in
# Python would cost more than encoding it.
_POOL_TOKENS = 4_000
_POOL_FACTOR = 1.5
_POOL_CHUNKS = 24
# Default characters per token for a prefix window when nothing better is known (§ truncate_text).
_WINDOW_CHARS_PER_TOKEN = 6
_PROBE_CHARS = 1000


@dataclass(frozen=True)
class Summary:
    content: Any  # str or JSON-able structure
    tokens: int  # counter.count(render(content)), exact
    method: str  # the summary method actually used (recorded under the key `strategy`)
    note: str = ""  # why it differs from the one asked for, or what was dropped; "" otherwise


# --------------------------------------------------------------------------- truncation


def truncate_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest prefix of `text` (within a token or two) of at most `max_tokens` tokens.

    Encodes only a prefix window of the text, never a whole huge text, and never cuts a
    UTF-8 character in two."""
    return _truncate(text, max_tokens, counter)


def _truncate(text: str, max_tokens: int, counter: TokenCounter, chars_per_token: float | None = None) -> str:
    """`chars_per_token`, when known, sizes the prefix window; otherwise the density of
    the text's beginning does (a probe of at most _PROBE_CHARS characters)."""
    if max_tokens <= 0 or not text:
        return ""
    encoding = counter.encoding
    window = max_tokens * _WINDOW_CHARS_PER_TOKEN + 64
    if not chars_per_token and len(text) > window:
        # A fixed 6 characters a token is far too much for CJK text (about one) and too
        # little for text of long words: measure the density on the text's beginning.
        probe = text[: min(_PROBE_CHARS, window // 4)]
        chars_per_token = len(probe) / max(1, len(encoding.encode(probe, disallowed_special=())))
    if chars_per_token:
        window = int(max_tokens * chars_per_token * 1.08) + 64
    if window >= len(text):
        if counter.count(text) <= max_tokens:
            return text
        tokens = encoding.encode(text, disallowed_special=())
    else:
        tokens = encoding.encode(text[:window], disallowed_special=())
        # Too short a window grows by encoding only what follows it, from a character
        # boundary a few tokens back (the text's tokens at the window's edge may differ).
        # Two tokens to spare for the same reason.
        while len(tokens) < max_tokens + 2 and window < len(text):
            kept, start = _valid_prefix(encoding, tokens, max(0, len(tokens) - 8))
            chars_each = window / max(1, len(tokens))
            window = max(window + 64, start + int((max_tokens + 2 - kept) * chars_each * 1.25) + 64)
            tokens = tokens[:kept] + encoding.encode(text[start:window], disallowed_special=())
        if window >= len(text) and len(tokens) <= max_tokens:
            if counter.count(text) <= max_tokens:
                return text
            tokens = encoding.encode(text, disallowed_special=())
    keep = max_tokens
    while keep > 0:
        piece = encoding.decode_bytes(tokens[:keep]).decode("utf-8", errors="ignore")
        result = text[: len(piece)]
        counted = counter.count(result)
        if counted <= max_tokens:
            return result
        keep -= max(1, counted - max_tokens)
    return ""


def _valid_prefix(encoding: Any, tokens: list[int], count: int) -> tuple[int, int]:
    """(n, chars): the most tokens, at most `count`, that decode to whole characters, and
    how many characters they decode to."""
    while count > 0:
        try:
            return count, len(encoding.decode_bytes(tokens[:count]).decode("utf-8"))
        except UnicodeDecodeError:
            count -= 1
    return 0, 0


# --------------------------------------------------------------------------- text segmentation

_SENTENCE = 0
_BULLET = 1
_HEADING = 2

_HEADING_RE = re.compile(r"[ \t]{0,3}#{1,6}[ \t]+\S")
_BULLET_RE = re.compile(r"[ \t]*(?:[-*+•·▪‣][ \t]+|\d{1,3}[.)][ \t]+|\d{1,3}、[ \t]*|[(（]\d{1,3}[)）][ \t]*)(?=\S)")
# A sentence: anything up to Western end punctuation followed by space and a start that is
# not lower case (so "e.g. this" and "3.5" stay whole), or up to CJK end punctuation,
# which needs no space after it. Matched with one findall per paragraph.
_SENTENCE_RE = re.compile(
    r"""\s*((?:[^.!?…。！？]+|[.!?…]+(?!["'”’)\]]*(?:\s+[^\sa-z]|\s*$)))*"""
    r"""(?:[.!?…]+["'”’)\]]*|[。！？]+["”’）」』]*)?)"""
)
# Where a sentence ends, for cutting a long text at one.
_END_RE = re.compile(r"""[.!?…]+["'”’)\]]*\s+(?=[^\sa-z])|[。！？]+["”’）」』]*""")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_WORD_RE = re.compile(f"[{_CJK}]|[^\\W\\d_{_CJK}]{{2,}}")
_ASCII_WORD_RE = re.compile(r"[a-z]{2,}")
# A line ending like this ends its paragraph even without a blank line after it (CJK texts
# seldom leave blank lines between paragraphs).
_CJK_PARAGRAPH_END = re.compile(r"[。！？][」』”）]*$")
_DIGIT_RE = re.compile(r"\d")
_STOP = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto over under
    about above below between through during before after again further once here there when
    where why how all any both each few more most other some such no nor not only own same so
    than too very can will just should now is are was were be been being have has had having
    do does did doing would could might must shall may this that these those it its they them
    their theirs he him his she her hers we us our ours you your yours me my mine who whom which
    what as also while whose via per et al ie eg
    的 了 是 在 和 与 及 或 也 都 就 而 且 但 并 被 把 对 从 向 为 以 于 之 其 这 那 个 们 我 你 他
    她 它 有 无 不 一 上 下 中 等 将 已 由 所 该 此 到 说 要 会 能 可 很 更 最 又 还 即""".split()
)


def _is_cjk(char: str) -> bool:
    return bool(_CJK_CHAR.match(char))


def _byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", errors="surrogatepass"))


def _join_lines(lines: list[str]) -> str:
    if len(lines) == 1:
        return lines[0]
    parts = [lines[0]]
    for previous, line in pairwise(lines):
        parts.append("" if _is_cjk(previous[-1]) and _is_cjk(line[0]) else " ")
        parts.append(line)
    return "".join(parts)


def _sentences(paragraph: str) -> list[str]:
    return [sentence for sentence in _SENTENCE_RE.findall(paragraph) if sentence]


class _Doc:
    """A text as units — headings, bullet lines and sentences — each with its paragraph
    (units of one paragraph are joined by spaces), whether it opens its paragraph, and the
    heading of its section (-1 for none). With `firsts_only`, only the first sentence of
    each paragraph is taken (what key points need, at a fraction of the cost)."""

    def __init__(self, chunks: list[str], firsts_only: bool = False):
        self.texts: list[str] = []
        self.kinds: list[int] = []
        self.paras: list[int] = []
        self.firsts: list[bool] = []
        self.sections: list[int] = []
        para = 0
        for chunk in chunks:
            para = self._read(chunk, para, firsts_only) + 1

    def _read(self, text: str, para: int, firsts_only: bool) -> int:
        texts, kinds, paras, firsts, sections = self.texts, self.kinds, self.paras, self.firsts, self.sections
        buffer: list[str] = []
        section = -1
        in_list = False

        def flush(para: int) -> int:
            paragraph = _join_lines(buffer)
            buffer.clear()
            if firsts_only:
                match = _SENTENCE_RE.match(paragraph)
                found = [match.group(1)] if match and match.group(1) else []
            else:
                found = _sentences(paragraph)
            first = True
            for sentence in found:
                texts.append(sentence)
                kinds.append(_SENTENCE)
                paras.append(para)
                firsts.append(first)
                sections.append(section)
                first = False
            return para + 1

        for line in text.splitlines():
            stripped = line.strip()
            if not stripped:
                if buffer:
                    para = flush(para)
                if in_list:
                    para += 1
                    in_list = False
                continue
            heading = stripped[0] == "#" and _HEADING_RE.match(line) is not None
            if heading or (stripped[0] in "-*+•·▪‣(（" or stripped[0].isdigit()) and _BULLET_RE.match(line):
                if buffer:
                    para = flush(para)
                if heading:
                    if in_list:
                        para += 1
                        in_list = False
                    section = len(texts)
                texts.append(stripped)
                kinds.append(_HEADING if heading else _BULLET)
                paras.append(para)
                firsts.append(heading or not in_list)
                sections.append(section)
                if heading:
                    para += 1
                else:
                    in_list = True
                continue
            if in_list:
                para += 1
                in_list = False
            buffer.append(stripped)
            if stripped[-1] in "。！？」』”）" and _CJK_PARAGRAPH_END.search(stripped):
                para = flush(para)
        if buffer:
            para = flush(para)
        return para + 1 if in_list else para

    def scores(self, units: list[int]) -> list[float]:
        """Word-frequency scores of `units`: content words the text uses often, more for
        opening sentences and for numbers."""
        texts, firsts = self.texts, self.firsts
        words_of = []
        every_word: list[str] = []
        for i in units:
            text = texts[i].lower()
            words = (_ASCII_WORD_RE if text.isascii() else _WORD_RE).findall(text)
            words_of.append(words)
            every_word += words
        frequency = dict(Counter(every_word))
        for word in _STOP.intersection(frequency):
            del frequency[word]
        top = max(frequency.values(), default=1)
        scores = []
        get = frequency.get
        for i, words in zip(units, words_of, strict=True):
            score = sum(map(get, set(words), repeat(0))) / top / math.sqrt(len(words)) if words else 0.0
            if firsts[i]:
                score = score * 1.3 + 0.05
            if _DIGIT_RE.search(texts[i]):
                score *= 1.1
            scores.append(score)
        if scores:
            scores[0] = scores[0] * 1.5 + 0.1  # the text's opening
        return scores

    def join(self, chosen: list[int], texts: dict[int, str] | None = None) -> str:
        """The chosen units in their order: sentences of a paragraph joined by spaces
        (none between CJK), paragraphs by blank lines, bullets and key points by newlines."""
        parts: list[str] = []
        previous = -1
        for i in sorted(chosen):
            text = texts[i] if texts is not None else self.texts[i]
            if previous >= 0:
                if texts is not None:
                    parts.append("\n")
                elif self.paras[i] != self.paras[previous]:
                    parts.append("\n\n")
                elif self.kinds[i] == _BULLET or self.kinds[previous] == _BULLET:
                    parts.append("\n")
                elif _is_cjk(parts[-1][-1]) or _is_cjk(text[0]) or parts[-1][-1] in "。！？":
                    parts.append("")
                else:
                    parts.append(" ")
            parts.append(text)
            previous = i
        return "".join(parts)


def _sample_chunks(text: str, pool_chars: int) -> list[str]:
    """Evenly spread pieces of a long text, `pool_chars` in all, each cut at a line break
    (or, failing one nearby, at a sentence end); the first starts at the beginning."""
    if len(text) <= pool_chars:
        return [text]
    count = _POOL_CHUNKS
    size = pool_chars // count
    step = len(text) / count

    def align(position: int) -> int:
        if position <= 0 or position >= len(text):
            return max(0, min(position, len(text)))
        newline = text.find("\n", position, position + 2000)
        if newline >= 0:
            return newline + 1
        match = _END_RE.search(text, position, position + 2000)
        return match.end() if match else position

    chunks = []
    end = 0
    for j in range(count):
        start = max(align(int(j * step)), end)
        end = align(start + size)
        if end > start:
            chunks.append(text[start:end])
    return chunks


# --------------------------------------------------------------------------- text strategies


class _Summarizer:
    """The text strategies, bound to a counter and an optional abstractive backend. Each
    returns (text, method used, note), the text counted within the budget."""

    def __init__(self, counter: TokenCounter, abstractive: Callable[[str, int], str] | None):
        self.counter = counter
        self.abstractive = abstractive

    def text(
        self, text: str, budget: int, method: str, *, per_byte: float | None = None, always: bool = False
    ) -> tuple[str, str, str]:
        """`per_byte` is the text's tokens per byte when known (else the text is counted:
        its count is assumed cached). `always` summarises even a text that fits."""
        if budget <= 0 or not text:
            return "", method, ""
        size = _byte_len(text)
        total: int | None
        if per_byte is None:
            total = self.counter.count(text)
            per_byte = total / max(1, size)
        else:
            # Count only a text that may fit: never encode a long one whole.
            total = self.counter.count(text) if size * per_byte <= budget * 1.5 else None
        chars_per_token = len(text) / max(1e-9, size * per_byte)
        fits = total is not None and total <= budget
        if fits and method != "key_points" and not always:
            return text, method, ""
        if method == "truncate":
            return _truncate(text, budget, self.counter, chars_per_token), "truncate", ""
        if method == "abstractive":
            return self._abstractive(text, budget, per_byte)
        chosen = self._choose(text, budget, per_byte, chars_per_token, key_points=method == "key_points")
        if chosen is not None:
            return chosen, method, ""
        if fits:
            return text, "truncate", f"{method} summary did not fit in {budget} tokens; passed the text whole"
        return (
            _truncate(text, budget, self.counter, chars_per_token),
            "truncate",
            f"{method} summary did not fit in {budget} tokens; truncated",
        )

    def _abstractive(self, text: str, budget: int, per_byte: float) -> tuple[str, str, str]:
        if self.abstractive is None:
            note = "no LLM backend for abstractive summaries; used extractive"
        else:
            try:
                generated = self.abstractive(text, budget)
            except Exception as error:  # the backend's failure is reported, not raised
                reraise_interrupt(error)
                note = f"abstractive summary failed ({type(error).__name__}: {error}); used extractive"
            else:
                generated = generated if isinstance(generated, str) else render(generated)
                counted = self.counter.count(generated)
                if counted <= budget:
                    return generated, "abstractive", ""
                return (
                    _truncate(generated, budget, self.counter),
                    "abstractive",
                    f"abstractive summary had {counted} tokens, over {budget}; truncated",
                )
        summary, used, more = self.text(text, budget, "extractive", per_byte=per_byte, always=True)
        return summary, used, f"{note}; {more}" if more else note

    @staticmethod
    def _candidates(doc: _Doc, key_points: bool) -> tuple[list[int], list[str], dict[int, str] | None]:
        """The units to choose from, their texts as passed, and those texts by unit for
        key points (None for sentences, passed as they are)."""
        kinds = doc.kinds
        if not key_points:
            units = [i for i, kind in enumerate(kinds) if kind != _HEADING] or list(range(len(kinds)))
            return units, [doc.texts[i] for i in units], None
        units = [i for i, kind in enumerate(kinds) if kind == _BULLET or (kind == _SENTENCE and doc.firsts[i])]
        units = units or list(range(len(kinds)))
        points = {}
        for i in units:
            point = doc.texts[i]
            if kinds[i] == _BULLET:
                point = _BULLET_RE.sub("", point, count=1).strip() or point
            elif kinds[i] == _HEADING:
                point = point.lstrip("#").strip() or point
            points[i] = "- " + point
        return units, [points[i] for i in units], points

    def _choose(
        self, text: str, budget: int, per_byte: float, chars_per_token: float, *, key_points: bool
    ) -> str | None:
        """Extractive: the best-scoring sentences and bullets (with their section headings
        when there is room). Key points: the first sentence of each paragraph and the
        bullets, as "- " lines, the best-scoring ones when not all fit. Chosen by sizes
        estimated from bytes, then counted once and trimmed if over; None when nothing fits.
        A long text is read from an evenly spread sample of _POOL_FACTOR × the budget
        (for key points, enough paragraphs for that many tokens of first sentences)."""
        wanted = _POOL_FACTOR * budget  # tokens of candidates to choose from
        pool = int(max(_POOL_TOKENS, wanted) * chars_per_token)
        doc = _Doc(_sample_chunks(text, pool), firsts_only=key_points)
        units, unit_texts, points = self._candidates(doc, key_points)
        if key_points and pool < len(text):
            # Key points are one sentence a paragraph: sample more paragraphs if too few.
            found = sum(map(len, unit_texts)) / max(1e-9, chars_per_token)
            if found < wanted:
                pool = int(pool * min(8.0, wanted / max(found, 1.0) * 1.1))
                doc = _Doc(_sample_chunks(text, pool), firsts_only=True)
                units, unit_texts, points = self._candidates(doc, True)
        if not units:
            return None
        costs = [_byte_len(t) * per_byte + 1 for t in unit_texts]
        room = budget * _MARGIN
        smallest = min(costs)
        if smallest > room:
            return None
        scores = doc.scores(units)
        ranked = sorted(range(len(units)), key=scores.__getitem__, reverse=True)
        picked: list[int] = []  # positions in `units`, best first
        seen: set[str] = set()  # a sentence said twice is passed once

        def pick(room: float) -> float:
            for j in ranked:
                if costs[j] <= room and unit_texts[j] not in seen:
                    picked.append(j)
                    seen.add(unit_texts[j])
                    room -= costs[j]
                    if room < smallest:
                        break
            return room

        room = pick(room)
        headings: list[int] = []
        if not key_points:
            for section in sorted({doc.sections[units[j]] for j in picked} - {-1}):
                heading_cost = _byte_len(doc.texts[section]) * per_byte + 1
                if heading_cost <= room:
                    headings.append(section)
                    room -= heading_cost
        fitting: str | None = None
        while picked:
            result = doc.join([units[j] for j in picked] + headings, points)
            counted = self.counter.count(result)
            if counted <= budget:
                if fitting is not None or counted >= 0.8 * budget:
                    return result
                # Well under (the estimates were high): one more pick, in the room counted.
                fitting, before = result, len(picked)
                pick((budget - counted) * _MARGIN)
                if len(picked) == before:
                    return result
                continue
            if fitting is not None:
                return fitting
            excess = (counted - budget) * 1.2 + 1
            while picked and excess > 0:
                excess -= costs[picked.pop()]
            sections = {doc.sections[units[j]] for j in picked}
            headings = [h for h in headings if h in sections]
        return None


# --------------------------------------------------------------------------- structured data


def _is_short_scalar(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float)):
        return True
    return isinstance(value, str) and len(value) <= SHORT_STRING


def _is_list_of_dicts(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(e, dict) for e in value)


def _is_list_of_scalars(value: Any) -> bool:
    return isinstance(value, list) and not any(isinstance(e, (dict, list, tuple)) for e in value)


def _waterfill(sizes: list[float], total: float) -> float:
    """The level L with sum(min(size, L)) == total (the largest size if all fit)."""
    if not sizes:
        return 0.0
    if sum(sizes) <= total:
        return max(sizes)
    remaining = total
    ordered = sorted(sizes)
    for position, size in enumerate(ordered):
        share = remaining / (len(ordered) - position)
        if size <= share:
            remaining -= size
        else:
            return share
    return ordered[-1]


class _Notes:
    def __init__(self) -> None:
        self._seen: Counter[Any] = Counter()

    def add(self, note: str) -> None:
        if note:
            self._seen[note] += 1

    def __str__(self) -> str:
        return "; ".join(note if n == 1 else f"{note} (×{n})" for note, n in self._seen.items())


def _summarize_structure(
    data: Any,
    target: int,
    summarizer: _Summarizer,
    method: str,
    preserve_fields: list[str] | None,
    summarize_fields: list[str] | None,
    name: str,
) -> tuple[Any, str, str] | None:
    """The §4.2 shape for a list of dicts or a dict holding lists of dicts, or None when
    even its frame does not fit.

    Elements are taken in keep order (priority 1 first, earlier before later) while their
    preserved fields and a minimum of _MIN_FIELD_TOKENS per summarised field fit; the room
    left is shared evenly among the summarised fields (water-filling: a short text is
    passed whole and leaves its share to the others). Only elements considered are looked
    at field by field, so a huge list costs little more than sorting it by priority;
    `omitted_fields` names the fields left out of the elements passed (and the top-level
    values left out)."""
    counter = summarizer.counter
    preserve = frozenset(preserve_fields) if preserve_fields is not None else None
    summarise = frozenset(summarize_fields) if summarize_fields is not None else None
    omitted: set[str] = set()

    # The frame: top-level entries in order, as ("list", K, elements) / ("keep", key, value)
    # / ("text", key, value).
    frame: list[tuple[str, str, Any]] = []
    if isinstance(data, list):
        frame.append(("list", name, data))
    else:
        for key, value in data.items():
            key = str(key)
            if isinstance(value, list) and all(isinstance(e, dict) for e in value):
                frame.append(("list", key, value))
            elif _is_short_scalar(value):
                frame.append(("keep", key, value))
            elif isinstance(value, str):
                frame.append(("text", key, value))
            else:
                omitted.add(key)
    lists = {position: value for position, (kind, _, value) in enumerate(frame) if kind == "list"}

    # Keep order: most important first, earlier before later; elements are dropped from the end.
    order: list[tuple[int, int, int]] = []
    for position, elements in lists.items():
        for index, element in enumerate(elements):
            priority = element_priority(element)
            order.append((FALLBACK_PRIORITY if priority is None else priority, position, index))
    order.sort()

    plans: dict[tuple[int, int], list[tuple[bool, str, Any]]] = {}

    def plan_of(position: int, index: int) -> list[tuple[bool, str, Any]]:
        """(summarised?, field, value) for each field passed, in the element's order."""
        plan = plans.get((position, index))
        if plan is None:
            plan = plans[(position, index)] = []
            for field, value in lists[position][index].items():
                field = str(field)
                if preserve is not None and field in preserve:
                    plan.append((False, field, value))
                elif summarise is not None and field in summarise:
                    plan.append((True, field, value if isinstance(value, str) else render(value)))
                elif preserve is None and _is_short_scalar(value):
                    plan.append((False, field, value))
                elif summarise is None and isinstance(value, str) and len(value) > SHORT_STRING:
                    plan.append((True, field, value))
                else:
                    omitted.add(field)
        return plan

    # Tokens per byte of the texts to summarise, from a sample of them.
    sample_limit = min(8000, max(2000, 16 * target))
    sample, taken = [], 0
    texts: Iterator[Any] = (v for kind, _, v in frame if kind == "text")
    texts = chain(texts, (v for _, p, i in order for summarised, _, v in plan_of(p, i) if summarised))
    for text in texts:
        sample.append(text[: sample_limit - taken])
        taken += len(sample[-1])
        if taken >= sample_limit:
            break
    sample_text = "\n".join(sample)
    per_byte = counter.count(sample_text) / _byte_len(sample_text) if sample_text else 0.3

    def estimate(text: str) -> float:
        return _byte_len(text) * per_byte + 1

    def build(included: dict[tuple[int, int], dict[str, Any]], top_texts: dict[str, str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for position, (kind, key, value) in enumerate(frame):
            if kind == "list":
                chosen = [included[k] for k in sorted(k for k in included if k[0] == position)]
                out[f"{key}_summary"] = chosen
                out[f"total_{key}"] = len(value)
                out[f"summarized_{key}"] = len(chosen)
            elif kind == "keep":
                out[key] = value
            else:
                out[f"{key}_summary"] = top_texts.get(key, "")
        out["omitted_fields"] = sorted(omitted)
        return out

    room = target * 0.95 - counter.count(render(build({}, {})))
    top_sizes = [estimate(v) for kind, _, v in frame if kind == "text"]
    room -= sum(min(size, _MIN_FIELD_TOKENS) for size in top_sizes)

    # Elements in keep order while their preserved fields and a minimum per summary fit.
    included_keys: list[tuple[int, int]] = []
    field_sizes: list[float] = []
    for _, position, index in order:
        plan = plan_of(position, index)
        sizes = [estimate(v) for summarised, _, v in plan if summarised]
        skeleton = {(f"{f}_summary" if summarised else f): ("" if summarised else v) for summarised, f, v in plan}
        need = counter.count(render(skeleton)) + 1 + sum(min(s, _MIN_FIELD_TOKENS) for s in sizes)
        if need > room:
            break
        room -= need
        included_keys.append((position, index))
        field_sizes += sizes
    room += sum(min(s, _MIN_FIELD_TOKENS) for s in chain(field_sizes, top_sizes))
    budget = max(1, int(_waterfill(field_sizes + top_sizes, max(0.0, room))))

    notes = _Notes()
    used: Counter[Any] = Counter()

    def summarised_text(text: str) -> str:
        summary, method_used, note = summarizer.text(text, budget, method, per_byte=per_byte)
        notes.add(note)
        used[method_used] += 1
        return summary

    top_texts = {key: summarised_text(v) for kind, key, v in frame if kind == "text"}
    included: dict[tuple[int, int], dict[str, Any]] = {}
    for key in included_keys:
        included[key] = {
            (f"{f}_summary" if summarised else f): (summarised_text(v) if summarised else v)
            for summarised, f, v in plans[key]
        }

    # Still over (the estimates were off): drop elements from the end of the keep order.
    costs: dict[tuple[int, int], int] = {}
    while True:
        out = build(included, top_texts)
        counted = counter.count(render(out))
        if counted <= target:
            break
        if not included_keys:
            return None
        if not costs:
            costs = {key: counter.count(render(included[key])) + 1 for key in included_keys}
        excess = counted - target
        while included_keys and excess > 0:
            key = included_keys.pop()
            excess -= costs[key]
            del included[key]

    dropped = []
    for position, elements in lists.items():
        passed = out[f"summarized_{frame[position][1]}"]
        if passed < len(elements):
            dropped.append(f"{len(elements) - passed} of {len(elements)} {frame[position][1]}")
    if dropped:
        notes.add(f"dropped {', '.join(dropped)} to fit {target} tokens")
    # The method asked for if any summary used it, else the one most of them fell back to.
    method_used = method if not used or method in used else used.most_common(1)[0][0]
    return out, method_used, str(notes)


def _summarize_scalars(items: list[Any], target: int, counter: TokenCounter, name: str) -> tuple[dict[str, Any], str] | None:
    """The first items that fit, with the count of all; None when not even none fit."""
    sample = render(items[:50])
    per_char = counter.count(sample) / max(1, len(sample))

    def build(keep: int) -> dict[str, Any]:
        return {f"{name}_summary": items[:keep], f"total_{name}": len(items), f"summarized_{name}": keep}

    room = target * _MARGIN - counter.count(render(build(0)))
    keep = 0
    for item in items:
        cost = len(render(item)) * per_char + 1
        if cost > room:
            break
        room -= cost
        keep += 1
    while True:
        out = build(keep)
        counted = counter.count(render(out))
        if counted <= target:
            return out, f"kept the first {keep} of {len(items)} {name}" if keep < len(items) else ""
        if keep == 0:
            return None
        excess: float = counted - target
        while keep > 0 and excess > 0:
            keep -= 1
            excess -= len(render(items[keep])) * per_char + 1


# --------------------------------------------------------------------------- tables

# A Markdown separator row: | --- | :---: |
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_DELIMITERS = ("|", "\t", ",")


def _table_cells(line: str, delimiter: str) -> list[str]:
    if delimiter == "|":
        line = line.strip().strip("|")
    return [cell.strip() for cell in line.split(delimiter)]


def _number(text: Any) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text) if math.isfinite(text) else None
    try:
        value = float(str(text).replace(",", "")) if isinstance(text, str) and text.strip() else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _column_statistics(columns: list[str], rows: list[list[Any]]) -> dict[str, dict[str, Any]]:
    """min, max and mean of each column whose every filled cell is a number."""
    statistics = {}
    for index, column in enumerate(columns):
        cells = [row[index] for row in rows if index < len(row) and row[index] not in ("", None)]
        numbers = [number for cell in cells if (number := _number(cell)) is not None]
        if cells and len(numbers) == len(cells):
            statistics[column] = {"min": min(numbers), "max": max(numbers),
                                  "mean": round(sum(numbers) / len(numbers), 4)}
    return statistics


def _text_table(text: str) -> tuple[list[str], list[str], list[str], str] | None:
    """(header lines, column names, row lines, delimiter) of a Markdown, TSV or CSV table."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    for delimiter in _DELIMITERS:
        columns = _table_cells(lines[0], delimiter)
        if len(columns) < 2:
            continue
        header = lines[:2] if delimiter == "|" and _TABLE_RULE.match(lines[1]) else lines[:1]
        rows = lines[len(header):]
        if rows and all(len(_table_cells(row, delimiter)) == len(columns) for row in rows):
            return header, columns, rows, delimiter
    return None


def _summarize_table(data: Any, target: int, counter: TokenCounter) -> tuple[Any, str] | None:
    """§5.3, table data: the header, the first rows that fit, and the statistics (row count,
    and min / max / mean of each numeric column) — each row still on its own line or as
    its own object. None when `data` is not a table, or not even its header fits."""
    if isinstance(data, str):
        parsed = _text_table(data)
        if parsed is None:
            return None
        header, columns, rows, delimiter = parsed
        statistics = _column_statistics(columns, [_table_cells(row, delimiter) for row in rows])

        def build(keep: int) -> str | dict[str, Any]:  # the same signature in each branch
            lines = [*header, *rows[:keep], "", f"rows: {len(rows)} ({keep} shown)"]
            lines += [f"{name}: min {s['min']:g}, max {s['max']:g}, mean {s['mean']:g}" for name, s in statistics.items()]
            return "\n".join(lines)
    elif _is_list_of_dicts(data) and data:
        columns = list(dict.fromkeys(key for row in data for key in row))
        rows = data
        statistics = _column_statistics(columns, [[row.get(name) for name in columns] for row in rows])

        def build(keep: int) -> str | dict[str, Any]:
            return {"columns": columns, "rows": rows[:keep], "total_rows": len(rows), "shown_rows": keep,
                    "statistics": statistics}
    else:
        return None

    def fits(keep: int) -> bool:
        return counter.count(render(build(keep))) <= target

    if not fits(0):
        return None
    low, high = 0, len(rows)  # the most rows that fit, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return build(low), f"table: kept the header, {low} of {len(rows)} rows and the column statistics (§5.3)"


# --------------------------------------------------------------------------- entry point


def summarize(
    data: Any,
    *,
    target_tokens: int,
    counter: TokenCounter,
    method: str = "extractive",
    preserve_fields: list[str] | None = None,
    summarize_fields: list[str] | None = None,
    abstractive: Callable[[str, int], str] | None = None,
    name: str = "items",
    data_type: str = "",
) -> Summary:
    """`data` in at most `target_tokens` tokens (data-transfer-protocol §4.2).

    Text is summarised with `method`; a list of dicts (or a dict holding lists of dicts)
    becomes `{K}_summary` / `total_{K}` / `summarized_{K}` / `omitted_fields`, with
    `preserve_fields` kept verbatim and `summarize_fields` summarised per element; a list
    of scalars keeps the first items that fit; anything else is summarised as its text.
    Whatever cannot get under the target is truncated, and `note` says so. A `table`
    (data_type) keeps its header, whole rows and its statistics (strategy "table", §5.3)."""
    if method not in METHODS:
        raise ValueError(f"unknown summary strategy {method!r} (known: {', '.join(METHODS)})")
    if target_tokens < 0:
        raise ValueError("target_tokens must not be negative")
    if target_tokens == 0:
        return Summary("", 0, method, "target of 0 tokens; nothing passed")
    if data_type == "table":
        table = _summarize_table(data, target_tokens, counter)
        if table is not None:
            return Summary(table[0], counter.count(render(table[0])), "table", table[1])
    summarizer = _Summarizer(counter, abstractive)
    content: Any = None
    used, note = method, ""
    done = False
    if isinstance(data, str):
        content, used, note = summarizer.text(data, target_tokens, method)
        done = True
    elif _is_list_of_dicts(data) or (isinstance(data, dict) and any(_is_list_of_dicts(v) for v in data.values())):
        shaped = _summarize_structure(
            data, target_tokens, summarizer, method, preserve_fields, summarize_fields, name
        )
        if shaped is not None:
            content, used, note = shaped
            done = True
    elif _is_list_of_scalars(data):
        rendered = render(data)
        if len(rendered) <= target_tokens * 8 and counter.count(rendered) <= target_tokens:
            content, done = data, True
        else:
            kept = _summarize_scalars(data, target_tokens, counter, name)
            if kept is not None:
                (content, note), done = kept, True
    else:
        rendered = render(data)
        if counter.count(rendered) <= target_tokens:
            content, done = data, True
        else:
            content, used, note = summarizer.text(rendered, target_tokens, method)
            done = True
    if done:
        tokens = counter.count(render(content))
        if tokens <= target_tokens:
            return Summary(content, tokens, used, note)
    # Nothing else got under the target: a prefix of the text the data is passed as.
    rendered = render(data)
    content = _truncate(rendered, target_tokens, counter)
    fallback = f"{method} summary did not fit in {target_tokens} tokens; truncated the rendered data"
    return Summary(content, counter.count(content), "truncate", f"{note}; {fallback}" if note else fallback)
