"""The demo data: four workflows that between them show everything the inspection pages draw.

- thesis_reading — the task chain of data-transfer-protocol §7.1 (Scholar → Validator →
  Knowledge_Vault). Knowledge_Vault's context limit is small on purpose, so its inputs
  overflow and are trimmed and summarised; its db_query input is batched; and it reads a
  supplementary file that does not exist, so that reference fails and falls back.
- parallel_analysis — parallel-agent-compression: three analyzers in parallel feed a
  synthesizer with `compress: true`; a second run hits the compression cache.
- release_review — a state machine: draft ⇄ review loops on a condition, publishing
  fails, is retried and falls back to another agent, and the compliance check escalates
  to a person.
- the agents of a Game-of-24 Tree-of-Thoughts search.

All agents use the offline `builtin` backend; the skill names in `capabilities.skills`
are the builtin behaviours each agent performs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

CREATED = {"created_at": "2026-02-03T10:30:00Z", "updated_at": "2026-02-03T10:30:00Z", "created_by": "demo"}


def _agent(agent_id: str, name: str, *, role: str = "", type: str = "business", skills: list[str],
           domains: list[str] | None = None, prompt: str = "", limits: dict | None = None,
           parent: str | None = None, constraints: list[str] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "agent_id": agent_id,
        "name": name,
        "version": "1.0.0",
        "type": type,
        "status": "active",
        "prompt_config": {
            "system_prompt": prompt or f"You are {name}.",
            "role_play": name,
            "task_context": "Switchyard demo",
            "thinking_process": "Work step by step and state what you relied on.",
            "output_constraint": "Reply with one JSON object.",
        },
        "capabilities": {"skills": skills, "tools": [], "knowledge_domains": domains or []},
        "constraints": constraints or [],
        "metadata": CREATED,
        "runtime": {"backend": "builtin", "model": "", "encoding": "cl100k_base", "role": role},
    }
    if parent:
        document["lineage"] = {"parent_id": parent}
    if limits:
        document["context_limits"] = limits
    return document


AGENTS = [
    _agent("Orchestrator", "Orchestrator", role="Orchestrator", type="meta", skills=["plan", "review_escalation"],
           prompt="You plan work, watch runs and take escalations."),
    _agent("Scholar", "Scholar", role="Scholar", skills=["extract_atoms"], domains=["deep_learning"],
           prompt="You read papers and extract knowledge atoms (claims, evidence, methodology, background)."),
    _agent("Validator", "Validator", role="Validator", skills=["validate_atoms"], domains=["deep_learning"],
           prompt="You check each claim against its evidence."),
    # A deliberately small window: its inputs overflow, so trimming and summarising show.
    _agent("Knowledge_Vault", "Knowledge Vault", role="Knowledge_Vault", skills=["integrate_atoms"],
           domains=["deep_learning"], prompt="You integrate validated atoms into the knowledge base.",
           limits={"max_input_tokens": 6000, "max_output_tokens": 2000, "reserved_for_system_prompt": 1000,
                   "reserved_for_instructions": 500, "safety_margin": 0.9}),
    _agent("Code_Analyzer", "Code Analyzer", role="Code", skills=["analyze_code"], prompt="You analyse code structure."),
    _agent("Docs_Analyzer", "Docs Analyzer", skills=["analyze_docs"], prompt="You analyse documentation coverage."),
    _agent("Test_Analyzer", "Test Analyzer", skills=["analyze_tests"], prompt="You analyse test suites."),
    _agent("Report_Synthesizer", "Report Synthesizer", role="Strategic_Critic", skills=["synthesize_report"],
           prompt="You combine the analyses into one report."),
    _agent("Drafter", "Drafter", skills=["draft"], prompt="You draft release notes."),
    _agent("Reviewer", "Reviewer", role="Strategic_Critic", skills=["review"],
           prompt="You review drafts and answer accept or revise."),
    # Fails on its first attempts, so the run retries it and then falls back.
    _agent("Publisher", "Publisher", skills=["publish_unreliable"], prompt="You publish release notes."),
    _agent("Backup_Publisher", "Backup Publisher", skills=["publish", "compliance_check"], parent="Publisher",
           prompt="You publish release notes when the main publisher cannot.",
           constraints=["publish only reviewed drafts"]),
    # Needs a skill nobody in the workflow has, so it escalates to a person.
    _agent("Compliance_Checker", "Compliance Checker", skills=["legal_review"],
           prompt="You check release notes for legal problems."),
    _agent("ToT_Orchestrator", "ToT Orchestrator", type="meta", skills=["tot_orchestrate"]),
    _agent("ToT_Decomposer", "ToT Decomposer", skills=["game24_decompose"]),
    _agent("ToT_Generator", "ToT Generator", skills=["game24_generate"]),
    _agent("ToT_Evaluator", "ToT Evaluator", skills=["game24_evaluate"]),
    _agent("ToT_Explorer", "ToT Explorer", type="meta", skills=["tot_explore"]),
    _agent("ToT_Synthesizer", "ToT Synthesizer", skills=["game24_synthesize"]),
]

ATOM_SCHEMA = {
    "type": "object",
    "required": ["atoms"],
    "properties": {
        "atoms": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["atom_id", "atom_type", "content", "confidence"],
                "properties": {
                    "atom_id": {"type": "string"},
                    "atom_type": {"enum": ["claim", "evidence", "methodology", "background"]},
                    "content": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                },
            },
        }
    },
}

BLUEPRINT = {
    "blueprint_id": "thesis_reading_system",
    "name": "Thesis reading system",
    "version": "1.0.0",
    "domain": "deep_learning",
    "agents": [
        {"agent_ref": "Scholar", "source": "reuse", "role_in_workflow": "extracts knowledge atoms from papers"},
        {"agent_ref": "Validator", "source": "reuse", "role_in_workflow": "validates claims against evidence"},
        {"agent_ref": "Knowledge_Vault", "source": "new", "role_in_workflow": "integrates atoms into the vault"},
    ],
    "contracts": {
        "Scholar → Validator": {"data_type": "knowledge_atoms", "schema": ATOM_SCHEMA},
        "Validator → Knowledge_Vault": {
            "data_type": "validation_results",
            "schema": {"type": "object", "required": ["validation_results"],
                       "properties": {"validation_results": {"type": "array"}}},
        },
    },
}

# data-transfer-protocol §7.1, as written, plus the demo's own additions on the last task.
THESIS_CHAIN = {
    "workflow_id": "thesis_reading",
    "name": "Thesis reading (task chain §7.1)",
    "task_chain": [
        {
            "task_id": "task_scholar_001",
            "agent": "Scholar",
            "input": {"data_references": [{"ref_type": "file", "path": "/workspace/papers/transformer.pdf", "format": "pdf"}]},
            "output_schema": "knowledge_atoms",
        },
        {
            "task_id": "task_validator_001",
            "agent": "Validator",
            "input": {
                "data_references": [
                    {"ref_type": "task_output", "task_id": "task_scholar_001",
                     "path": "$.atoms[?(@.atom_type=='claim')]", "transform": "summary"}
                ],
                "transfer_config": {"mode": "summary", "max_tokens": 5000, "priority_filter": [1, 2]},
            },
        },
        {
            "task_id": "task_vault_001",
            "agent": "Knowledge_Vault",
            "input": {
                "data_references": [
                    {"ref_type": "task_output", "task_id": "task_scholar_001", "path": "$.atoms"},
                    {"ref_type": "task_output", "task_id": "task_validator_001", "path": "$.validation_results"},
                    {"ref_type": "db_query", "table": "knowledge_atoms",
                     "conditions": [{"field": "domain", "operator": "eq", "value": "deep_learning"}], "limit": 100,
                     "batch_config": {"enabled": True, "batch_size_tokens": 1500, "overlap_tokens": 100,
                                      "max_batches": 10, "aggregation_strategy": "merge",
                                      "batch_priority": "importance"}},
                    {"ref_type": "file", "path": "/workspace/papers/supplementary.md", "format": "md",
                     "fallback_config": {"strategy": "use_default", "default_value": {"note": "no supplementary material"},
                                         "on_final_failure": "skip"}},
                ],
                "transfer_config": {"mode": "reference", "inline_preview_count": 5},
            },
        },
    ],
}

PARALLEL_ANALYSIS = {
    "workflow_id": "parallel_analysis",
    "name": "Parallel analysis with compression",
    "topology": "dag",
    "nodes": [
        {"id": "task_a", "agent_ref": "Code_Analyzer", "input_mapping": {"repository": "$.input.repository"}},
        {"id": "task_b", "agent_ref": "Docs_Analyzer", "input_mapping": {"repository": "$.input.repository"}},
        {"id": "task_c", "agent_ref": "Test_Analyzer", "input_mapping": {"repository": "$.input.repository"}},
        {"id": "task_d", "agent_ref": "Report_Synthesizer",
         "input_mapping": {"data_references": [
             {"ref_type": "task_output", "task_id": "task_a"},
             {"ref_type": "task_output", "task_id": "task_b"},
             {"ref_type": "task_output", "task_id": "task_c"}]},
         "compress": True, "compress_model": "flash", "compress_ratio": 0.3},
    ],
    "transitions": [
        {"from": "task_a", "to": "task_d"},
        {"from": "task_b", "to": "task_d"},
        {"from": "task_c", "to": "task_d"},
    ],
    "error_handling": {"retry_count": 1, "fallback_agent": None, "escalate_to": "Orchestrator"},
}

RELEASE_REVIEW = {
    "workflow_id": "release_review",
    "name": "Release review (state machine)",
    "topology": "state_machine",
    "nodes": [
        {"id": "draft", "agent_ref": "Drafter", "input_mapping": {"topic": "$.input.topic", "feedback": "$.state.feedback"},
         "output_mapping": {"draft": "$.text"}},
        {"id": "review", "agent_ref": "Reviewer", "input_mapping": {"draft": "$.state.draft"},
         "output_mapping": {"feedback": "$.comments", "verdict": "$.verdict"}},
        {"id": "publish", "agent_ref": "Publisher", "input_mapping": {"draft": "$.state.draft"},
         "output_mapping": {"published_at": "$.published_at"}},
        {"id": "compliance", "agent_ref": "Compliance_Checker", "input_mapping": {"draft": "$.state.draft"}},
    ],
    "transitions": [
        {"from": "draft", "to": "review"},
        {"from": "review", "to": "draft", "condition": "output.verdict == 'revise' and state.rounds < 3"},
        {"from": "review", "to": "publish", "condition": "output.verdict == 'accept' or state.rounds >= 3"},
        {"from": "publish", "to": "compliance", "on_failure": "escalate"},
    ],
    "error_handling": {"retry_count": 2, "fallback_agent": "Backup_Publisher", "escalate_to": "Orchestrator"},
    "limits": {"max_steps": 12, "max_wall_seconds": 600},
}

DOCUMENTS = [*AGENTS, BLUEPRINT, THESIS_CHAIN, PARALLEL_ANALYSIS, RELEASE_REVIEW]

PAPER_TITLE = "Attention Is All You Need (a short reading copy)"
PAPER_SECTIONS = [
    ("Abstract", [
        "The dominant sequence transduction models are based on recurrent or convolutional networks.",
        "We propose the Transformer, a network architecture based solely on attention mechanisms.",
        "Experiments on two translation tasks show these models are superior in quality",
        "while being more parallelizable and requiring significantly less time to train.",
    ]),
    ("Introduction", [
        "Recurrent models factor computation along the symbol positions of the input and output.",
        "This sequential nature precludes parallelization within training examples.",
        "Attention mechanisms allow modeling of dependencies without regard to their distance.",
        "The Transformer relies entirely on self-attention to compute representations.",
    ]),
    ("Methodology", [
        "The encoder maps an input sequence to a sequence of continuous representations.",
        "Scaled dot-product attention computes softmax(Q K^T / sqrt(d_k)) V.",
        "Multi-head attention runs h = 8 attention layers in parallel.",
        "Positional encodings use sine and cosine functions of different frequencies.",
    ]),
    ("Results", [
        "On WMT 2014 English-to-German the big model reaches 28.4 BLEU.",
        "On WMT 2014 English-to-French it reaches 41.8 BLEU after 3.5 days on eight GPUs.",
        "Training cost is a small fraction of the best models from the literature.",
    ]),
    ("Conclusion", [
        "The Transformer is the first transduction model relying entirely on self-attention.",
        "We plan to apply attention-based models to other tasks and modalities.",
    ]),
]


def paper_markdown() -> str:
    parts = [f"# {PAPER_TITLE}\n"]
    for heading, lines in PAPER_SECTIONS:
        parts.append(f"\n## {heading}\n\n" + " ".join(lines) + "\n")
    return "".join(parts)


def _pdf_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def paper_pdf() -> bytes:
    """A small valid PDF: one page per section, with an outline entry for each.

    Written by hand so the demo needs no PDF-writing dependency; pypdf reads it back.
    """
    pages = [(PAPER_TITLE, PAPER_SECTIONS[0][0], PAPER_SECTIONS[0][1])] + [
        ("", heading, lines) for heading, lines in PAPER_SECTIONS[1:]
    ]
    objects: list[bytes] = []
    count = len(pages)
    # 1 catalog, 2 pages, 3 font, 4 outlines, then per page: page, contents, outline item.
    first = 5
    kids = " ".join(f"{first + 3 * i} 0 R" for i in range(count))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R /Outlines 4 0 R /PageMode /UseOutlines >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(f"<< /Type /Outlines /First {first + 2} 0 R /Last {first + 3 * (count - 1) + 2} 0 R /Count {count} >>".encode())
    for i, (title, heading, lines) in enumerate(pages):
        page, contents, item = first + 3 * i, first + 3 * i + 1, first + 3 * i + 2
        rows = ([f"/F1 16 Tf ({_pdf_text(title)}) Tj 0 -28 Td"] if title else [])
        rows += [f"/F1 13 Tf ({_pdf_text(heading)}) Tj 0 -20 Td /F1 10 Tf"]
        rows += [f"({_pdf_text(line)}) Tj 0 -14 Td" for line in lines]
        stream = ("BT 56 780 Td " + " ".join(rows) + " ET").encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {contents} 0 R "
            f"/Resources << /Font << /F1 3 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        links = (f"/Prev {item - 3} 0 R " if i else "") + (f"/Next {item + 3} 0 R " if i < count - 1 else "")
        objects.append(f"<< /Title ({_pdf_text(heading)}) /Parent 4 0 R {links}/Dest [{page} 0 R /Fit] >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def write_workspace_files(workspace: Path) -> list[Path]:
    """Write the sample paper into the workspace; files already up to date are left alone."""
    written = []
    for relative, content in (("papers/transformer.pdf", paper_pdf()), ("papers/transformer.md", paper_markdown().encode())):
        path = workspace / relative
        if path.exists() and path.read_bytes() == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written
