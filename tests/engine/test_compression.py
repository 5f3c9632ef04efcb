"""Compression of dependency outputs (parallel-agent-compression): engine/compression.py."""
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.compression import (
    MIN_LINES,
    CompressionResult,
    DictCompressionCache,
    cache_key,
    compress_dependencies,
    compress_text,
    compression_prompt,
    extractive_compressor,
    llm_compressor,
    with_compressed_context,
)
from engine.tokens import TokenCounter

COUNTER = TokenCounter()
WORDS = [
    "cache", "redis", "worker", "latency", "throughput", "queue", "retry", "backoff", "token", "budget",
    "summary", "model", "compression", "ratio", "error", "timeout", "node", "graph", "dependency", "output",
    "shard", "index", "replica",
]


def long_text(lines=200, seed=1, tag=""):
    """A Markdown-ish report: headings, sentences and bullets, `lines` lines in all."""
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        if i % 25 == 0:
            out.append(f"## Section {i // 25} {tag}".rstrip())
        elif i % 9 == 0:
            out.append("")
        elif i % 5 == 0:
            out.append(f"- item {i}: " + " ".join(rng.choice(WORDS) for _ in range(8)))
        else:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))
            out.append(f"{words.capitalize()} measured {i} ms {tag}.")
    return "\n".join(out)


