"""Summary transfer (data-transfer-protocol §4.2): engine/context/summary.py."""
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.context.content import render
from engine.context.summary import METHODS, Summary, summarize, truncate_text
from engine.tokens import TokenCounter

ROOT = Path(__file__).resolve().parents[3]
COUNTER = TokenCounter()

ENGLISH = """# Attention Is All You Need

The Transformer is a model architecture that relies entirely on self-attention. It dispenses with recurrence and \
convolutions entirely. Experiments on two machine translation tasks show these models to be superior in quality. \
They are also more parallelizable and require significantly less time to train.

## Method

The encoder maps an input sequence of symbol representations to a sequence of continuous representations. \
The decoder then generates an output sequence one element at a time. Self-attention relates different positions \
of a single sequence in order to compute a representation of the sequence. Multi-head attention uses 8 parallel \
attention layers, or heads.

- Scaled dot-product attention divides the dot products by the square root of the key dimension.
- Positional encodings inject information about the order of the tokens in the sequence.

## Results

On the WMT 2014 English-to-German translation task the big Transformer model achieves 28.4 BLEU. Training took \
3.5 days on eight P100 GPUs. The Transformer also generalizes well to English constituency parsing!
"""

CHINESE = (
    "Transformer通过自注意力实现并行计算。它完全不再使用循环结构和卷积结构！"
    "模型在两个机器翻译任务上取得了更好的翻译质量。训练所需的时间也显著减少了吗？\n\n"
    "多头注意力使用八个并行的注意力层。位置编码为模型提供词语的顺序信息。"
    "该模型在英德翻译任务上达到了二十八点四的分数。\n\n"
    "自注意力可以直接建模长距离依赖关系。每一层的计算复杂度与序列长度的平方成正比。"
)


def english_sentences(text: str) -> list[str]:
    body = "\n".join(line for line in text.splitlines() if not line.startswith(("#", "- ")))
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", body) if s.strip()]


def chinese_sentences(text: str) -> list[str]:
    return [s for s in re.findall(r"[^。！？\n]+[。！？]", text)]


def assert_exact(summary: Summary, target: int):
    assert summary.tokens <= target
    assert summary.tokens == COUNTER.count(render(summary.content))


def assert_in_order(pieces: list[str], text: str):
    position = -1
    for piece in pieces:
        found = text.find(piece, position + 1)
        assert found > position, f"{piece!r} missing or out of order"
        position = found


# --------------------------------------------------------------------------- extractive


def test_it_extracts_the_best_english_sentences_in_their_original_order():
    summary = summarize(ENGLISH, target_tokens=90, counter=COUNTER)
    assert_exact(summary, 90)
    assert (summary.method, summary.note) == ("extractive", "")
    assert summary.tokens < COUNTER.count(ENGLISH)
    chosen = [line for line in summary.content.split("\n") if line]
    originals = english_sentences(ENGLISH) + [line for line in ENGLISH.splitlines() if line.startswith(("#", "- "))]
    pieces = [piece for line in chosen
              for piece in ([line] if line.startswith(("#", "- ")) else re.split(r"(?<=[.!?])\s+", line))]
    assert len(pieces) >= 2
    assert all(piece in originals for piece in pieces), pieces
    assert_in_order(pieces, ENGLISH)
    assert "The Transformer is a model architecture that relies entirely on self-attention." in pieces, "the opening"


def test_it_extracts_chinese_sentences_split_at_cjk_punctuation():
    summary = summarize(CHINESE, target_tokens=60, counter=COUNTER)
    assert_exact(summary, 60)
    assert summary.method == "extractive"
    pieces = chinese_sentences(summary.content)
    assert pieces and "".join(pieces) == summary.content.replace("\n", "").replace(" ", "")
    assert all(piece in chinese_sentences(CHINESE) for piece in pieces)
    assert_in_order(pieces, CHINESE)
    assert len(pieces) < len(chinese_sentences(CHINESE))


@pytest.mark.parametrize("method", METHODS)
def test_it_summarises_chinese_text_with_every_strategy(method):
    summary = summarize(CHINESE, target_tokens=40, counter=COUNTER, method=method)
    assert_exact(summary, 40)
    assert summary.tokens >= 25
    if method == "truncate":
        assert CHINESE.startswith(summary.content) and "\ufffd" not in summary.content
    else:
        pieces = chinese_sentences(summary.content.replace("- ", ""))
        assert pieces and all(piece in chinese_sentences(CHINESE) for piece in pieces)
        assert_in_order(pieces, CHINESE)
    assert summary.method == ("extractive" if method == "abstractive" else method)


