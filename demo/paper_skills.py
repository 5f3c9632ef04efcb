"""The §7.1 reading chain's builtin skills, which the demo's thesis workflow runs: a paper's
sentences become atoms typed by section and cue words (`extract_atoms`), claims are
validated (`validate_atoms`), and the atoms that passed go into the vault
(`integrate_atoms`). Registered with the builtin backend by `DemoConfig.ready()` (through
DEMO_SKILLS, demo/skills.py); deterministic and offline, as every builtin skill is.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agents.backends.base import BackendRequest
from agents.backends.builtin import Skill, as_number, count_tokens, data_inputs, stable_int, texts_in
from engine.tokens import DEFAULT_ENCODING

# --------------------------------------------------------------------------- papers → atoms

_SECTION_TYPES = {
    "methodology": {"methodology", "methods", "method", "approach", "model", "model architecture", "architecture",
                    "training", "experimental setup", "setup", "implementation", "materials and methods"},
    "evidence": {"results", "experiments", "evaluation", "findings", "empirical results", "model variations",
                 "ablation", "ablation study", "ablations"},
    "background": {"introduction", "background", "related work", "prior work", "motivation", "preliminaries"},
    "claim": {"abstract", "conclusion", "conclusions", "discussion", "summary", "future work", "limitations",
              "contributions"},
}
_SKIPPED_SECTIONS = {"references", "bibliography", "acknowledgements", "acknowledgments", "appendix"}
_KNOWN_SECTIONS = set().union(*_SECTION_TYPES.values(), _SKIPPED_SECTIONS)
_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.)\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[A-Z0-9])")
_DIGIT = re.compile(r"\d")
_METHOD_CUES = re.compile(r"\b(we (use|train|apply|compute|implement|follow)|is computed|computes|algorithm|procedure|"
                          r"encoder|decoder|layers?|optimi[sz]er|dataset)\b", re.I)
_BACKGROUND_CUES = re.compile(r"\b(has been|have been|previous(ly)?|prior work|traditionally|established|"
                              r"existing)\b", re.I)
_MIN_WORDS = 3
CONFIDENCE_FLOOR = 0.6


def _section_key(heading: str) -> str:
    return _NUMBERING.sub("", heading.strip()).strip().rstrip(":").strip().lower()


def _heading_of(line: str) -> tuple[str, int] | None:
    """(heading, markdown level or 0) when the line is a heading."""
    match = _MARKDOWN_HEADING.match(line)
    if match:
        level = len(line.lstrip()) - len(line.lstrip().lstrip("#"))
        heading = _NUMBERING.sub("", match.group(1)).strip()
        return (heading, level) if heading else None
    stripped = line.strip()
    if len(stripped) <= 60 and _section_key(stripped) in _KNOWN_SECTIONS:
        return _NUMBERING.sub("", stripped).strip().rstrip(":").strip(), 0
    return None


def _sentences(paragraph: str) -> list[str]:
    joined = " ".join(paragraph.split())
    return [s.strip() for s in _SENTENCE_END.split(joined) if len(s.split()) >= _MIN_WORDS]


def read_paper(text: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """(title, [(section, [sentence, ...]), ...]) of a paper's text.

    Headings are markdown headings or lines naming a usual section (Abstract, Introduction,
    Methodology, Results, Conclusion, …, numbered or not), as in text taken from a PDF.
    Lines within a paragraph are joined (a PDF line often ends mid-sentence). Text before
    the first heading is the title when it is one line without a full stop; a level-1
    markdown heading with nothing under it is the title too."""
    blocks: list[tuple[str | None, int, list[str]]] = [(None, 0, [])]
    for line in text.splitlines():
        found = _heading_of(line)
        if found is not None:
            blocks.append((found[0], found[1], []))
        else:
            blocks[-1][2].append(line.strip())

    title = ""
    sections: list[tuple[str, list[str]]] = []
    has_headings = len(blocks) > 1
    for heading, level, body in blocks:
        non_empty = [line for line in body if line]
        if heading is None:
            if not non_empty:
                continue
            if has_headings and len(non_empty) == 1 and not non_empty[0].endswith((".", "!", "?")):
                title = title or non_empty[0]
                continue
            heading = "Preamble" if has_headings else "Text"
        if not non_empty:
            if level == 1 and not title:
                title = heading
            continue
        if _section_key(heading) in _SKIPPED_SECTIONS:
            continue
        paragraphs, current = [], []
        for line in body:
            if line:
                current.append(line)
            elif current:
                paragraphs.append(" ".join(current))
                current = []
        if current:
            paragraphs.append(" ".join(current))
        sentences = [s for paragraph in paragraphs for s in _sentences(paragraph)]
        if sentences:
            sections.append((heading, sentences))
    return title, sections


def atom_type_of(section: str, sentence: str) -> str:
    """methodology / evidence by the section; a figure makes evidence; then the section's
    type (Introduction → background, Abstract/Conclusion → claim); else by cue words."""
    key = _section_key(section)
    if key in _SECTION_TYPES["methodology"]:
        return "methodology"
    if key in _SECTION_TYPES["evidence"] or _DIGIT.search(sentence):
        return "evidence"
    if key in _SECTION_TYPES["background"]:
        return "background"
    if key in _SECTION_TYPES["claim"]:
        return "claim"
    if _METHOD_CUES.search(sentence):
        return "methodology"
    if _BACKGROUND_CUES.search(sentence):
        return "background"
    return "claim"


def confidence_of(content: str) -> float:
    """A stable pseudo-confidence in 0.60–0.99 from the content's hash (not a judgement)."""
    return round(CONFIDENCE_FLOOR + (stable_int("confidence", content) % 40) / 100, 2)


