"""Reading `file` data references (data-transfer-protocol §2.3).

A reference names a path inside the agents' workspace, an optional format (pdf, md,
json, txt), an encoding and optionally the sections to extract. Every failure is a
`RefError` with one of the §3.2 codes, so the caller can apply the reference's fallback.

Messages name the path as the reference wrote it and call the root "the workspace":
they end up in records and pages, which must not reveal where the workspace lives.
When several machines run workers, each reads its own mount of the workspace; a file
one of them cannot see is REF_NOT_FOUND naming that worker's host, never an empty value.
"""
from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pypdf

from engine.errors import reraise_interrupt

from .errors import REF_FILTER_ERROR, REF_FORMAT_ERROR, REF_NOT_FOUND, REF_PERMISSION_DENIED, RefError

# Agents see the workspace as this directory, whatever it is on the machine.
VIRTUAL_ROOT = "/workspace"
# What a missing file may mean when workers run on several machines.
SHARED_WORKSPACE = "the workspace must be one folder shared by every worker"

FORMATS = ("pdf", "md", "json", "txt")
EXTENSIONS = {".pdf": "pdf", ".md": "md", ".markdown": "md", ".json": "json", ".txt": "txt"}
SECTIONED_FORMATS = ("md", "pdf")
# A section found: (the name asked for, its position in the document, (its heading, its text)).
Found = tuple[str, tuple[int, ...], tuple[str, str]]

# Headings a paper without an outline typically has; in the page-text fallback a line
# reading like one of these ends the section before it.
TYPICAL_HEADINGS = frozenset({
    "abstract", "introduction", "background", "related work", "preliminaries", "method", "methods",
    "methodology", "approach", "model", "experiments", "experimental setup", "evaluation", "results",
    "discussion", "limitations", "conclusion", "conclusions", "future work", "summary",
    "acknowledgements", "acknowledgments", "references", "bibliography", "appendix",
})

# "3.1 ", "3. ", "2) ", "IV. ", "A. " in front of a heading; a number needs a space after
# it so that "3D Vision" keeps its "3D".
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*[.)]?|[ivxlc]+[.)]|[a-z][.)])\s+")
_EDGE_PUNCTUATION = re.compile(r"^[\W_]+|[\W_]+$")
# A numbered line such as "4 Results" or "3.2 Training Data" in page text.
_NUMBERED_HEADING = re.compile(r"^\d+(?:\.\d+)*\.?\s+[A-Z][^.]*$")
_PAGE_NAME = re.compile(r"^page\s+(\d+)$")
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def resolve_workspace_path(path: str, workspace_root: Path) -> Path:
    """The real path of `path` inside the workspace, or REF_PERMISSION_DENIED.

    A relative path and a path under "/workspace/" both land under `workspace_root`.
    The check is made on the fully resolved path, so a symlink (to a file or to a
    directory on the way) cannot lead out of the workspace.
    """
    if not isinstance(path, str) or not path.strip():
        raise RefError(REF_NOT_FOUND, "the file reference names no path")
    if "\x00" in path:
        raise RefError(REF_PERMISSION_DENIED, f"path {path!r} contains a NUL byte")
    pure = PurePosixPath(path)
    if ".." in pure.parts:
        raise RefError(REF_PERMISSION_DENIED, f"path {path!r} may not contain '..'")
    if pure.is_absolute():
        if not pure.is_relative_to(VIRTUAL_ROOT):
            raise RefError(REF_PERMISSION_DENIED, f"path {path!r} is outside the workspace")
        relative = pure.relative_to(VIRTUAL_ROOT)
    else:
        relative = pure
    root = Path(workspace_root).resolve()
    try:
        real = (root / relative).resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop
        raise RefError(REF_NOT_FOUND, f"path {path!r} cannot be resolved: {type(error).__name__}") from None
    if not real.is_relative_to(root):
        raise RefError(REF_PERMISSION_DENIED, f"path {path!r} leads outside the workspace")
    return real