def test_it_passes_text_that_already_fits_unchanged():
    for method in ("extractive", "abstractive", "truncate"):
        summary = summarize(ENGLISH, target_tokens=10_000, counter=COUNTER, method=method)
        assert (summary.content, summary.tokens, summary.note) == (ENGLISH, COUNTER.count(ENGLISH), "")


def test_it_passes_a_repeated_sentence_once():
    text = " ".join(["Attention is all you need."] * 30 + ["Recurrence is not needed at all."] * 30)
    summary = summarize(text, target_tokens=40, counter=COUNTER)
    assert_exact(summary, 40)
    assert summary.content.count("Attention is all you need.") == 1


# --------------------------------------------------------------------------- key points


def test_it_lists_the_first_sentence_of_each_paragraph_and_the_bullets_as_key_points():
    summary = summarize(ENGLISH, target_tokens=200, counter=COUNTER, method="key_points")
    assert_exact(summary, 200)
    assert summary.method == "key_points"
    lines = summary.content.split("\n")
    assert lines == [
        "- The Transformer is a model architecture that relies entirely on self-attention.",
        "- The encoder maps an input sequence of symbol representations to a sequence of continuous representations.",
        "- Scaled dot-product attention divides the dot products by the square root of the key dimension.",
        "- Positional encodings inject information about the order of the tokens in the sequence.",
        "- On the WMT 2014 English-to-German translation task the big Transformer model achieves 28.4 BLEU.",
    ]


def test_it_lists_key_points_of_chinese_text():
    summary = summarize(CHINESE, target_tokens=200, counter=COUNTER, method="key_points")
    assert_exact(summary, 200)
    assert summary.content.split("\n") == [
        "- Transformer通过自注意力实现并行计算。", "- 多头注意力使用八个并行的注意力层。", "- 自注意力可以直接建模长距离依赖关系。",
    ]


def test_it_caps_key_points_at_the_target():
    summary = summarize(ENGLISH, target_tokens=45, counter=COUNTER, method="key_points")
    assert_exact(summary, 45)
    lines = summary.content.split("\n")
    assert 1 <= len(lines) < 5 and all(line.startswith("- ") for line in lines)


# --------------------------------------------------------------------------- truncate


def test_it_truncates_text_to_the_target_as_a_strategy():
    summary = summarize(ENGLISH, target_tokens=50, counter=COUNTER, method="truncate")
    assert_exact(summary, 50)
    assert (summary.method, summary.note) == ("truncate", "")
    assert ENGLISH.startswith(summary.content) and summary.tokens >= 48


MIXED = "Transformer 模型 uses self-attention 🦜🧑‍🔬 to compute 表示 in parallel; déjà vu 😀 naïve café " * 8


@pytest.mark.parametrize("max_tokens", range(0, 120))
def test_it_truncates_token_exactly_without_breaking_a_character(max_tokens):
    result = truncate_text(MIXED, max_tokens, COUNTER)
    assert MIXED.startswith(result)
    assert COUNTER.count(result) <= max_tokens
    assert "\ufffd" not in result
    result.encode("utf-8")  # whole characters only
    assert COUNTER.count(result) >= max_tokens - 3, "as long as possible within a token or two (and a broken emoji)"


def test_it_drops_an_emoji_cut_in_two_at_the_cut():
    text = "ok 🦜 fine"
    tokens = COUNTER.encoding.encode(text)
    partial = [k for k in range(1, len(tokens)) if _invalid_utf8(COUNTER.encoding.decode_bytes(tokens[:k]))]
    assert partial, "the parrot takes more than one token"
    for k in partial:
        assert truncate_text(text, k, COUNTER) == "ok "
    assert truncate_text(text, partial[-1] + 1, COUNTER) == "ok 🦜"


def _invalid_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def test_it_passes_a_short_text_whole_and_nothing_for_zero():
    assert truncate_text("hello world", 5, COUNTER) == "hello world"
    assert truncate_text("hello world", 0, COUNTER) == ""
    assert truncate_text("", 3, COUNTER) == ""


