"""The prompt a node run sends: the agent's own items, its skills, the encoding its tokens are
counted in, the rendered text, and the bounded copy of each resolved input the run keeps.

Shared by the node kinds (executions/node_kinds/) and the context preview (executions/preview.py).
"""
from __future__ import annotations

import json

from engine.tokens import UnknownEncoding, check_encoding
from executions.node_errors import NodeFailure

PROMPT_LIMIT = 200_000  # characters of the prompt kept on the node run
INPUT_PREVIEW_LIMIT = 20_000  # characters of each resolved input kept; the full data stays at its source


def counting_encoding(agent) -> str:
    """The encoding the agent's tokens are counted in (its model's, as the catalogue names it);
    a NodeFailure when Switchyard cannot count it, for another encoding's counts would put
    the budget, trimming and cost bounds in the wrong units."""
    try:
        return check_encoding(agent.token_encoding)
    except UnknownEncoding as error:
        raise NodeFailure(f"{agent.agent_id}'s tokens cannot be counted: {error}", code=error.code,
                          retryable=False) from None


def skills(agent) -> list[str]:
    return list((agent.capabilities or {}).get("skills", []))


def prompt_items(agent) -> list[dict]:
    """The agent's system prompt and its instructions, passed whole (priority 1)."""
    config = agent.prompt_config or {}
    items = []
    if config.get("system_prompt"):
        items.append({"name": "system_prompt", "content": config["system_prompt"], "data_type": "system_prompt"})
    instructions = "\n".join(config[key] for key in ("role_play", "task_context", "thinking_process",
                                                      "output_constraint") if config.get(key))
    if instructions:
        items.append({"name": "task_instructions", "content": instructions, "data_type": "instructions"})
    return items


def render_prompt(texts: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"## {name}\n{text}" for name, text in texts if name != "system_prompt")


def bounded(report: dict) -> dict:
    text = json.dumps(report.get("content"), ensure_ascii=False, default=str)
    if len(text) > INPUT_PREVIEW_LIMIT:
        report = dict(report, content=text[:INPUT_PREVIEW_LIMIT], content_truncated=True)
    return report
