"""The tool catalogue (tools/catalogue.py), for the authors who give agents tools: each
tool's name, description, argument schema, and whether its server answers now."""
from ninja import Router

from core.api_support import responses
from core.roles import AUTHOR, require_role
from tools import catalogue
from tools.schemas import ToolOut

router = Router(tags=["tools"])


@router.get("/tools", response=responses(200, list[ToolOut]), summary="The tool catalogue (authors)",
            description="Builtin tools, then each configured MCP server's allowed tools. A server's listing is "
                        f"kept for {catalogue.LISTING_SECONDS:g} s; `fresh=true` asks every server again.")
def tools_list(request, fresh: bool = False):
    require_role(request.user, AUTHOR, to="see the tool catalogue")
    return [tool.as_dict() for tool in catalogue.entries(fresh=fresh)]