class EncodeSpy:
    """counter.encoding, summing the characters it is asked to encode (but the `skip` text)."""

    def __init__(self, encoding, skip: str = ""):
        self._encoding = encoding
        self.skip = skip
        self.chars = 0

    def encode(self, text, **kwargs):
        if text != self.skip:
            self.chars += len(text)
        return self._encoding.encode(text, **kwargs)

    def __getattr__(self, name):
        return getattr(self._encoding, name)


def long_text(paragraphs: int) -> str:
    """English-like prose: `paragraphs` paragraphs of five sentences, the same for every call."""
    words = ("attention transformer encoder decoder layer head token sequence model training data result "
             "parallel recurrent position embedding softmax query key value score the a of in to with and "
             "for is on by 2017 8 BLEU translation English German").split()
    rng = random.Random(1706)
    out = []
    for _ in range(paragraphs):
        sentences = []
        for s in range(5):
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(6, 24)))
            sentences.append(sentence.capitalize() + ("." if s % 4 else "!"))
        out.append(" ".join(sentences))
    return "\n\n".join(out)


def test_it_truncates_a_huge_text_from_a_prefix_window():
    text = long_text(12_000)  # ≈ 1M tokens
    counter = TokenCounter()
    counter.encoding = spy = EncodeSpy(counter.encoding)
    result = truncate_text(text, 1_000, counter)
    assert text.startswith(result) and 998 <= counter.count(result) <= 1_000
    assert spy.chars <= 2.5 * len(result) + 1_000, "a probe, a window and the check, never the whole text"


# --------------------------------------------------------------------------- abstractive


def test_it_summarises_abstractively_with_the_backend_given():
    calls = []

    def backend(text, target):
        calls.append((text, target))
        return "Transformers replace recurrence with self-attention."

    summary = summarize(ENGLISH, target_tokens=60, counter=COUNTER, method="abstractive", abstractive=backend)
    assert calls == [(ENGLISH, 60)]
    assert (summary.content, summary.method, summary.note) == (
        "Transformers replace recurrence with self-attention.", "abstractive", "")
    assert_exact(summary, 60)


def test_it_truncates_an_abstractive_summary_over_the_target():
    summary = summarize(ENGLISH, target_tokens=20, counter=COUNTER, method="abstractive",
                        abstractive=lambda text, target: text)
    assert_exact(summary, 20)
    assert summary.method == "abstractive" and "truncated" in summary.note
    assert ENGLISH.startswith(summary.content) and summary.tokens >= 18


def test_it_falls_back_to_extractive_without_an_llm_backend():
    summary = summarize(ENGLISH, target_tokens=90, counter=COUNTER, method="abstractive")
    assert_exact(summary, 90)
    assert summary.method == "extractive"
    assert summary.note == "no LLM backend for abstractive summaries; used extractive"
    assert summary.content == summarize(ENGLISH, target_tokens=90, counter=COUNTER).content


def test_it_falls_back_to_extractive_when_the_backend_fails():
    def backend(text, target):
        raise TimeoutError("model did not answer")

    summary = summarize(ENGLISH, target_tokens=90, counter=COUNTER, method="abstractive", abstractive=backend)
    assert_exact(summary, 90)
    assert summary.method == "extractive"
    assert "TimeoutError: model did not answer" in summary.note and "used extractive" in summary.note


def test_it_calls_the_backend_for_each_summarised_field_within_its_budget():
    calls = []

    def backend(text, target):
        calls.append(target)
        return "short"

    atoms = make_atoms(4)
    summary = summarize(atoms, target_tokens=250, counter=COUNTER, method="abstractive", abstractive=backend,
                        preserve_fields=["atom_id"], summarize_fields=["content"], name="atoms")
    assert_exact(summary, 250)
    assert len(calls) == 4 and len(set(calls)) == 1 and 20 <= calls[0] < 60, calls
    assert [a["content_summary"] for a in summary.content["atoms_summary"]] == ["short"] * 4
    assert summary.method == "abstractive"


# --------------------------------------------------------------------------- fallbacks and errors


def test_it_falls_back_to_truncate_when_a_strategy_cannot_fit():
    text = "word " * 400  # one sentence without an end, far over the target
    for method in ("extractive", "key_points"):
        summary = summarize(text, target_tokens=30, counter=COUNTER, method=method)
        assert_exact(summary, 30)
        assert summary.method == "truncate"
        assert summary.note == f"{method} summary did not fit in 30 tokens; truncated"
        assert text.startswith(summary.content) and summary.tokens >= 28


def test_it_returns_nothing_for_a_zero_target():
    summary = summarize(ENGLISH, target_tokens=0, counter=COUNTER)
    assert (summary.content, summary.tokens) == ("", 0)


