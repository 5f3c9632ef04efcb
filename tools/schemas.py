from typing import Any

from ninja import Schema


class ToolOut(Schema):
    """One tool of the catalogue, as an agent's author sees it."""

    name: str  # server.tool, what an agent names in capabilities.tools
    server: str
    tool: str
    description: str = ""
    input_schema: dict[str, Any]
    reachable: bool  # false: its server could not be listed; `problem` says why
    problem: str = ""