def extract_atoms(request: BackendRequest) -> dict:
    inputs = data_inputs(request)
    texts = texts_in(inputs)
    title, sections, sentences = "", [], []
    for text in texts:
        found_title, found = read_paper(text)
        title = title or found_title
        for section, section_sentences in found:
            if section not in sections:
                sections.append(section)
            sentences += [(section, s) for s in section_sentences]
    # Stay within the output budget: a real model could not write more either.
    budget = max(200, request.max_output_tokens - 200)
    atoms: list[dict] = []
    for number, (section, sentence) in enumerate(sentences, start=1):
        atom = {
            "atom_id": f"atom_{number:03d}",
            "atom_type": atom_type_of(section, sentence),
            "content": sentence,
            "confidence": confidence_of(sentence),
            "source_section": section,
        }
        budget -= count_tokens(json.dumps(atom, ensure_ascii=False), request.encoding or DEFAULT_ENCODING) + 1
        if budget < 0:
            break
        atoms.append(atom)
    metadata: dict[str, Any] = {
        "sections": [s for s in sections if any(a["source_section"] == s for a in atoms)],
        "atom_count": len(atoms),
        "sources": list(inputs),
    }
    if title:
        metadata["title"] = title
    if len(atoms) < len(sentences):
        metadata["note"] = f"kept the first {len(atoms)} of {len(sentences)} sentences to fit {request.max_output_tokens} output tokens"
    if not sentences:
        metadata["note"] = "no text with sentences in the inputs"
    return {"atoms": atoms, "metadata": metadata}


# --------------------------------------------------------------------------- atoms in inputs

_CONTENT_KEYS = ("content", "content_summary", "content_preview", "claim", "text", "text_preview")


def _is_validation(item: dict) -> bool:
    return "atom_id" in item and isinstance(item.get("valid"), bool)


def _content_of(item: dict) -> str:
    for key in _CONTENT_KEYS:
        if isinstance(item.get(key), str):
            return item[key]
    return ""


def _walk_dicts(value: Any, take: Callable[[dict], bool]) -> None:
    """Visit the dicts in a value, outermost first; `take` returns True when it used a dict,
    and then its insides are not visited. Keys starting with `_` are not entered."""
    if isinstance(value, dict):
        if take(value):
            return
        for key, inner in value.items():
            if not str(key).startswith("_"):
                _walk_dicts(inner, take)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            _walk_dicts(inner, take)