def test_it_refuses_unknown_strategies_and_negative_targets():
    with pytest.raises(ValueError, match="unknown summary strategy 'magic'"):
        summarize(ENGLISH, target_tokens=10, counter=COUNTER, method="magic")
    with pytest.raises(ValueError):
        summarize(ENGLISH, target_tokens=-1, counter=COUNTER)


# --------------------------------------------------------------------------- structured data

CONTENTS = [
    "Transformer通过自注意力实现并行计算。它不再依赖循环结构，因此训练可以高度并行。在机器翻译任务上它取得了新的最好结果。"
    "这一结论在多个数据集上都得到了验证。",
    "The Transformer relies entirely on self-attention to draw global dependencies between input and output. "
    "It allows for significantly more parallelization than recurrent models. It reaches a new state of the art "
    "in translation quality after training for as little as twelve hours on eight GPUs.",
    "Multi-head attention allows the model to jointly attend to information from different representation "
    "subspaces at different positions. With a single attention head, averaging inhibits this. The model uses "
    "eight heads with a reduced dimension each, so the total cost is similar to single-head attention.",
]


def make_atoms(n: int, types=("claim", "evidence", "methodology", "background")) -> list[dict]:
    return [
        {
            "atom_id": f"atom_{i + 1:03d}",
            "atom_type": types[i % len(types)],
            "content": f"{CONTENTS[i % len(CONTENTS)]} {CONTENTS[(i + 2) % len(CONTENTS)]} (Atom {i + 1}.)",
            "evidence": [{"source": "arXiv:1706.03762", "quote": CONTENTS[(i + 1) % len(CONTENTS)]}],
            "metadata": {"page": i + 1, "extracted_by": "scholar"},
            "confidence": round(0.6 + i / 50, 2),
        }
        for i in range(n)
    ]


def test_it_shapes_atoms_like_the_section_4_2_example():
    data = {"atoms": make_atoms(15)}
    assert COUNTER.count(render(data)) > 3_000  # well over the 2,000 of max_length
    summary = summarize(data, target_tokens=2_000, counter=COUNTER,
                        preserve_fields=["atom_id", "atom_type", "confidence"], summarize_fields=["content"])
    assert_exact(summary, 2_000)
    assert (summary.method, summary.note) == ("extractive", "")
    content = summary.content
    assert list(content) == ["atoms_summary", "total_atoms", "summarized_atoms", "omitted_fields"]
    assert (content["total_atoms"], content["summarized_atoms"]) == (15, 15)
    assert content["omitted_fields"] == ["evidence", "metadata"]
    for atom, out in zip(data["atoms"], content["atoms_summary"], strict=True):
        assert list(out) == ["atom_id", "atom_type", "content_summary", "confidence"]
        assert (out["atom_id"], out["atom_type"], out["confidence"]) == (
            atom["atom_id"], atom["atom_type"], atom["confidence"])
        assert 0 < COUNTER.count(out["content_summary"]) < COUNTER.count(atom["content"])
        pieces = [piece for piece in re.split(r"(?<=[.。])\s*", out["content_summary"]) if piece]
        assert all(piece in atom["content"] for piece in pieces), "whole sentences of the content"


def test_it_names_a_bare_list_after_the_name_given():
    summary = summarize(make_atoms(15), target_tokens=2_000, counter=COUNTER, name="atoms",
                        preserve_fields=["atom_id", "atom_type", "confidence"], summarize_fields=["content"])
    assert_exact(summary, 2_000)
    assert set(summary.content) == {"atoms_summary", "total_atoms", "summarized_atoms", "omitted_fields"}
    default = summarize(make_atoms(2), target_tokens=2_000, counter=COUNTER)
    assert set(default.content) == {"items_summary", "total_items", "summarized_items", "omitted_fields"}


def test_it_chooses_fields_by_default_without_a_config():
    data = {"paper_id": "arxiv:1706.03762", "atoms": make_atoms(6), "relations": [],
            "metadata": {"source": "scholar"}, "tags": ["nlp", "attention"]}
    summary = summarize(data, target_tokens=800, counter=COUNTER)
    assert_exact(summary, 800)
    content = summary.content
    assert content["paper_id"] == "arxiv:1706.03762"
    assert (content["total_atoms"], content["summarized_atoms"]) == (6, 6)
    assert (content["relations_summary"], content["total_relations"], content["summarized_relations"]) == ([], 0, 0)
    assert content["omitted_fields"] == ["evidence", "metadata", "tags"]
    for out in content["atoms_summary"]:
        assert list(out) == ["atom_id", "atom_type", "content_summary", "confidence"]


