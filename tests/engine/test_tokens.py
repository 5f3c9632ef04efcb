import os
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken

from engine import tokens
from engine.tokens import OFFLINE_ENCODINGS, EncodingUnavailable, TokenCounter, UnknownEncoding, get_encoding

ROOT = Path(__file__).resolve().parents[2]

# English, German, Chinese and Japanese, as one text: where o200k_base and cl100k_base part.
MIXED = ("The quarterly report is due on Friday; please send your figures by Thursday noon. "
         "Der Quartalsbericht ist am Freitag fällig; bitte schicken Sie Ihre Zahlen bis Donnerstagmittag. "
         "季度报告将于周五到期，请在周四中午之前发送您的数据。"
         "四半期報告書は金曜日が締め切りです。木曜日の正午までに数字を送ってください。") * 4


def test_it_counts_tokens_with_cl100k_base():
    encoding = get_encoding("cl100k_base")
    assert encoding.encode("hello world") == [15339, 1917]
    assert TokenCounter().count("hello world") == 2


def test_it_counts_o200k_base_with_tiktoken_giving_the_reference_ids():
    encoding = get_encoding("o200k_base")
    assert isinstance(encoding, tiktoken.Encoding) and encoding.name == "o200k_base"
    # Ids as bpe-openai's own tokenizer gives them.
    assert encoding.encode("hello world") == [24912, 2375]
    assert encoding.encode("Grüße aus München") == [3193, 572, 13153, 3976, 61963]
    assert encoding.encode("東京は日本の首都です") == [108713, 5205, 9048, 3385, 15425, 12232, 15121]
    assert encoding.encode("敏捷的棕色狐狸") == [101567, 82430, 1616, 10461, 243, 4472, 133597]


def test_it_counts_mixed_text_in_o200k_base_as_the_package_does_and_unlike_cl100k_base():
    import bpe_openai

    o200k, cl100k = TokenCounter("o200k_base").count(MIXED), TokenCounter("cl100k_base").count(MIXED)
    assert get_encoding("o200k_base").encode(MIXED) == bpe_openai.get_encoding("o200k_base").encode(MIXED)
    assert get_encoding("cl100k_base").encode(MIXED) == bpe_openai.get_encoding("cl100k_base").encode(MIXED)
    assert o200k < cl100k * 0.85, (o200k, cl100k)  # a sixth or more apart on such text
    assert TokenCounter("o200k_base").name == "o200k_base"


def test_it_offers_the_encodings_it_can_count():
    assert OFFLINE_ENCODINGS == frozenset({"cl100k_base", "o200k_base"})


def test_it_counts_the_same_text_only_once():
    counter = TokenCounter()
    calls = []
    real = counter.encoding.encode

    class Spy:
        def encode(self, text, **kwargs):
            calls.append(text)
            return real(text, **kwargs)

    counter.encoding = Spy()
    assert counter.count("a b c") == counter.count("a b c") == 3
    assert calls == ["a b c"]


def test_it_treats_special_token_text_as_plain_text():
    assert TokenCounter().count("<|endoftext|>") > 1
    assert TokenCounter("o200k_base").count("<|endoftext|>") > 1


@pytest.mark.parametrize("name", ["p50k_base", "r50k_base", "gpt2", "O200K_BASE", "o200k_base_offline", ""])
def test_it_refuses_encodings_it_cannot_count_never_counting_them_in_another(name):
    with pytest.raises(UnknownEncoding, match=f"encoding '{name}' is not one Switchyard can count offline "
                                              r"\(it counts: cl100k_base, o200k_base\)"):
        get_encoding(name)
    with pytest.raises(UnknownEncoding):
        TokenCounter(name)


def test_it_refuses_a_bpe_file_it_cannot_read(monkeypatch):
    monkeypatch.setattr(tokens, "BPE_PACKAGE", "no-such-package")
    get_encoding.cache_clear()
    try:
        with pytest.raises(EncodingUnavailable, match="o200k_base's BPE file from the package no-such-package"):
            get_encoding("o200k_base")
    finally:
        get_encoding.cache_clear()


def test_it_loads_without_network_or_tiktokens_download_cache(tmp_path):
    """A fresh process with no network (its sockets refuse to open) and an empty tiktoken
    cache counts in both encodings, and leaves that cache empty: nothing was downloaded."""
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(cache), HTTPS_PROXY="http://127.0.0.1:9",
               HTTP_PROXY="http://127.0.0.1:9")
    code = ("import socket\n"
            "def refuse(*args, **kwargs):\n"
            "    raise OSError('no network')\n"
            "socket.socket = socket.create_connection = socket.getaddrinfo = refuse\n"
            "from engine.tokens import TokenCounter\n"
            "print(TokenCounter('cl100k_base').count('hello world'), TokenCounter('o200k_base').count('hello world'))")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "2"]
    assert list(cache.iterdir()) == []
