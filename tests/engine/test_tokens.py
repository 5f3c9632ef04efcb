import os
import subprocess
import sys

from pathlib import Path

import pytest

from engine.tokens import TokenCounter, UnknownEncoding, get_encoding

ROOT = Path(__file__).resolve().parents[2]


def test_it_counts_tokens_with_cl100k_base():
    encoding = get_encoding("cl100k_base")
    assert encoding.encode("hello world") == [15339, 1917]
    assert TokenCounter().count("hello world") == 2


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


def test_it_refuses_encodings_it_cannot_load_offline():
    with pytest.raises(UnknownEncoding, match="'o200k_base' is not available offline"):
        get_encoding("o200k_base")


def test_it_loads_without_network_or_cache():
    """A fresh process with tiktoken's cache off and every proxy pointing nowhere still counts."""
    env = dict(os.environ, TIKTOKEN_CACHE_DIR="", HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9")
    code = "from engine.tokens import TokenCounter; print(TokenCounter().count('hello world'))"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 2