def test_it_drops_the_lowest_priority_elements_first():
    types = ("background", "claim", "citations", "evidence", "claim", "background")
    atoms = [dict(a, atom_type=types[i % 6]) for i, a in enumerate(make_atoms(12))]
    atoms[5].pop("atom_type")  # no priority of its own: counts as 2
    summary = summarize(atoms, target_tokens=300, counter=COUNTER, name="atoms",
                        preserve_fields=["atom_id", "atom_type"], summarize_fields=["content"])
    assert_exact(summary, 300)
    kept = [a["atom_id"] for a in summary.content["atoms_summary"]]
    assert 0 < len(kept) < 12 and summary.content["summarized_atoms"] == len(kept)
    assert f"dropped {12 - len(kept)} of 12 atoms" in summary.note
    priority = {"claim": 1, "evidence": 2, None: 2, "background": 3, "citations": 4}
    # keep order: by priority, earlier first; what is kept is a head of it, passed in input order
    keep_order = sorted(range(12), key=lambda i: (priority[atoms[i].get("atom_type")], i))
    expected = sorted(keep_order[: len(kept)])
    assert kept == [atoms[i]["atom_id"] for i in expected]
    assert all(priority[atoms[i].get("atom_type")] <= 2 for i in expected)


def test_it_drops_later_elements_first_within_a_priority():
    atoms = make_atoms(10, types=("evidence",))
    summary = summarize({"atoms": atoms}, target_tokens=300, counter=COUNTER,
                        preserve_fields=["atom_id"], summarize_fields=["content"])
    assert_exact(summary, 300)
    kept = [a["atom_id"] for a in summary.content["atoms_summary"]]
    assert 0 < len(kept) < 10
    assert kept == [a["atom_id"] for a in atoms[: len(kept)]]
    assert summary.content["summarized_atoms"] == len(kept)


def test_it_keeps_the_first_scalars_that_fit_with_a_count():
    values = [f"reference number {i} to a paper on attention" for i in range(200)]
    summary = summarize(values, target_tokens=100, counter=COUNTER, name="citations")
    assert_exact(summary, 100)
    content = summary.content
    kept = content["citations_summary"]
    assert 0 < len(kept) < 200 and kept == values[: len(kept)]
    assert (content["total_citations"], content["summarized_citations"]) == (200, len(kept))
    assert summarize([1, 2, 3], target_tokens=100, counter=COUNTER).content == [1, 2, 3]


def test_it_summarises_other_values_as_their_text():
    data = {"report": {"sections": [ENGLISH, CHINESE]}}
    summary = summarize(data, target_tokens=60, counter=COUNTER)
    assert_exact(summary, 60)
    assert isinstance(summary.content, str)
    small = {"a": {"b": 1}}
    assert summarize(small, target_tokens=60, counter=COUNTER).content == small


def test_it_truncates_the_rendered_data_when_not_even_the_frame_fits():
    data = {"paper_id": "arxiv:1706.03762", "atoms": make_atoms(3)}
    summary = summarize(data, target_tokens=8, counter=COUNTER)
    assert_exact(summary, 8)
    assert summary.method == "truncate" and "truncated the rendered data" in summary.note
    assert render(data).startswith(summary.content)


# --------------------------------------------------------------------------- properties

