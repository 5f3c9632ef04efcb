"""parallel-agent-compression for one node run: its dependencies' outputs, compressed by the
backend the node's `compress_model` names, in one block under the seed's header.

The decisions (ratios, the cache, the record) are the pure engine's (engine/compression.py);
this module picks the backend and model that compress, turns outputs into lines, and keeps
the compressed texts in the cache every worker shares (executions/compression_cache.py).
"""
from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from agents.backends import get_backend
from agents.backends.metering import calling
from engine import compression
from engine.tokens import TokenCounter
from executions.compression_cache import RedisCompressionCache
from executions.prompts import counting_encoding

COMPRESSION_CACHE = RedisCompressionCache()


def compress_dependencies(node, plan, outputs, references, items, agent):
    """parallel-agent-compression: the node's dependencies' outputs, compressed, go in one
    block under the seed's header; the references to them are replaced by it."""
    dependencies = [dep for dep in plan.dependencies(node.node_id) if dep in outputs]
    texts = {dep: as_text(outputs[dep]) for dep in dependencies}
    counter = TokenCounter(counting_encoding(agent))
    result = compression.compress_dependencies(
        texts, ratio=node.compress_ratio, model=node.compress_model, cache=COMPRESSION_CACHE,
        compressor=compressor_for(agent, counter, node.compress_model), counter=counter,
        model_called=compress_model_called(agent, node.compress_model),
    )
    remaining = [ref for ref in references if not (ref["ref_type"] == "task_output" and ref["task_id"] in texts)]
    items = items + [{"name": "compressed_dependencies", "content": result.text, "priority": 1}]
    return items, remaining, result.record()


def as_text(output: Any) -> str:
    """An output as lines of text, so that compression (which works on lines) sees a long
    report as the many lines it is rather than one JSON string."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        lines = []
        for key, value in output.items():
            if isinstance(value, str) and "\n" in value:
                lines += [f"{key}:", value]
            else:
                lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
        return "\n".join(lines)
    if isinstance(output, list):
        return "\n".join(json.dumps(element, ensure_ascii=False) for element in output)
    return json.dumps(output, ensure_ascii=False)


def compression_backend(agent, name: str):
    """The backend and model a compression with compress_model `name` (flash, pro) calls: the
    operators' alias of that name (a backend and a model, in SWITCHYARD_BACKENDS_FILE), else
    on the agent's backend its COMPRESS_MODELS entry, the agent's own model or the backend's
    default. The model is None for the builtin, which calls none."""
    alias = settings.MODEL_ALIASES.get(name)
    backend = get_backend(alias["backend"] if alias else agent.backend)
    if not backend.abstractive:
        return backend, None
    if alias:
        return backend, alias["model"]
    named = (settings.COMPRESS_MODELS.get(agent.backend) or {}).get(name)
    return backend, named or agent.model or getattr(backend, "model", "") or None


def compress_model_called(agent, name: str) -> str | None:
    return compression_backend(agent, name)[1]


def compressor_for(agent, counter: TokenCounter, name: str):
    """The builtin compresses extractively; a model backend is asked for a summary of
    `ratio` of the text's tokens (compression_backend says which backend and model)."""
    backend, _ = compression_backend(agent, name)
    if not backend.abstractive:
        return compression.extractive_compressor(counter)

    def compress(text: str, ratio: float, model: str) -> str:
        with calling("compression"):
            return backend.summarize(compression.compression_prompt(text, ratio),
                                     max(1, int(counter.count(text) * ratio)), model=model)

    return compress