def read_file(reference: dict[str, Any], *, workspace_root: Path, max_bytes: int = 20_000_000, host: str = "") -> Any:
    """The data a `file` reference points at.

    txt and md give a str, json the parsed value, pdf the text of its pages joined by
    blank lines. With `sections` (md and pdf only) the result is
    {"sections": {heading: text, ...}, "missing_sections": [name, ...]}. `host` names
    the machine (worker) reading, for the messages of a file it cannot find.
    """
    path: Any = reference.get("path")  # resolve_workspace_path refuses what is not a path
    real = resolve_workspace_path(path, workspace_root)
    file_format = _format_of(reference, path)
    encoding = _encoding_of(reference)
    sections = _sections_of(reference)
    if sections and file_format not in SECTIONED_FORMATS:
        raise RefError(REF_FORMAT_ERROR, f"sections need md or pdf, and {path!r} is {file_format}")
    where = f" on host {host}" if host else ""
    if not Path(workspace_root).is_dir():
        # A worker whose share is not mounted: say so, rather than "no such file" for each one.
        raise RefError(REF_NOT_FOUND, f"the workspace folder does not exist{where}, so {path!r} cannot be read"
                                      f" ({SHARED_WORKSPACE})")
    data = _read_bytes(real, path, max_bytes, where)

    if file_format == "pdf":
        pages, outline = _read_pdf(data, path, encoding)
        if sections:
            return _pdf_sections(pages, outline, sections, path)
        return "\n\n".join(pages)
    text = _decode(data, encoding, path)
    if file_format == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise RefError(
                REF_FORMAT_ERROR,
                f"{path!r} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
                convertible=text,
            ) from None
    if file_format == "md" and sections:
        return _markdown_sections(text, sections, path)
    return text


# --- the reference's fields -------------------------------------------------------------

def _format_of(reference: dict[str, Any], path: str) -> str:
    declared = reference.get("format")
    if declared:
        file_format = str(declared).lower().lstrip(".")
        if file_format not in FORMATS:
            raise RefError(REF_FORMAT_ERROR, f"format {declared!r} of {path!r} is not one of {', '.join(FORMATS)}")
        return file_format
    suffix = PurePosixPath(path).suffix.lower()
    if suffix not in EXTENSIONS:
        raise RefError(REF_FORMAT_ERROR, f"cannot tell the format of {path!r}: give format ({', '.join(FORMATS)})")
    return EXTENSIONS[suffix]


def _encoding_of(reference: dict[str, Any]) -> str:
    encoding = reference.get("encoding") or "utf-8"
    try:
        return codecs.lookup(str(encoding)).name
    except LookupError:
        raise RefError(REF_FORMAT_ERROR, f"unknown encoding {encoding!r}") from None


def _sections_of(reference: dict[str, Any]) -> list[str]:
    sections = reference.get("sections")
    if not sections:
        return []
    # A name with nothing left after normalising ("", "--") would match blank lines.
    if not (isinstance(sections, list) and all(isinstance(n, str) and normalise_heading(n) for n in sections)):
        raise RefError(REF_FILTER_ERROR, "sections must be a list of section names")
    return sections


# --- bytes and text ---------------------------------------------------------------------

def _read_bytes(real: Path, path: str, max_bytes: int, where: str = "") -> bytes:
    """The file's bytes; the size is checked before reading so a huge file is never loaded."""
    try:
        if real.is_dir():
            raise RefError(REF_NOT_FOUND, f"{path!r} is a directory, not a file")
        if not real.is_file():
            raise RefError(REF_NOT_FOUND, f"{path!r} does not exist in the workspace{where}"
                                          + (f" ({SHARED_WORKSPACE})" if where else ""))
        size = real.stat().st_size
        if size > max_bytes:
            raise RefError(REF_FORMAT_ERROR, f"{path!r} is {size} bytes, more than the {max_bytes} allowed")
        with real.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except PermissionError:
        raise RefError(REF_PERMISSION_DENIED, f"{path!r} cannot be read") from None
    except OSError as error:
        raise RefError(REF_NOT_FOUND, f"{path!r} cannot be read: {error.strerror or type(error).__name__}") from None
    if len(data) > max_bytes:  # it grew after the size check
        raise RefError(REF_FORMAT_ERROR, f"{path!r} is more than the {max_bytes} bytes allowed")
    return data