def find_atoms(value: Any) -> list[dict]:
    """Atom-like dicts anywhere in a value (lists of atoms, §4.2 `*_summary` lists, §4.3
    previews), as {"atom_id", "atom_type", "content", "confidence"}; first of each id wins."""
    found: dict[str, dict] = {}

    def take(item: dict) -> bool:
        if _is_validation(item):
            return True
        content = _content_of(item)
        if "atom_id" in item or (content and not any(isinstance(v, (dict, list)) for v in item.values())):
            atom_id = str(item.get("atom_id") or f"item_{len(found) + 1:03d}")
            found.setdefault(atom_id, {
                "atom_id": atom_id,
                "atom_type": item.get("atom_type", ""),
                "content": content,
                "confidence": as_number(item.get("confidence")),
            })
            return True
        return False

    _walk_dicts(value, take)
    return list(found.values())


def find_validations(value: Any) -> dict[str, bool]:
    """atom_id → valid, from validation results anywhere in a value."""
    found: dict[str, bool] = {}

    def take(item: dict) -> bool:
        if _is_validation(item):
            found.setdefault(str(item["atom_id"]), item["valid"])
            return True
        return False

    _walk_dicts(value, take)
    return found


VALID_CONFIDENCE = 0.7


def _validation(atom: dict) -> dict:
    confidence = atom["confidence"]
    figure = re.search(r"\d+(?:[.,]\d+)*", atom["content"])
    if confidence is not None and confidence >= VALID_CONFIDENCE:
        valid, note = True, f"confidence {confidence:.2f} ≥ {VALID_CONFIDENCE:.2f}"
    elif figure:
        valid, note = True, f"states a figure ({figure.group(0)}) that can be checked"
    elif confidence is None:
        valid, note = False, "no confidence given and no figure to check it against"
    else:
        valid, note = False, f"confidence {confidence:.2f} < {VALID_CONFIDENCE:.2f} and no figure to check it against"
    return {"atom_id": atom["atom_id"], "valid": valid, "note": note}


def validate_atoms(request: BackendRequest) -> dict:
    inputs = data_inputs(request)
    atoms = find_atoms(inputs)
    if not atoms:  # plain text (a summary that became text): each sentence is a claim
        sentences = [s for text in texts_in(inputs) for _, found in read_paper(text)[1] for s in found]
        atoms = [{"atom_id": f"claim_{n:03d}", "atom_type": "claim", "content": s, "confidence": None}
                 for n, s in enumerate(sentences, start=1)]
    results = [_validation(atom) for atom in atoms]
    valid = sum(1 for result in results if result["valid"])
    return {"validation_results": results, "valid_count": valid, "invalid_count": len(results) - valid}


def integrate_atoms(request: BackendRequest) -> dict:
    inputs = data_inputs(request)
    verdicts = find_validations(inputs)
    integrated, rejected = [], []
    by_type: dict[str, int] = {}
    for atom in find_atoms(inputs):
        if verdicts.get(atom["atom_id"]) is False:
            rejected.append(atom["atom_id"])
            continue
        integrated.append(atom["atom_id"])
        kind = atom["atom_type"] or "unknown"
        by_type[kind] = by_type.get(kind, 0) + 1
    output: dict[str, Any] = {
        "integrated_atoms": integrated,
        "vault_size": len(integrated),
        "by_type": dict(sorted(by_type.items())),
        "rejected_atoms": rejected,
        "sources": list(inputs),
    }
    if request.inputs.get("_batch") is not None:
        output["batch"] = request.inputs["_batch"]
    return output


PAPER_SKILLS: dict[str, Skill] = {
    "extract_atoms": extract_atoms,
    "validate_atoms": validate_atoms,
    "integrate_atoms": integrate_atoms,
}