class Spy:
    """A compressor that keeps every third line and records its calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, content, ratio, model):
        self.calls.append((content, ratio, model))
        return "\n".join(content.splitlines()[::3])


# --------------------------------------------------------------------------- the block


def test_it_injects_the_outputs_under_the_seeds_header_one_section_per_dependency_in_order():
    outputs = {"task_b": long_text(seed=2), "task_a": long_text(seed=1), "task_c": "short\noutput"}
    spy = Spy()

    result = compress_dependencies(outputs, ratio=0.3, model="flash", cache=DictCompressionCache(), compressor=spy)

    lines = result.text.split("\n")
    assert lines[0] == "---"
    assert lines[1] == "[依赖任务压缩输出 | 模型: flash, 压缩比: 30%]"
    assert lines[2] == ""
    assert lines[-1] == "---"
    assert [line for line in lines if line.startswith("### ")] == ["### task_b", "### task_a", "### task_c"]
    compressed_b = "\n".join(outputs["task_b"].splitlines()[::3]).rstrip("\n")  # trailing newlines dropped
    compressed_a = "\n".join(outputs["task_a"].splitlines()[::3]).rstrip("\n")
    assert result.text == (
        "---\n[依赖任务压缩输出 | 模型: flash, 压缩比: 30%]\n\n"
        f"### task_b\n{compressed_b}\n\n### task_a\n{compressed_a}\n\n### task_c\nshort\noutput\n---"
    )
    assert [s.node_id for s in result.sections] == ["task_b", "task_a", "task_c"]


def test_the_header_names_the_model_and_the_ratio_as_a_whole_percentage():
    result = compress_dependencies({"a": "x"}, ratio=0.05, model="pro", cache=DictCompressionCache(), compressor=Spy())
    assert result.text.split("\n")[1] == "[依赖任务压缩输出 | 模型: pro, 压缩比: 5%]"
    result = compress_dependencies({"a": "x"}, cache=DictCompressionCache(), compressor=Spy())
    assert result.text.split("\n")[1] == "[依赖任务压缩输出 | 模型: flash, 压缩比: 30%]"
    result = compress_dependencies({"a": "x"}, ratio=1, cache=DictCompressionCache(), compressor=Spy())
    assert result.text.split("\n")[1] == "[依赖任务压缩输出 | 模型: flash, 压缩比: 100%]"


def test_no_dependencies_inject_nothing():
    result = compress_dependencies({}, cache=DictCompressionCache(), compressor=Spy())
    assert result.text == "" and result.sections == []
    assert with_compressed_context("Write the report.", result) == "Write the report."


def test_the_block_goes_after_the_nodes_content():
    result = compress_dependencies({"a": "x"}, cache=DictCompressionCache(), compressor=Spy())
    assert with_compressed_context("基于上游分析结果，综合生成最终报告...\n", result) == (
        "基于上游分析结果，综合生成最终报告...\n\n" + result.text
    )


# --------------------------------------------------------------------------- one dependency


def test_content_under_50_lines_passes_unchanged_and_is_not_compressed_or_cached():
    spy, cache = Spy(), DictCompressionCache()
    content = "\n".join(f"line {i}" for i in range(MIN_LINES - 1))

    out = compress_text("a", content, ratio=0.3, model="flash", cache=cache, compressor=spy)

    assert out.text == content
    assert (out.skipped_short, out.cache_hit, out.failed) == (True, False, False)
    assert out.lines_before == out.lines_after == 49
    assert spy.calls == [] and cache.entries == {}


def test_content_of_50_lines_is_compressed():
    spy = Spy()
    content = "\n".join(f"line {i}" for i in range(MIN_LINES))
    out = compress_text("a", content, ratio=0.3, model="flash", cache=DictCompressionCache(), compressor=spy)
    assert len(spy.calls) == 1 and not out.skipped_short
    assert (out.lines_before, out.lines_after) == (50, 17)


def test_a_second_call_with_the_same_content_ratio_and_model_is_a_cache_hit():
    spy, cache = Spy(), DictCompressionCache()
    content = long_text()

    first = compress_text("a", content, ratio=0.3, model="flash", cache=cache, compressor=spy)
    second = compress_text("b", content, ratio=0.3, model="flash", cache=cache, compressor=spy)

    assert len(spy.calls) == 1
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert second.text == first.text and second.lines_after == first.lines_after
    assert cache.entries == {cache_key(content, 0.3, "flash"): first.text}


def test_another_ratio_or_model_or_content_is_a_miss():
    spy, cache = Spy(), DictCompressionCache()
    content = long_text()
    compress_text("a", content, ratio=0.3, model="flash", cache=cache, compressor=spy)

    assert not compress_text("a", content, ratio=0.5, model="flash", cache=cache, compressor=spy).cache_hit
    assert not compress_text("a", content, ratio=0.3, model="pro", cache=cache, compressor=spy).cache_hit
    assert not compress_text("a", content + "\nmore", ratio=0.3, model="flash", cache=cache, compressor=spy).cache_hit
    assert len(spy.calls) == 4 and len(cache.entries) == 4
    assert compress_text("a", content, ratio=0.3, model="pro", cache=cache, compressor=spy).cache_hit


def test_the_cache_is_checked_before_the_short_content_skip():
    cache = DictCompressionCache()
    cache.set(cache_key("short", 0.3, "flash"), "s")
    out = compress_text("a", "short", ratio=0.3, model="flash", cache=cache, compressor=Spy())
    assert out.cache_hit and out.text == "s" and not out.skipped_short


def test_the_cache_key_is_sha256_of_the_content_plus_ratio_and_model():
    key = cache_key("hello", 0.3, "flash")
    assert key == "compress:v1:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824:0.3:flash"
    assert cache_key("hello", 0.3, "flash") == key
    assert cache_key("hello", 0.30000001, "flash") != key
    assert cache_key("hello", 1, "flash") == cache_key("hello", 1.0, "flash")


@pytest.mark.parametrize(
    "compressor, error",
    [
        (lambda content, ratio, model: 1 / 0, "ZeroDivisionError"),
        (lambda content, ratio, model: "", "no text"),
        (lambda content, ratio, model: "  \n ", "no text"),
        (lambda content, ratio, model: None, "NoneType"),
        (lambda content, ratio, model: content + "\nextra", "longer"),
    ],
)
def test_a_failed_compression_passes_the_original_and_is_not_cached(compressor, error):
    cache = DictCompressionCache()
    content = long_text()

    out = compress_text("a", content, ratio=0.3, model="flash", cache=cache, compressor=compressor)

    assert out.text == content and out.failed and error in out.error
    assert out.lines_after == out.lines_before == 200
    assert not out.cache_hit and not out.skipped_short
    assert cache.entries == {}
    # The next attempt tries the compressor again.
    again = compress_text("a", content, ratio=0.3, model="flash", cache=cache, compressor=Spy())
    assert not again.failed and not again.cache_hit


def test_a_failing_cache_is_a_miss_and_the_node_goes_on():
    class Broken:
        def get(self, key):
            raise ConnectionError("redis is down")

        def set(self, key, value):
            raise ConnectionError("redis is down")

    spy = Spy()
    out = compress_text("a", long_text(), ratio=0.3, model="flash", cache=Broken(), compressor=spy)
    assert len(spy.calls) == 1 and not out.failed and not out.cache_hit
    assert "get: ConnectionError: redis is down" in out.cache_error
    assert "set: ConnectionError: redis is down" in out.cache_error


@pytest.mark.parametrize("ratio", [0.0, 0.04, 1.01, -1, float("nan"), "0.3", None, True])
def test_the_ratio_must_be_between_5_and_100_percent(ratio):
    with pytest.raises(ValueError, match="compress_ratio"):
        compress_text("a", "x", ratio=ratio, model="flash", cache=DictCompressionCache(), compressor=Spy())
    with pytest.raises(ValueError, match="compress_ratio"):
        compress_dependencies({"a": "x"}, ratio=ratio, cache=DictCompressionCache(), compressor=Spy())


@pytest.mark.parametrize("ratio", [0.05, 0.3, 1.0, 1])
def test_the_bounds_are_allowed(ratio):
    compress_dependencies({"a": "x"}, ratio=ratio, cache=DictCompressionCache(), compressor=Spy())


# --------------------------------------------------------------------------- prompt and backends


def test_the_prompt_asks_for_the_ratio_as_a_percentage_and_holds_the_content():
    prompt = compression_prompt("THE CONTENT", 0.3)
    assert "将以下内容压缩到原长度的 30% 左右" in prompt
    assert "about 30% of its length" in prompt
    assert prompt.rstrip("-\n").endswith("THE CONTENT")


def test_an_llm_compressor_sends_the_prompt_to_the_model():
    calls = []

    def call(prompt, model):
        calls.append((prompt, model))
        return "short"

    out = compress_text("a", long_text(), ratio=0.25, model="flash", cache=DictCompressionCache(), compressor=llm_compressor(call))
    assert out.text == "short"
    assert calls == [(compression_prompt(long_text(), 0.25), "flash")]


def test_the_extractive_compressor_keeps_about_the_ratio_in_whole_lines_deterministically():
    compressor = extractive_compressor(COUNTER)
    content = long_text(200)
    originals = set(content.splitlines())

    text = compressor(content, 0.3, "builtin")

    assert text == compressor(content, 0.3, "builtin") == extractive_compressor(TokenCounter())(content, 0.3, "x")
    lines = text.splitlines()
    assert len(lines) < 0.5 * 200
    share = COUNTER.count(text) / COUNTER.count(content)
    assert 0.2 <= share <= 0.35, share
    assert set(lines) <= originals  # whole lines of the original
    # in their original order
    positions = [content.splitlines().index(line) for line in lines if line]
    assert positions == sorted(positions)
    # headings kept: every kept line comes with its section's heading
    assert lines[0] == "## Section 0"
    assert sum(line.startswith("## ") for line in lines) >= 6


def test_the_extractive_compressor_follows_the_ratio():
    compressor = extractive_compressor(COUNTER)
    content = long_text(400, seed=3)
    shares = [COUNTER.count(compressor(content, ratio, "x")) / COUNTER.count(content) for ratio in (0.05, 0.3, 0.6, 1.0)]
    assert shares == sorted(shares)
    assert shares[0] < 0.1 and shares[-1] == 1.0


def test_compressing_with_the_extractive_backend_records_lines_and_tokens():
    outputs = {"task_a": long_text(200, seed=1), "task_b": long_text(120, seed=2), "task_c": "done."}
    cache = DictCompressionCache()
    kwargs = {"ratio": 0.3, "model": "flash", "cache": cache, "compressor": extractive_compressor(COUNTER), "counter": COUNTER}

    result = compress_dependencies(outputs, **kwargs)
    record = result.record()

    assert json.loads(json.dumps(record, ensure_ascii=False)) == record
    assert record["model"] == "flash" and record["ratio"] == 0.3 and record["ratio_percent"] == 30
    a, b, c = record["dependencies"]
    assert a["node_id"] == "task_a" and a["lines_before"] == 200 and a["lines_after"] < 100
    assert a["tokens_before"] == COUNTER.count(outputs["task_a"]) and a["tokens_after"] < a["tokens_before"] * 0.4
    assert (a["cache_hit"], a["skipped_short"], a["failed"], a["error"]) == (False, False, False, "")
    assert (c["skipped_short"], c["lines_before"], c["lines_after"]) == (True, 1, 1)
    assert record["totals"] == {
        "dependencies": 3,
        "lines_before": 321,
        "lines_after": a["lines_after"] + b["lines_after"] + 1,
        "tokens_before": sum(d["tokens_before"] for d in (a, b, c)),
        "tokens_after": sum(d["tokens_after"] for d in (a, b, c)),
        "compressed": 2,
        "cache_hits": 0,
        "skipped_short": 1,
        "failed": 0,
    }

    again = compress_dependencies(outputs, **kwargs)
    assert again.text == result.text
    assert again.record()["totals"]["cache_hits"] == 2


def test_without_a_counter_the_record_has_no_token_counts():
    record = compress_dependencies({"a": long_text()}, cache=DictCompressionCache(), compressor=Spy()).record()
    assert "tokens_before" not in record["dependencies"][0] and "tokens_before" not in record["totals"]
    assert record["dependencies"][0]["lines_after"] == len("\n".join(long_text().splitlines()[::3]).splitlines())


def test_a_result_can_be_built_from_sections_and_text():
    assert CompressionResult([], "").record()["totals"]["dependencies"] == 0


# --------------------------------------------------------------------------- properties

_LINE = st.one_of(
    st.lists(st.sampled_from(WORDS + ["数据", "缓存", "结论。", "42", "v1.2", "e.g."]), min_size=1, max_size=14).map(" ".join),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(lambda w: "- " + " ".join(w)),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(lambda w: "## " + " ".join(w)),
    st.just(""),
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="#"), max_size=60),
)
_OUTPUT = st.one_of(st.lists(_LINE, max_size=60), st.lists(_LINE, min_size=MIN_LINES, max_size=200)).map("\n".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    outputs=st.lists(_OUTPUT, min_size=1, max_size=4),
    ratio=st.floats(min_value=0.05, max_value=1.0),
    model=st.sampled_from(["flash", "pro"]),
)
def test_every_dependency_gets_one_section_and_compression_never_lengthens(outputs, ratio, model):
    outputs = {f"dep_{i}": text for i, text in enumerate(outputs)}
    cache = DictCompressionCache()
    compressor = extractive_compressor(COUNTER)

    for attempt in range(2):  # the second time from the cache
        result = compress_dependencies(outputs, ratio=ratio, model=model, cache=cache, compressor=compressor, counter=COUNTER)
        lines = result.text.split("\n")
        for node_id in outputs:
            assert lines.count(f"### {node_id}") == 1
        assert lines[1] == f"[依赖任务压缩输出 | 模型: {model}, 压缩比: {round(ratio * 100)}%]"
        seen = []
        for section in result.sections:
            original = outputs[section.node_id]
            if attempt == 0:  # a hit only for an output the same as an earlier one
                assert section.cache_hit == (original in seen and section.lines_before >= MIN_LINES and not section.failed)
            else:
                assert section.cache_hit == (section.lines_before >= MIN_LINES and not section.failed)
            seen.append(original)
            if section.skipped_short or section.failed:
                assert section.text == original
            else:
                assert len(section.text) <= len(original)
                assert section.tokens_after <= section.tokens_before
                assert section.lines_after <= section.lines_before


def test_it_calls_and_caches_under_the_model_a_name_stands_for_and_heads_the_block_with_the_name():
    asked = []

    def compressor(content, ratio, model):
        asked.append(model)
        return content[: len(content) // 4]

    report = "\n".join(f"line {n} of the report" for n in range(60))
    cache = DictCompressionCache()
    result = compress_dependencies({"task_a": report}, model="flash", model_called="fast-model", cache=cache,
                                   compressor=compressor)
    assert asked == ["fast-model"] and list(cache.entries) == [cache_key(report, 0.3, "fast-model")]
    assert "[依赖任务压缩输出 | 模型: flash, 压缩比: 30%]" in result.text
    assert (result.record()["model"], result.record()["model_called"]) == ("flash", "fast-model")
