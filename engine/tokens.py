"""Token counting with tiktoken, offline, in each model's own encoding.

tiktoken downloads an encoding's BPE file on first use; this machine (and many a
deployment) has no network. The BPE files come from a registry package instead: bpe-openai
ships cl100k_base and o200k_base (gzipped, in its `data` folder). Each is checked against
the SHA-256 tiktoken publishes for it, then loaded into a `tiktoken.Encoding` with the
published pattern and special tokens, so counting is tiktoken's whatever the encoding.
Only the encodings in `OFFLINE_ENCODINGS` can be counted; any other name is refused,
never counted in another encoding instead.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import tiktoken

from engine.errors import EngineError

DEFAULT_ENCODING = "cl100k_base"  # for a model whose catalogue entry names no encoding

ENDOFTEXT = "<|endoftext|>"
ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class _Published:
    """What tiktoken publishes of an encoding (tiktoken_ext.openai_public): the SHA-256 of
    its BPE file, its pre-tokenisation pattern and its special tokens."""

    sha256: str
    pattern: str
    special_tokens: dict[str, int]


_PUBLISHED = {
    "cl100k_base": _Published(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
         ENDOFPROMPT: 100276},
    ),
    "o200k_base": _Published(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join([
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]),
        {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    ),
}

# The encodings Switchyard can count, offline: what an agent's `runtime.encoding` and the
# model catalogue's `encoding` may name.
OFFLINE_ENCODINGS: frozenset[str] = frozenset(_PUBLISHED)

BPE_PACKAGE = "bpe-openai"


class UnknownEncoding(EngineError, ValueError):
    code = "ENCODING_UNKNOWN"


class EncodingUnavailable(EngineError):
    """An encoding Switchyard counts whose BPE file is missing or not the published one."""

    code = "ENCODING_UNAVAILABLE"


def check_encoding(name: str) -> str:
    """`name`, when it is an encoding Switchyard can count; else UnknownEncoding naming the
    ones it can."""
    if name not in OFFLINE_ENCODINGS:
        raise UnknownEncoding(f"encoding '{name}' is not one Switchyard can count offline "
                              f"(it counts: {', '.join(sorted(OFFLINE_ENCODINGS))})")
    return name


@cache
def get_encoding(name: str) -> tiktoken.Encoding:
    published = _PUBLISHED[check_encoding(name)]
    return tiktoken.Encoding(name=name, pat_str=published.pattern, mergeable_ranks=_ranks(name, published.sha256),
                             special_tokens=published.special_tokens)


def _ranks(name: str, sha256: str) -> dict[bytes, int]:
    """The BPE ranks of `name` from the file the package ships, checked as tiktoken checks a
    download (the SHA-256 of the file's text) and read as tiktoken reads one."""
    try:
        path = distribution(BPE_PACKAGE).locate_file(f"bpe_openai/data/{name}.tiktoken.gz")
        data = gzip.decompress(Path(str(path)).read_bytes())
    except (PackageNotFoundError, OSError) as error:
        raise EncodingUnavailable(f"{name}'s BPE file from the package {BPE_PACKAGE} cannot be read: {error}") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise EncodingUnavailable(f"{name}'s BPE file from the package {BPE_PACKAGE} is not the published one "
                                  "(its SHA-256 differs)")
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


class TokenCounter:
    """Counts tokens of texts in one encoding, never counting the same text twice. `name` is
    the encoding's, as records state it."""

    def __init__(self, encoding: str = DEFAULT_ENCODING):
        self.name = encoding
        self.encoding = get_encoding(encoding)
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        counted = self._counts.get(text)
        if counted is None:
            counted = self._counts[text] = len(self.encoding.encode(text, disallowed_special=()))
        return counted