def _decode(data: bytes, encoding: str, path: str) -> str:
    # A UTF-8 file saved with a byte-order mark should read like one without.
    codec = "utf-8-sig" if encoding == "utf-8" else encoding
    try:
        return data.decode(codec)
    except UnicodeDecodeError as error:
        raise RefError(
            REF_FORMAT_ERROR, f"{path!r} is not valid {encoding}: byte {error.start} cannot be decoded"
        ) from None
    except LookupError:  # a codec that is not a text encoding, such as base64
        raise RefError(REF_FORMAT_ERROR, f"{encoding!r} is not a text encoding") from None


# --- PDF --------------------------------------------------------------------------------

def _read_pdf(data: bytes, path: str, encoding: str) -> tuple[list[str], list[tuple[int, str, int]]]:
    """The text of each page and the outline as (level, title, page index) in document order.

    pypdf raises many kinds of errors on broken files, so any failure while parsing is a
    REF_FORMAT_ERROR; the bytes' text, when they decode, goes along as `convertible`.
    """
    if b"%PDF-" not in data[:1024]:
        raise _not_a_pdf(data, path, encoding, "it has no %PDF header")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        outline = []
        for level, item in _flatten_outline(reader.outline):
            page = reader.get_destination_page_number(item)
            if page is not None and page >= 0:
                outline.append((level, str(item.title or "").strip(), page))
    except Exception as error:
        reraise_interrupt(error)
        raise _not_a_pdf(data, path, encoding, f"{type(error).__name__}: {error}") from None
    return pages, outline


def _not_a_pdf(data: bytes, path: str, encoding: str, reason: str) -> RefError:
    try:
        convertible = _decode(data, encoding, path)
    except RefError:
        convertible = None
    return RefError(REF_FORMAT_ERROR, f"{path!r} is not a readable PDF: {reason}", convertible=convertible)


def _flatten_outline(items: list[Any], level: int = 1) -> Iterator[tuple[int, Any]]:
    """pypdf nests an item's children as a list right after the item."""
    for item in items:
        if isinstance(item, list):
            yield from _flatten_outline(item, level + 1)
        else:
            yield level, item


def _pdf_sections(pages: list[str], outline: list[tuple[int, str, int]], sections: list[str], path: str) -> dict[str, Any]:
    """Sections of a PDF: by its outline when it has one, else by headings in its text.

    1. With an outline, a section runs from its item's page to the page before the next
       item of the same or higher level (so sub-items stay inside), and is trimmed to
       start after its heading line and end before the next item's heading line when
       those lines are found in the text.
    2. Without one, a section starts after a line that reads like its name and ends at
       the next line that reads like another requested section or a typical heading.
    3. Either way "page N" names page N.
    """
    if outline:
        found = _pdf_sections_by_outline(pages, outline, sections)
        headings = [title for _, title, _ in outline]
    else:
        found = _pdf_sections_by_text(pages, sections)
        headings = _typical_headings_in(pages)
    for name in sections:
        number = _page_number(name, len(pages))
        if name not in {requested for requested, _, _ in found} and number is not None:
            found.append((name, (number - 1, -1), (name, pages[number - 1])))
    if not headings:
        headings = [f"pages 1-{len(pages)} (name them 'page N')"]
    return _result(found, sections, headings, path)


def _pdf_sections_by_outline(pages: list[str], outline: list[tuple[int, str, int]], sections: list[str]) -> list[Found]:
    ordered = sorted(outline, key=lambda item: item[2])  # stable: document order within a page
    found: list[Found] = []
    for name in sections:
        wanted = normalise_heading(name)
        for index, (level, title, start) in enumerate(ordered):
            if normalise_heading(title) != wanted:
                continue
            following = next((item for item in ordered[index + 1:] if item[0] <= level), None)
            end = max(start, following[2] - 1) if following else len(pages) - 1
            lines = "\n\n".join(pages[start:end + 1]).splitlines()
            begin = _find_line(lines, {wanted}, 0)
            begin = 0 if begin is None else begin + 1
            next_title = normalise_heading(following[1]) if following else None
            stop = _find_line(lines, {next_title}, begin) if next_title else None
            text = "\n".join(lines[begin:stop]).strip()
            found.append((name, (start, index), (title, text)))
            break
    return found


