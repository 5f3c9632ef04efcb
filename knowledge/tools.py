"""The builtin tools over the knowledge base: `knowledge_search` (atoms whose content holds
the terms asked for) and `db_query` (a `db_query` data reference's read of the public
tables, with its caps and its time limit: knowledge/registry.py)."""
from __future__ import annotations

import re
from typing import Annotated, Any

from django.conf import settings
from django.db.models import Q
from pydantic import Field

from engine.context.errors import RefError
from engine.context.resolution import CappedRows
from engine.shapes import FilterCondition, Omittable, OrderBy, Shape, between
from knowledge.models import KnowledgeAtom
from knowledge.registry import MAX_LIMIT, run_db_query
from tools.catalogue import register, tool_schema
from tools.errors import TOOL_ERROR, ToolError

SEARCH_LIMIT = 5
MAX_SEARCH_LIMIT = 20
MAX_TERMS = 8
CANDIDATES = 500  # atoms read to rank, at most
_WORD = re.compile(r"[^\W_]{3,}")
STOP_WORDS = frozenset("the and for with that this from what which how are was were has have been into about "
                       "over under their there these those than then them they its our your".split())

class SearchArguments(Shape):
    query: Annotated[str, Field(min_length=1, max_length=1000,
                                description="Words to look for; atoms holding more of them come first")]
    domain: Omittable[Annotated[str, Field(description="Only atoms of this domain")]] = None
    atom_type: Omittable[KnowledgeAtom.AtomType] = None
    limit: Omittable[Annotated[int, between(1, MAX_SEARCH_LIMIT)]] = None


class DbQueryArguments(Shape):
    table: Annotated[str, Field(min_length=1, description="papers, knowledge_atoms, relations or quality_records")]
    conditions: Omittable[list[FilterCondition]] = None
    select: Omittable[Annotated[list[str], Field(min_length=1)]] = None
    order_by: Omittable[OrderBy] = None
    limit: Omittable[Annotated[int, between(1, MAX_LIMIT)]] = None


def search_terms(query: str) -> list[str]:
    """The words of `query` searched for: three letters or more, not stop words, lower case,
    each once, at most MAX_TERMS."""
    words = [word.lower() for word in _WORD.findall(query)]
    return list(dict.fromkeys(word for word in words if word not in STOP_WORDS))[:MAX_TERMS]


def knowledge_search(arguments: dict[str, Any]) -> dict[str, Any]:
    """The atoms holding the most of the query's terms (case-insensitive), then the most
    confident, then by id: the same question always gets the same answer."""
    terms = search_terms(arguments["query"])
    if not terms:
        raise ToolError("the query has no word of three letters or more to search for", code=TOOL_ERROR)
    atoms = KnowledgeAtom.objects.select_related("paper")
    any_term = Q()
    for term in terms:
        any_term |= Q(content__icontains=term)
    atoms = atoms.filter(any_term)
    if arguments.get("domain"):
        atoms = atoms.filter(domain=arguments["domain"])
    if arguments.get("atom_type"):
        atoms = atoms.filter(atom_type=arguments["atom_type"])
    ranked = []
    for atom in atoms.order_by("atom_id")[:CANDIDATES]:
        text = atom.content.lower()
        matched = [term for term in terms if term in text]
        if matched:  # icontains folds case as the database does; this is the Python fold
            ranked.append((-len(matched), -atom.confidence, atom.atom_id, atom, matched))
    ranked.sort(key=lambda row: row[:3])
    limit = arguments.get("limit") or SEARCH_LIMIT
    return {
        "query": arguments["query"],
        "terms": terms,
        "found": len(ranked),
        "atoms": [{"atom_id": atom.atom_id, "paper_id": atom.paper.paper_id, "atom_type": atom.atom_type,
                   "content": atom.content, "confidence": atom.confidence, "domain": atom.domain,
                   "matched_terms": matched} for *_, atom, matched in ranked[:limit]],
    }


def db_query(arguments: dict[str, Any]) -> dict[str, Any]:
    """The rows, as a `db_query` reference would read them; a cut says how many were left out."""
    try:
        rows = run_db_query({"type": "db_query", **arguments}, timeout_ms=settings.REF_DB_TIMEOUT_MS or None)
    except RefError as error:
        raise ToolError(f"{error.code}: {error}", code=TOOL_ERROR) from None
    if isinstance(rows, CappedRows):
        return {"rows": rows.rows, **rows.record()}
    return {"rows": rows}


def register_tools() -> None:
    register("knowledge_search", description="Search the knowledge atoms (claims, evidence, methods …) extracted "
                                             "from the papers for words; the best matches first.",
             input_schema=tool_schema(SearchArguments), function=knowledge_search)
    register("db_query", description="Read rows of a public table of the knowledge base (papers, knowledge_atoms, "
                                     "relations, quality_records) with conditions, a selection and an order.",
             input_schema=tool_schema(DbQueryArguments), function=db_query)