PIECES = st.sampled_from(list("ab cd EF.!?,;:\n\n#-*1。！？中文字") + ["🦜", "é", "  ", "\t", "- ", "## ", "word ", "\n- "])
TEXTS = st.one_of(st.lists(PIECES, max_size=300).map("".join), st.text(max_size=300))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, target=st.integers(0, 80), method=st.sampled_from(METHODS))
def test_it_always_fits_text_in_the_target(text, target, method):
    summary = summarize(text, target_tokens=target, counter=COUNTER, method=method)
    assert_exact(summary, target)
    assert summary.method in METHODS


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, max_tokens=st.integers(0, 80))
def test_it_always_truncates_to_a_prefix_within_the_limit(text, max_tokens):
    result = truncate_text(text, max_tokens, COUNTER)
    assert text.startswith(result) and COUNTER.count(result) <= max_tokens
    if COUNTER.count(text) <= max_tokens:
        assert result == text
    else:
        assert COUNTER.count(result) >= max_tokens - 4


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=20), st.lists(PIECES, min_size=30, max_size=200).map("".join))
ELEMENTS = st.dictionaries(
    st.sampled_from(["atom_id", "atom_type", "content", "confidence", "priority", "evidence", "metadata", "note"]),
    st.one_of(SCALARS, st.sampled_from(["claim", "evidence", "background", "citations"]),
              st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2)),
    max_size=6,
)
FIELD_LISTS = st.one_of(st.none(), st.lists(st.sampled_from(["atom_id", "atom_type", "content", "note", "evidence"]),
                                            max_size=3, unique=True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    elements=st.lists(ELEMENTS, max_size=10),
    wrap=st.booleans(),
    extra=st.dictionaries(st.sampled_from(["paper_id", "metadata", "abstract"]), SCALARS, max_size=3),
    target=st.integers(0, 400),
    method=st.sampled_from(METHODS),
    preserve=FIELD_LISTS,
    summarise=FIELD_LISTS,
)
def test_it_always_fits_lists_of_dicts_in_the_target(elements, wrap, extra, target, method, preserve, summarise):
    data = dict(extra, atoms=elements) if wrap else elements
    summary = summarize(data, target_tokens=target, counter=COUNTER, method=method,
                        preserve_fields=preserve, summarize_fields=summarise, name="atoms")
    assert_exact(summary, target)
    content = summary.content
    if isinstance(content, dict) and "atoms_summary" in content:
        assert content["total_atoms"] == len(elements)
        assert content["summarized_atoms"] == len(content["atoms_summary"]) <= len(elements)
        assert content["omitted_fields"] == sorted(content["omitted_fields"])


# --------------------------------------------------------------------------- cost


@pytest.mark.parametrize("method", ["extractive", "key_points", "abstractive", "truncate"])
@pytest.mark.parametrize("target", [500, 5_000])
def test_it_encodes_little_more_than_the_summary_of_a_huge_text(method, target):
    text = long_text(2_400)  # ≈ 200K tokens
    counter = TokenCounter()
    total = counter.count(text)  # as the assembler has counted it already
    assert total > 180_000
    counter.encoding = spy = EncodeSpy(counter.encoding, skip=text)
    summary = summarize(text, target_tokens=target, counter=counter, method=method)
    assert summary.tokens <= target and summary.tokens == counter.count(summary.content)
    assert summary.tokens >= 0.75 * target
    targets_worth = target * len(text) / total
    assert spy.chars <= 2.2 * targets_worth + 200, f"encoded {spy.chars / targets_worth:.2f}× the target's worth"


def test_it_needs_no_django():
    code = ("import sys; import engine.context.summary; "
            "print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in {'django', 'celery', 'redis', 'core', 'agents'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


TABLE = "\n".join(["| run | model | bleu |", "| --- | --- | ---: |"]
                  + [f"| r{n:03d} | transformer-{n % 3} | {20 + n / 10:.1f} |" for n in range(300)])


def test_a_table_keeps_its_header_whole_rows_and_its_statistics():
    summary = summarize(TABLE, target_tokens=300, counter=COUNTER, data_type="table")
    lines = summary.content.splitlines()
    assert lines[:2] == ["| run | model | bleu |", "| --- | --- | ---: |"]
    rows = [line for line in lines[2:] if line.startswith("| r")]
    assert rows and rows == TABLE.splitlines()[2:2 + len(rows)], "rows stay whole, one a line, in order"
    assert f"rows: 300 ({len(rows)} shown)" in lines
    assert "bleu: min 20, max 49.9, mean 34.95" in lines
    assert summary.method == "table" and summary.tokens <= 300
    assert summary.note == f"table: kept the header, {len(rows)} of 300 rows and the column statistics (§5.3)"


def test_a_table_of_rows_keeps_its_columns_rows_and_statistics():
    rows = [{"run": f"r{n}", "bleu": 20 + n} for n in range(200)]
    summary = summarize(rows, target_tokens=200, counter=COUNTER, data_type="table")
    content = summary.content
    assert content["columns"] == ["run", "bleu"] and content["total_rows"] == 200
    assert content["rows"] == rows[:content["shown_rows"]] and content["shown_rows"] > 0
    assert content["statistics"] == {"bleu": {"min": 20, "max": 219, "mean": 119.5}}
    assert summary.tokens <= 200