def _pdf_sections_by_text(pages: list[str], sections: list[str]) -> list[Found]:
    lines, line_pages = [], []
    for number, page in enumerate(pages):
        for line in page.splitlines() + [""]:
            lines.append(line)
            line_pages.append(number)
    wanted = {normalise_heading(name) for name in sections}
    found: list[Found] = []
    for name in sections:
        start = _find_line(lines, {normalise_heading(name)}, 0)
        if start is None:
            continue
        end = start + 1
        while end < len(lines) and not _ends_section(lines[end], wanted, normalise_heading(name)):
            end += 1
        text = "\n".join(lines[start + 1:end]).strip()
        found.append((name, (line_pages[start], start), (lines[start].strip(), text)))
    return found


def _ends_section(line: str, wanted: set[str], own: str) -> bool:
    normalised = normalise_heading(line)
    if not normalised or normalised == own:
        return False
    return normalised in wanted or _looks_like_heading(line)


def _looks_like_heading(line: str) -> bool:
    line = line.strip()
    if normalise_heading(line) in TYPICAL_HEADINGS:
        return True
    return len(line.split()) <= 8 and bool(_NUMBERED_HEADING.match(line))


def _typical_headings_in(pages: list[str]) -> list[str]:
    return [line.strip() for page in pages for line in page.splitlines() if _looks_like_heading(line)]


def _page_number(name: str, page_count: int) -> int | None:
    match = _PAGE_NAME.match(" ".join(name.split()).casefold())
    if match and 1 <= int(match.group(1)) <= page_count:
        return int(match.group(1))
    return None


def _find_line(lines: list[str], names: set[str], start: int) -> int | None:
    for index in range(start, len(lines)):
        if normalise_heading(lines[index]) in names:
            return index
    return None


# --- Markdown ---------------------------------------------------------------------------

def _markdown_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, title) of each ATX heading, skipping fenced code blocks."""
    headings, fence = [], None
    for index, line in enumerate(lines):
        opener = _FENCE.match(line)
        if fence:
            # A fence closes on a line of the same character, at least as long.
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
            continue
        if opener:
            fence = opener.group(1)
            continue
        match = _ATX_HEADING.match(line)
        if match:
            title = re.sub(r"(?:^|[ \t]+)#+$", "", match.group(2) or "").strip()
            headings.append((index, len(match.group(1)), title))
    return headings


def _markdown_sections(text: str, sections: list[str], path: str) -> dict[str, Any]:
    """A section is a heading's body up to the next heading of the same or higher level."""
    lines = text.splitlines()
    headings = _markdown_headings(lines)
    found: list[Found] = []
    for name in sections:
        wanted = normalise_heading(name)
        for position, (index, level, title) in enumerate(headings):
            if normalise_heading(title) != wanted:
                continue
            end = next((i for i, lvl, _ in headings[position + 1:] if lvl <= level), len(lines))
            found.append((name, (index,), (title, "\n".join(lines[index + 1:end]).strip())))
            break
    return _result(found, sections, [title for _, _, title in headings], path)


# --- both -------------------------------------------------------------------------------

def normalise_heading(text: str) -> str:
    """What a heading and a requested section name are compared by: case, numbering in
    front ("3.1", "IV.") and punctuation around it do not matter."""
    text = " ".join(text.split()).casefold()
    text = _EDGE_PUNCTUATION.sub("", text)
    text = _NUMBERING.sub("", text)
    return _EDGE_PUNCTUATION.sub("", text)


def _result(found: list[Found], sections: list[str], headings: list[str], path: str) -> dict[str, Any]:
    """The §2.3 answer: found sections in document order, the rest named as missing.

    `found` holds (requested name, position, (heading, text)); several names may find
    the same heading, which then appears once.
    """
    if not found:
        listed = ", ".join(repr(h) for h in headings[:30]) or "none"
        raise RefError(
            REF_NOT_FOUND,
            f"none of the sections {', '.join(repr(s) for s in sections)} is in {path!r}; its headings: {listed}",
        )
    answered = {name for name, _, _ in found}
    result: dict[str, str] = {}
    for _, _, (heading, text) in sorted(found, key=lambda item: item[1]):
        result.setdefault(heading, text)
    return {"sections": result, "missing_sections": [name for name in sections if name not in answered]}
