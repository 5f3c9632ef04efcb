"""Reading `file` data references (data-transfer-protocol §2.3) inside a workspace."""
from __future__ import annotations

import io
import json

import pypdf
import pytest
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from demo.documents import paper_markdown, paper_pdf
from engine.context.errors import (
    REF_FILTER_ERROR,
    REF_FORMAT_ERROR,
    REF_NOT_FOUND,
    REF_PERMISSION_DENIED,
    RefError,
)
from engine.context.files import VIRTUAL_ROOT, normalise_heading, read_file, resolve_workspace_path


def write(root, relative, content):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def read(root, path, **fields):
    return read_file({"ref_type": "file", "path": path, **fields}, workspace_root=root)


def refused(root, path, **fields) -> RefError:
    with pytest.raises(RefError) as caught:
        read(root, path, **fields)
    return caught.value


def refused_on(root, path, *, host) -> RefError:
    """As a worker named `host` reads it."""
    with pytest.raises(RefError) as caught:
        read_file({"ref_type": "file", "path": path}, workspace_root=root, host=host)
    return caught.value


def pdf_without_outline(source: bytes) -> bytes:
    """The same pages, written again without the outline."""
    writer = pypdf.PdfWriter()
    for page in pypdf.PdfReader(io.BytesIO(source)).pages:
        writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_with_lines(*pages: list[str]) -> bytes:
    """A PDF whose pages hold the given lines of text, and no outline."""
    writer = pypdf.PdfWriter()
    for lines in pages:
        page = writer.add_blank_page(595, 842)
        font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                                 NameObject("/BaseFont"): NameObject("/Helvetica")})
        fonts = DictionaryObject({NameObject("/F1"): font})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
        rows = " ".join(f"({line}) Tj 0 -14 Td" for line in lines)
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 10 Tf 56 780 Td {rows} ET".encode())
        page.replace_contents(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --- paths ------------------------------------------------------------------------------

def test_it_maps_the_virtual_workspace_onto_the_root(tmp_path):
    assert VIRTUAL_ROOT == "/workspace"
    target = write(tmp_path, "papers/x.txt", "hello")
    assert resolve_workspace_path("/workspace/papers/x.txt", tmp_path) == target.resolve()
    assert read(tmp_path, "/workspace/papers/x.txt") == "hello"


def test_it_reads_relative_paths_under_the_root(tmp_path):
    target = write(tmp_path, "papers/x.txt", "hello")
    assert resolve_workspace_path("papers/x.txt", tmp_path) == target.resolve()
    assert resolve_workspace_path("./papers/x.txt", tmp_path) == target.resolve()
    assert read(tmp_path, "papers/x.txt") == "hello"


@pytest.mark.parametrize("path", [
    "../secret.txt",
    "papers/../../secret.txt",
    "/workspace/../secret.txt",
    "/etc/passwd",
    "/workspacefoo/x.txt",
    "papers/x\x00.txt",
])
def test_it_refuses_paths_that_leave_the_workspace(tmp_path, path):
    root = tmp_path / "root"
    root.mkdir()
    write(tmp_path, "secret.txt", "secret")
    with pytest.raises(RefError) as caught:
        resolve_workspace_path(path, root)
    assert caught.value.code == REF_PERMISSION_DENIED
    assert repr(path) in caught.value.message
    assert str(tmp_path) not in caught.value.message


def test_it_refuses_a_symlinked_file_pointing_outside(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = write(tmp_path, "secret.txt", "secret")
    (root / "link.txt").symlink_to(outside)
    error = refused(root, "/workspace/link.txt")
    assert error.code == REF_PERMISSION_DENIED
    assert "the workspace" in error.message and str(tmp_path) not in error.message


def test_it_refuses_a_file_under_a_symlinked_directory_pointing_outside(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    write(tmp_path, "elsewhere/secret.txt", "secret")
    (root / "papers").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert refused(root, "papers/secret.txt").code == REF_PERMISSION_DENIED
    # Even when the file is not there, the directory alone gives it away.
    assert refused(root, "papers/missing.txt").code == REF_PERMISSION_DENIED


def test_it_follows_a_symlink_that_stays_inside_the_workspace(tmp_path):
    write(tmp_path, "papers/real.md", "# Real")
    (tmp_path / "alias.md").symlink_to(tmp_path / "papers" / "real.md")
    (tmp_path / "docs").symlink_to(tmp_path / "papers", target_is_directory=True)
    assert read(tmp_path, "alias.md") == "# Real"
    assert read(tmp_path, "/workspace/docs/real.md") == "# Real"


def test_it_works_when_the_root_itself_is_a_symlink(tmp_path):
    write(tmp_path, "real_root/a.txt", "inside")
    (tmp_path / "root_link").symlink_to(tmp_path / "real_root", target_is_directory=True)
    assert read(tmp_path / "root_link", "a.txt") == "inside"


# --- formats ----------------------------------------------------------------------------

def test_it_reads_text_and_markdown_as_str(tmp_path):
    write(tmp_path, "notes.txt", "plain text\n")
    write(tmp_path, "paper.md", paper_markdown())
    assert read(tmp_path, "notes.txt") == "plain text\n"
    assert read(tmp_path, "paper.md") == paper_markdown()


def test_it_decodes_with_the_given_encoding(tmp_path):
    write(tmp_path, "latin.txt", "café".encode("latin-1"))
    write(tmp_path, "bom.txt", "\ufeffhello".encode("utf-8"))
    assert read(tmp_path, "latin.txt", encoding="latin-1") == "café"
    assert read(tmp_path, "bom.txt") == "hello"


def test_it_parses_json(tmp_path):
    write(tmp_path, "data.json", json.dumps({"atoms": [{"atom_id": "a1"}]}))
    assert read(tmp_path, "/workspace/data.json") == {"atoms": [{"atom_id": "a1"}]}


def test_it_reads_pdf_text_page_by_page(tmp_path):
    write(tmp_path, "papers/transformer.pdf", paper_pdf())
    text = read(tmp_path, "/workspace/papers/transformer.pdf", format="pdf")
    assert text.startswith("Attention Is All You Need (a short reading copy)\nAbstract\n")
    assert "eight GPUs." in text
    assert text.count("\n\n") == 4  # five pages, joined by blank lines


def test_it_prefers_the_declared_format_over_the_extension(tmp_path):
    write(tmp_path, "data.txt", '{"a": 1}')
    assert read(tmp_path, "data.txt", format="json") == {"a": 1}
    assert read(tmp_path, "data.txt") == '{"a": 1}'


def test_it_refuses_formats_it_does_not_know(tmp_path):
    write(tmp_path, "table.csv", "a,b")
    assert refused(tmp_path, "table.csv").code == REF_FORMAT_ERROR
    assert refused(tmp_path, "table.csv", format="docx").code == REF_FORMAT_ERROR


# --- failures ---------------------------------------------------------------------------

def test_it_reports_a_missing_file_as_not_found(tmp_path):
    error = refused(tmp_path, "/workspace/papers/supplementary.md", format="md")
    assert error.code == REF_NOT_FOUND
    assert "/workspace/papers/supplementary.md" in error.message
    assert str(tmp_path) not in error.message


def test_it_names_the_host_that_cannot_see_a_missing_file(tmp_path):
    error = refused_on(tmp_path, "papers/x.pdf", host="worker@w1")
    assert error.code == REF_NOT_FOUND
    assert error.message == ("'papers/x.pdf' does not exist in the workspace on host worker@w1 "
                             "(the workspace must be one folder shared by every worker)")


def test_it_reports_a_workspace_folder_missing_on_the_host_as_not_found(tmp_path):
    unmounted = tmp_path / "share-not-mounted"
    error = refused_on(unmounted, "/workspace/papers/x.md", host="worker@w2")
    assert error.code == REF_NOT_FOUND
    assert "the workspace folder does not exist on host worker@w2" in error.message
    assert "'/workspace/papers/x.md'" in error.message and str(tmp_path) not in error.message
    (tmp_path / "a-file").write_text("not a folder")
    assert refused_on(tmp_path / "a-file", "x.txt", host="worker@w2").code == REF_NOT_FOUND


def test_it_reports_a_directory_as_not_found(tmp_path):
    (tmp_path / "papers.md").mkdir()
    assert refused(tmp_path, "papers.md").code == REF_NOT_FOUND
    assert refused(tmp_path, "/workspace", format="txt").code == REF_NOT_FOUND


def test_it_refuses_files_larger_than_the_limit(tmp_path):
    write(tmp_path, "big.txt", "x" * 101)
    with pytest.raises(RefError) as caught:
        read_file({"path": "big.txt"}, workspace_root=tmp_path, max_bytes=100)
    assert caught.value.code == REF_FORMAT_ERROR
    assert "101 bytes" in caught.value.message


def test_it_hands_back_invalid_json_as_text(tmp_path):
    write(tmp_path, "broken.json", '{"a": 1,\n "b": }')
    error = refused(tmp_path, "broken.json")
    assert error.code == REF_FORMAT_ERROR
    assert "line 2 column 7" in error.message
    assert error.convertible == '{"a": 1,\n "b": }'


def test_it_hands_back_a_fake_pdf_as_text(tmp_path):
    write(tmp_path, "fake.pdf", "just some text")
    error = refused(tmp_path, "fake.pdf")
    assert error.code == REF_FORMAT_ERROR
    assert error.convertible == "just some text"


def test_it_gives_nothing_to_convert_for_binary_that_is_not_a_pdf(tmp_path):
    write(tmp_path, "noise.pdf", b"\xff\xfe\x00\x81 binary")
    error = refused(tmp_path, "noise.pdf")
    assert error.code == REF_FORMAT_ERROR
    assert error.convertible is None


def test_it_refuses_a_broken_pdf(tmp_path):
    write(tmp_path, "broken.pdf", b"%PDF-1.4\nthis is not really a pdf at all\n")
    error = refused(tmp_path, "broken.pdf")
    assert error.code == REF_FORMAT_ERROR
    assert error.convertible.startswith("%PDF-1.4")


def test_it_refuses_unknown_and_wrong_encodings(tmp_path):
    write(tmp_path, "latin.txt", "café".encode("latin-1"))
    assert refused(tmp_path, "latin.txt", encoding="no-such-codec").code == REF_FORMAT_ERROR
    assert refused(tmp_path, "latin.txt", encoding="base64").code == REF_FORMAT_ERROR
    error = refused(tmp_path, "latin.txt")
    assert error.code == REF_FORMAT_ERROR
    assert "utf-8" in error.message


def test_it_refuses_sections_for_text_and_json(tmp_path):
    write(tmp_path, "notes.txt", "Abstract\ntext")
    write(tmp_path, "data.json", "{}")
    for path in ("notes.txt", "data.json"):
        error = refused(tmp_path, path, sections=["abstract"])
        assert error.code == REF_FORMAT_ERROR
        assert "sections need md or pdf" in error.message


def test_it_refuses_sections_that_are_not_a_list_of_names(tmp_path):
    write(tmp_path, "paper.md", paper_markdown())
    assert refused(tmp_path, "paper.md", sections="abstract").code == REF_FILTER_ERROR
    assert refused(tmp_path, "paper.md", sections=["abstract", " -- "]).code == REF_FILTER_ERROR


# --- sections ---------------------------------------------------------------------------

def test_it_normalises_headings_for_matching():
    assert normalise_heading("3.1 Methodology") == "methodology"
    assert normalise_heading("  **IV. Results:** ") == "results"
    assert normalise_heading("2) Related   Work") == "related work"
    assert normalise_heading("3D Vision") == "3d vision"


def test_it_extracts_markdown_sections_in_document_order(tmp_path):
    write(tmp_path, "paper.md", paper_markdown())
    result = read(tmp_path, "paper.md", sections=["methodology", "Abstract", "introduction"])
    assert list(result["sections"]) == ["Abstract", "Introduction", "Methodology"]
    assert result["sections"]["Abstract"].startswith("The dominant sequence transduction models")
    assert result["sections"]["Methodology"].endswith("sine and cosine functions of different frequencies.")
    assert result["missing_sections"] == []


def test_it_keeps_subsections_and_ignores_headings_in_fenced_code(tmp_path):
    write(tmp_path, "paper.md", "\n".join([
        "# Title",
        "## 1. Introduction",
        "Intro text.",
        "## 3.1 Methodology",
        "Method text.",
        "### Attention",
        "Attention text.",
        "```python",
        "# Results",
        "print('not a heading')",
        "```",
        "~~~",
        "## Conclusion",
        "~~~",
        "#### Deep detail ####",
        "Detail.",
        "## Results",
        "Result text.",
    ]))
    result = read(tmp_path, "paper.md", sections=["methodology", "results", "conclusion"])
    method = result["sections"]["3.1 Methodology"]
    assert method.startswith("Method text.\n### Attention\nAttention text.")
    assert "# Results" in method and "## Conclusion" in method and "Detail." in method
    assert "Result text." not in method
    assert result["sections"]["Results"] == "Result text."
    assert result["missing_sections"] == ["conclusion"]
    detail = read(tmp_path, "paper.md", sections=["deep detail"])
    assert detail["sections"] == {"Deep detail": "Detail."}


def test_it_extracts_pdf_sections_by_outline(tmp_path):
    write(tmp_path, "papers/transformer.pdf", paper_pdf())
    result = read(tmp_path, "/workspace/papers/transformer.pdf",
                  sections=["abstract", "introduction", "methodology"])
    assert list(result["sections"]) == ["Abstract", "Introduction", "Methodology"]
    abstract = result["sections"]["Abstract"]
    assert abstract.startswith("The dominant sequence transduction models")
    assert "Attention Is All You Need" not in abstract  # the title line sits above the heading
    assert "Recurrent models" not in abstract
    assert result["sections"]["Methodology"].startswith("The encoder maps an input sequence")
    assert "BLEU" not in result["sections"]["Methodology"]
    assert result["missing_sections"] == []


def test_it_keeps_pdf_sub_items_inside_their_section(tmp_path):
    writer = pypdf.PdfWriter()
    for page in pypdf.PdfReader(io.BytesIO(paper_pdf())).pages:
        writer.add_page(page)
    writer.add_outline_item(title="1 Abstract", page_number=0)
    method = writer.add_outline_item(title="2 Methodology", page_number=2)
    writer.add_outline_item(title="2.1 Results", page_number=3, parent=method)
    writer.add_outline_item(title="3 Conclusion", page_number=4)
    out = io.BytesIO()
    writer.write(out)
    write(tmp_path, "nested.pdf", out.getvalue())
    result = read(tmp_path, "nested.pdf", sections=["Methodology", "results"])
    assert list(result["sections"]) == ["2 Methodology", "2.1 Results"]
    methodology = result["sections"]["2 Methodology"]
    assert methodology.startswith("The encoder maps") and "28.4 BLEU" in methodology
    assert "We plan to apply" not in methodology  # stops before the conclusion page
    assert result["sections"]["2.1 Results"].startswith("On WMT 2014")


def test_it_finds_pdf_sections_in_the_text_without_an_outline(tmp_path):
    write(tmp_path, "plain.pdf", pdf_without_outline(paper_pdf()))
    result = read(tmp_path, "plain.pdf", sections=["Abstract", "results", "page 2"])
    assert list(result["sections"]) == ["Abstract", "page 2", "Results"]
    assert result["sections"]["Abstract"].startswith("The dominant sequence")
    assert "Recurrent models" not in result["sections"]["Abstract"]  # "Introduction" ends it
    assert result["sections"]["Results"].startswith("On WMT 2014")
    assert "Conclusion" not in result["sections"]["Results"]
    assert result["sections"]["page 2"].startswith("Introduction\nRecurrent models")


def test_it_ends_a_text_section_at_another_requested_or_numbered_heading(tmp_path):
    write(tmp_path, "notes.pdf", pdf_with_lines(
        ["1 Overview", "Overview text.", "Key Ideas", "Idea text.", "3 Related Work", "Related text."],
    ))
    result = read(tmp_path, "notes.pdf", sections=["overview", "key ideas"])
    assert result["sections"] == {"1 Overview": "Overview text.", "Key Ideas": "Idea text."}
    related = read(tmp_path, "notes.pdf", sections=["key ideas"])
    assert related["sections"] == {"Key Ideas": "Idea text."}  # "3 Related Work" looks like a heading


def test_it_lists_missing_sections_next_to_found_ones(tmp_path):
    write(tmp_path, "paper.pdf", paper_pdf())
    result = read(tmp_path, "paper.pdf", sections=["abstract", "appendix", "page 9"])
    assert list(result["sections"]) == ["Abstract"]
    assert result["missing_sections"] == ["appendix", "page 9"]


def test_it_reports_not_found_when_no_section_is_there(tmp_path):
    write(tmp_path, "paper.md", paper_markdown())
    write(tmp_path, "paper.pdf", paper_pdf())
    md_error = refused(tmp_path, "paper.md", sections=["appendix", "references"])
    assert md_error.code == REF_NOT_FOUND
    assert "'appendix'" in md_error.message and "'Methodology'" in md_error.message
    pdf_error = refused(tmp_path, "paper.pdf", sections=["appendix"])
    assert pdf_error.code == REF_NOT_FOUND
    assert "'Conclusion'" in pdf_error.message
