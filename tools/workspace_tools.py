"""The builtin tool `read_file`: a file of the workspace, read with the same checks as a
`file` data reference (engine/context/files.py): a path inside the workspace only, its
format from its extension or `format`, at most REF_MAX_FILE_BYTES read."""
from __future__ import annotations

import socket
from typing import Any

from django.conf import settings

from engine.context.errors import RefError
from engine.context.files import FORMATS, read_file
from tools.catalogue import register
from tools.errors import TOOL_ERROR, ToolError

READ_FILE_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "A path inside the workspace, e.g. papers/a.md"},
        "format": {"enum": list(FORMATS), "description": "How to read it; by default from its extension"},
        "sections": {"type": "array", "items": {"type": "string"},
                     "description": "Headings to keep (md and pdf only)"},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def read_workspace_file(arguments: dict[str, Any]) -> Any:
    """The file's content (text, a JSON value, or {"sections", "missing_sections"})."""
    try:
        return read_file({"type": "file", **arguments}, workspace_root=settings.WORKSPACE_ROOT,
                         max_bytes=settings.REF_MAX_FILE_BYTES, host=socket.gethostname())
    except RefError as error:
        raise ToolError(f"{error.code}: {error}", code=TOOL_ERROR) from None


register("read_file", description="Read a file of the workspace: text, Markdown (optionally some sections), "
                                  "JSON or PDF text.",
         input_schema=READ_FILE_SCHEMA, function=read_workspace_file)
