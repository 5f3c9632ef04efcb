"""The builtin tool `read_file`: a file of the workspace, read with the same checks as a
`file` data reference (engine/context/files.py): a path inside the workspace only, its
format from its extension or `format`, at most REF_MAX_FILE_BYTES read."""
from __future__ import annotations

import socket
from typing import Annotated, Any

from django.conf import settings
from pydantic import Field

from engine.context.errors import RefError
from engine.context.files import read_file
from engine.shapes import FileFormat, Omittable, Shape
from tools.catalogue import register, tool_schema
from tools.errors import TOOL_ERROR, ToolError


class ReadFileArguments(Shape):
    path: Annotated[str, Field(min_length=1, description="A path inside the workspace, e.g. papers/a.md")]
    format: Omittable[Annotated[FileFormat,
                                Field(description="How to read it; by default from its extension")]] = None
    sections: Omittable[Annotated[list[str], Field(description="Headings to keep (md and pdf only)")]] = None


def read_workspace_file(arguments: dict[str, Any]) -> Any:
    """The file's content (text, a JSON value, or {"sections", "missing_sections"})."""
    try:
        return read_file({"type": "file", **arguments}, workspace_root=settings.WORKSPACE_ROOT,
                         max_bytes=settings.REF_MAX_FILE_BYTES, host=socket.gethostname())
    except RefError as error:
        raise ToolError(f"{error.code}: {error}", code=TOOL_ERROR) from None


register("read_file", description="Read a file of the workspace: text, Markdown (optionally some sections), "
                                  "JSON or PDF text.",
         input_schema=tool_schema(ReadFileArguments), function=read_workspace_file)
