"""The demo data: workflows that between them show everything the inspection pages draw.

- thesis_reading — the task chain of data-transfer-protocol §7.1 (Scholar → Validator →
  Knowledge_Vault). Knowledge_Vault's context limit is small on purpose, so its inputs
  overflow and are trimmed and summarised; its db_query input is batched; and it reads a
  supplementary file that does not exist, so that reference fails and falls back.
- parallel_analysis — parallel-agent-compression: three analyzers in parallel feed a
  synthesizer with `compress: true`; a second run hits the compression cache.
- release_review — a state machine: draft ⇄ review loops on a condition, an approver's
  gate approves (or edits) the draft or rejects it back to the drafter, publishing fails,
  is retried and falls back to another agent, and the compliance check escalates to a person.
- game24 — a Tree-of-Thoughts search for the Game of 24 (tot-protocol) in one node, its
  roles played by the ToT agents.
- research_with_tools / research_without_tools — an agent that acts: the researcher answers a
  question by calling builtin.knowledge_search; the same node with an agent that lacks the
  tool fails with CAPABILITY_GAP, which raises a derive request for a child that has it.
- the knowledge base the db_query input (and knowledge_search) reads: the sample paper, some seventy knowledge atoms
  extracted from it, a few relations between them and quality records.

All agents use the offline `builtin` backend; the skill names in `capabilities.skills`
are the builtin behaviours each agent performs (the demo-only ones are in demo/skills.py).
This module is data only: demo/services.py loads it.
"""
from __future__ import annotations

from typing import Any

CREATED = {"created_at": "2026-02-03T10:30:00Z", "updated_at": "2026-02-03T10:30:00Z", "created_by": "demo"}


def _agent(agent_id: str, name: str, *, role: str = "", type: str = "business", skills: list[str],
           domains: list[str] | None = None, prompt: str = "", limits: dict | None = None,
           parent: str | None = None, constraints: list[str] | None = None,
           tools: list[str] | None = None) -> dict[str, Any]:
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
        "capabilities": {"skills": skills, "tools": tools or [], "knowledge_domains": domains or []},
        "constraints": constraints or [],
        "metadata": CREATED,
        "runtime": {"backend": "builtin", "model": "", "encoding": "cl100k_base", "role": role},
    }
    if parent:
        document["lineage"] = {"parent_id": parent}
    if limits:
        document["context_limits"] = limits
    return document


# -- the Game of 24 by Tree of Thoughts (tot-protocol) --------------------------------------
# The node of `game24` runs the search (executions/node_kinds/tot.py): it plays the orchestrator and the
# explorer, and asks the role agents below. With the builtin backend their skills answer by
# exact arithmetic; on a model backend, the prompts say how to answer each message as JSON.

GAME24_CONTEXT = ("The Game of 24: use each of the given numbers exactly once, with + - × ÷ and parentheses, to "
                  "make exactly 24. You take part in a Tree-of-Thoughts search (tot-protocol): you receive one "
                  "protocol message as JSON and answer with one protocol message as JSON.")
NO_PROSE = " Reply with that JSON object only: no text before or after it."


def _tot_agent(agent_id: str, name: str, *, skills: list[str], prompt: str, thinking: str, reply: str,
               type: str = "business") -> dict[str, Any]:
    document = _agent(agent_id, name, type=type, skills=skills, prompt=prompt)
    document["prompt_config"] = {"system_prompt": prompt, "role_play": name, "task_context": GAME24_CONTEXT,
                                 "thinking_process": thinking, "output_constraint": reply}
    return document


TOT_AGENTS = [
    _tot_agent(
        "ToT_Orchestrator", "ToT Orchestrator", type="meta", skills=["tot_orchestrate"],
        prompt="You run a Tree-of-Thoughts search: Switchyard performs this role itself (executions/node_kinds/tot.py).",
        thinking="Ask the decomposer, start the explorer's search, report the final solution and the stats.",
        reply="The node's output: {\"final_solution\": {...}, \"stats\": {...}, \"error\": null}."),
    _tot_agent(
        "ToT_Decomposer", "ToT Decomposer", skills=["game24_decompose"],
        prompt="You are the decomposer of a Tree-of-Thoughts search.",
        thinking=("Read payload.problem (the numbers, e.g. \"4 9 10 13\"). Each thought is one equation that "
                  "combines two of the numbers left into one; with n numbers the tree is n - 1 equations deep."),
        reply=('Answer the `decompose_task` message with {"type": "decomposition_result", "payload": '
               '{"thought_granularity": "equation", "intermediate_steps": ["Step 1: combine two of the numbers", '
               '"Step 2: combine the result with another number", "Step 3: reach 24"], "depth_estimate": 3, '
               '"constraints": ["use every number exactly once", "only + - × ÷"], '
               '"success_criteria": "the final result equals 24"}}.' + NO_PROSE)),
    _tot_agent(
        "ToT_Generator", "ToT Generator", skills=["game24_generate"],
        prompt="You are the generator of a Tree-of-Thoughts search: you propose next steps.",
        thinking=("payload.parent_node is the state to go on from: its metadata.left lists the numbers still to "
                  "use (at the root, the numbers of payload.context.problem). A step takes two of those numbers "
                  "and one of + - × ÷ (never a division by zero) and puts the result back. Propose "
                  "payload.num_candidates different steps. With independent_sampling you are asked for one step "
                  "per call: payload.sample_index numbers the call, give each index a different step."),
        reply=('Answer with {"type": "generated_thoughts", "payload": {"candidates": [{"temp_id": "cand_1", '
               '"content": "13 - 9 = 4 (left: 4 4 10)", "action_type": "subtraction", '
               '"metadata": {"step": "13 - 9 = 4", "left": ["4", "4", "10"]}}]}}. action_type is addition, '
               'subtraction, multiplication or division; metadata.left is every number still to use after the '
               'step, its result included, as strings (a fraction as "8/3").' + NO_PROSE)),
    _tot_agent(
        "ToT_Evaluator", "ToT Evaluator", skills=["game24_evaluate"],
        prompt="You are the evaluator of a Tree-of-Thoughts search: you judge how promising each state is.",
        thinking=("For each node of payload.candidates, check its step (metadata.step) is correct arithmetic, then "
                  "judge whether the numbers in metadata.left can still make 24: sure (score 8-10, you can show "
                  "how), likely (3-7), impossible (0-2, e.g. all too small). A node whose numbers left are just "
                  "24 is solved (score 10). A wrong step scores 0."),
        reply=('Answer with {"type": "evaluation_results", "payload": {"evaluations": [{"node_id": "<the '
               'candidate\'s id>", "score": 8, "confidence": 0.9, "reasoning": "4 × (10 - 4) = 24", '
               '"dimension_scores": {"correctness": 10, "progress": 7, "feasibility": 8}, '
               '"metadata": {"judgement": "sure", "solved": false}}], "ranking": ["<node ids, best first>"], '
               '"pruning_suggestions": ["<ids of the impossible ones>"]}}: one evaluation per candidate, score '
               '0-10, confidence 0-1.' + NO_PROSE)),
    _tot_agent(
        "ToT_Explorer", "ToT Explorer", type="meta", skills=["tot_explore"],
        prompt="You explore a thought tree: Switchyard performs this role itself (engine/tot).",
        thinking="Expand, score, prune and backtrack as the search configuration says.",
        reply="The `search_complete` message: best_path, tree, stats."),
    _tot_agent(
        "ToT_Synthesizer", "ToT Synthesizer", skills=["game24_synthesize"],
        prompt="You are the synthesizer of a Tree-of-Thoughts search: you write the final answer.",
        thinking=("payload.best_path runs from the root (the puzzle) through one node per step; each node's "
                  "metadata.step is an equation. Combine the steps into one expression that uses each number of "
                  "payload.problem exactly once, and check it by computing it exactly (fractions, never decimals)."),
        reply=('Answer with {"type": "final_solution", "payload": {"answer": "(10 - (13 - 9)) × 4 = 24", '
               '"reasoning_trace": ["Step 1: 13 - 9 = 4", "Step 2: 10 - 4 = 6", "Step 3: 6 × 4 = 24"], '
               '"confidence": 1.0, "verification": {"is_valid": true, "validation_errors": []}, '
               '"alternative_solutions": []}}. When the steps do not make 24, say so: is_valid false, with '
               'the errors.' + NO_PROSE)),
]

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
    _agent("Publisher", "Publisher", skills=["publish_unreliable", "publish"], prompt="You publish release notes."),
    _agent("Backup_Publisher", "Backup Publisher", skills=["publish", "compliance_check"], parent="Publisher",
           prompt="You publish release notes when the main publisher cannot.",
           constraints=["publish only reviewed drafts"]),
    # Stands for the people who approve a release at release_review's gate: never called.
    _agent("Release_Manager", "Release Manager", skills=[],
           prompt="You stand for the people who approve release notes before they are published."),
    # Needs a skill nobody in the workflow has, so it escalates to a person.
    _agent("Compliance_Checker", "Compliance Checker", skills=["legal_review"],
           prompt="You check release notes for legal problems."),
    # Answer questions from the knowledge base through the knowledge_search tool: one may call
    # it; the other has the same skill and no tool, so its runs fail with a capability gap,
    # which raises a derive request for a child that has the tool.
    _agent("researcher", "Researcher", skills=["research"], domains=["deep_learning"], tools=["builtin.knowledge_search"],
           prompt="You answer questions from the knowledge base, citing the atoms you relied on."),
    _agent("researcher_without_tools", "Researcher without tools", skills=["research"], domains=["deep_learning"],
           prompt="You answer questions from the knowledge base, citing the atoms you relied on."),
    # Scores each run's outputs for its evaluation (the workflows' `evaluation.judge_agent`).
    _agent("Judge", "Judge", type="meta", skills=["judge_outputs"],
           prompt="You judge the outputs of a workflow run: are they present, complete and free of placeholders?"),
    *TOT_AGENTS,
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
    "name": "Thesis reading (task chain)",
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
    "domain": "software_engineering",
    "evaluation": {"judge_agent": "Judge", "quality_gate": {"completeness": 1.0, "overall_score": 0.7}},
    "input_schema": {"type": "object", "required": ["repository"], "properties": {
        "repository": {"type": "string", "minLength": 1, "maxLength": 200,
                       "description": "the repository to analyse: its name or address, e.g. acme/shop"}}},
}

# A workflow that runs another as one of its nodes (engine/subworkflows.py): the analysis is
# a child run of parallel_analysis, whose report the summary reads from the child's outputs.
REPOSITORY_REVIEW = {
    "workflow_id": "repository_review",
    "name": "Repository review (runs parallel_analysis as a node)",
    "topology": "seq",
    "nodes": [
        {"id": "analysis", "agent_ref": "Orchestrator", "subworkflow": {"workflow_ref": "parallel_analysis"},
         "input_mapping": {"repository": "$.input.repository"},
         "output_mapping": {"report": "$.nodes.task_d"}},
        {"id": "summary", "agent_ref": "Report_Synthesizer", "input_mapping": {"report": "$.state.report"}},
    ],
    "error_handling": {"retry_count": 0, "fallback_agent": None, "escalate_to": None},
    "domain": "software_engineering",
    "input_schema": {"type": "object", "required": ["repository"], "properties": {
        "repository": {"type": "string", "minLength": 1, "maxLength": 200,
                       "description": "the repository to review, given to parallel_analysis"}}},
}

RELEASE_REVIEW = {
    "workflow_id": "release_review",
    "name": "Release review (state machine)",
    "description": ("Ends escalated, on purpose: the demo's publisher fails three times, its fallback "
                    "(Backup_Publisher) lacks the skill to publish, and the run goes to a person — to show "
                    "retries, fallback and escalation. An author resumes it with an output, retries "
                    "the node, or aborts the run."),
    "topology": "state_machine",
    "nodes": [
        # The drafter reads the reviewer's comments and, after a rejection at the gate, the
        # person's (`gate_feedback`, engine/gates.py).
        {"id": "draft", "agent_ref": "Drafter",
         "input_mapping": {"topic": "$.input.topic", "feedback": "$.state.feedback",
                           "gate_feedback": "$.state.gate_feedback"},
         "output_mapping": {"draft": "$.text"}},
        {"id": "review", "agent_ref": "Reviewer", "input_mapping": {"draft": "$.state.draft"},
         "output_mapping": {"feedback": "$.comments", "verdict": "$.verdict", "rounds": "$.round"}},
        # A gate: approvers approve the draft (or edit it) before it is published, or reject
        # it back to the drafter; left a day undecided, the run goes to a person. An edit
        # holds to the schema: the draft is text, and not empty.
        {"id": "approve", "agent_ref": "Release_Manager",
         "input_mapping": {"draft": "$.state.draft", "review": "$.state.feedback"},
         "output_mapping": {"draft": "$.draft"},
         "gate": {"prompt": "Publish these release notes?", "deciders": {"roles": ["approver"]},
                  "timeout_seconds": 86400, "on_timeout": "escalate",
                  "schema": {"type": "object", "required": ["draft"],
                             "properties": {"draft": {"type": "string", "minLength": 1,
                                                      "description": "the release notes to publish"},
                                            "review": {"type": "string", "description": "the reviewer's comments"}}}}},
        {"id": "publish", "agent_ref": "Publisher", "input_mapping": {"draft": "$.state.draft"},
         "output_mapping": {"published_at": "$.published_at"}},
        {"id": "compliance", "agent_ref": "Compliance_Checker", "input_mapping": {"draft": "$.state.draft"}},
    ],
    "transitions": [
        {"from": "draft", "to": "review"},
        {"from": "review", "to": "draft", "condition": "output.verdict == 'revise' and state.rounds < 3"},
        {"from": "review", "to": "approve", "condition": "output.verdict == 'accept' or state.rounds >= 3"},
        {"from": "approve", "to": "publish", "on_failure": "draft"},
        {"from": "publish", "to": "compliance", "on_failure": "escalate"},
    ],
    "error_handling": {"retry_count": 2, "fallback_agent": "Backup_Publisher", "escalate_to": "Orchestrator"},
    "limits": {"max_steps": 12, "max_wall_seconds": 600},
    "domain": "release_management",
    "input_schema": {"type": "object", "required": ["topic"], "properties": {
        "topic": {"type": "string", "minLength": 1, "maxLength": 200,
                  "description": "what the release notes are about, e.g. release 2.1"}}},
}

# One node that runs a whole search; the run's input is {"numbers": [4, 9, 10, 13]}, and may
# override settings with {"search_config": {...}}. (The node kind also reads a problem as text,
# `problem`; a Game of 24 is its numbers, so this workflow asks for those.)
GAME24_ROLES = {"decomposer": "ToT_Decomposer", "generator": "ToT_Generator", "evaluator": "ToT_Evaluator",
                "synthesizer": "ToT_Synthesizer"}
GAME24: dict[str, Any] = {
    "workflow_id": "game24",
    "name": "Game of 24 (Tree of Thoughts)",
    "topology": "seq",
    "nodes": [
        {"id": "solve", "agent_ref": "ToT_Orchestrator",
         "input_mapping": {
             "numbers": "$.input.numbers", "search_config": "$.input.search_config",
             "tot": {
                 "task_type": "math_reasoning",
                 "roles": GAME24_ROLES,
                 # max_depth: the decomposer's estimate (three equations for four numbers).
                 "search_config": {"strategy": "BFS", "branching_factor": 8, "breadth": 5, "pruning_threshold": 3,
                                   "generation_strategy": "sequential_proposal",
                                   "evaluation_strategy": "independent_scoring"},
             },
         }},
    ],
    "error_handling": {"retry_count": 0, "fallback_agent": None, "escalate_to": None},
    "limits": {"max_steps": 10, "max_wall_seconds": 600},
    "domain": "math_reasoning",
    # A wrong answer must never pass: every answer is verified with exact arithmetic.
    "evaluation": {"quality_gate": {"accuracy": 1.0}},
    "input_schema": {"type": "object", "required": ["numbers"], "properties": {
        "numbers": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "maxItems": 8,
                    "description": "the numbers to make 24 from, each used once, e.g. [4, 9, 10, 13]"},
        "search_config": {"type": "object",
                          "description": "settings that override the node's search, e.g. {\"strategy\": \"DFS\"}"}}},
}

# Agents that act: the researcher answers a question by calling the knowledge_search tool
# (executions/node_kinds/llm.py runs the calls between its turns). The same workflow with
# researcher_without_tools fails with CAPABILITY_GAP, which raises a derive request for a
# child that has the tool.
RESEARCH_QUESTION = "How many attention heads does the Transformer use, and of what dimension?"


def _research(workflow_id: str, name: str, agent: str, description: str) -> dict[str, Any]:
    return {
        "workflow_id": workflow_id,
        "name": name,
        "description": description,
        "topology": "seq",
        "nodes": [{"id": "research", "agent_ref": agent, "input_mapping": {"question": "$.input.question"}}],
        "error_handling": {"retry_count": 0, "fallback_agent": None, "escalate_to": None},
        "domain": "deep_learning",
        "input_schema": {"type": "object", "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": 1000, "default": RESEARCH_QUESTION,
                         "description": "what to look up in the knowledge base, e.g. how many attention heads"}}},
    }


RESEARCH_WITH_TOOLS = _research(
    "research_with_tools", "Research with a tool", "researcher",
    "The researcher calls builtin.knowledge_search with the question's words and answers from the atoms found, "
    "citing them.")
RESEARCH_WITHOUT_TOOLS = _research(
    "research_without_tools", "Research without the tool", "researcher_without_tools",
    "Fails on purpose: its agent has the research skill but not the knowledge_search tool, so the node fails "
    "with CAPABILITY_GAP and a derive request proposes a child that has the tool.")

DOCUMENTS = [*AGENTS, BLUEPRINT, THESIS_CHAIN, PARALLEL_ANALYSIS, REPOSITORY_REVIEW, RELEASE_REVIEW, GAME24,
             RESEARCH_WITH_TOOLS, RESEARCH_WITHOUT_TOOLS]

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


# -- The knowledge base that `db_query` references read (knowledge app) ----------------
# The sample paper and the atoms a Scholar would extract from it. Knowledge_Vault's
# db_query input (domain = deep_learning, limit 100) returns all of them: well over its
# 4,050-token data area, so the inspection pages show that input batched.

PAPER_ID = "paper_transformer"
KNOWLEDGE_DOMAIN = "deep_learning"
KNOWLEDGE_CREATED_AT = CREATED["created_at"]

PAPERS = [
    {
        "paper_id": PAPER_ID,
        "title": "Attention Is All You Need",
        "authors": ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit", "Llion Jones",
                    "Aidan N. Gomez", "Łukasz Kaiser", "Illia Polosukhin"],
        "year": 2017,
        "venue": "NeurIPS 2017",
        "domain": KNOWLEDGE_DOMAIN,
        "abstract": " ".join(PAPER_SECTIONS[0][1]),
        "created_at": KNOWLEDGE_CREATED_AT,
    },
]

# (source section, atom type, confidence, content), in reading order.
_ATOM_TEXTS = [
    ("Abstract", "claim", 0.97, "The Transformer is a sequence transduction architecture based solely on attention mechanisms, dispensing with recurrence and convolutions entirely."),
    ("Abstract", "claim", 0.93, "On two machine translation tasks the Transformer is superior in quality to recurrent and convolutional models while being more parallelizable."),
    ("Abstract", "evidence", 0.95, "The big Transformer reaches 28.4 BLEU on the WMT 2014 English-to-German translation task, improving over the best existing results, including ensembles, by more than 2 BLEU."),
    ("Abstract", "evidence", 0.94, "On WMT 2014 English-to-French the model sets a new single-model state of the art of 41.8 BLEU after training for 3.5 days on eight GPUs."),
    ("Abstract", "claim", 0.82, "The Transformer generalizes well to other tasks, as shown by applying it to English constituency parsing with both large and limited training data."),
    ("Introduction", "background", 0.96, "Recurrent neural networks, long short-term memory and gated recurrent networks have been firmly established as state-of-the-art approaches to sequence modeling and transduction."),
    ("Introduction", "background", 0.92, "Recurrent models factor computation along the symbol positions of the input and output sequences, generating a hidden state from the previous hidden state and the current input."),
    ("Introduction", "claim", 0.9, "The inherently sequential nature of recurrence precludes parallelization within training examples, which becomes critical at longer sequence lengths because memory limits batching across examples."),
    ("Introduction", "background", 0.88, "Factorization tricks and conditional computation have improved the efficiency of recurrent models, but the fundamental constraint of sequential computation remains."),
    ("Introduction", "background", 0.91, "Attention mechanisms allow the modeling of dependencies without regard to their distance in the input or output sequences, but they have mostly been used together with a recurrent network."),
    ("Introduction", "claim", 0.86, "Relying entirely on attention to draw global dependencies between input and output allows significantly more parallelization than recurrent architectures."),
    ("Introduction", "evidence", 0.84, "The Transformer can reach a new state of the art in translation quality after being trained for as little as twelve hours on eight P100 GPUs."),
    ("Background", "background", 0.89, "The Extended Neural GPU, ByteNet and ConvS2S reduce sequential computation by using convolutional neural networks that compute hidden representations in parallel for all positions."),
    ("Background", "background", 0.83, "In convolutional models the number of operations needed to relate signals from two arbitrary positions grows linearly with distance for ConvS2S and logarithmically for ByteNet."),
    ("Background", "claim", 0.78, "In the Transformer the number of operations relating two positions is reduced to a constant, at the cost of reduced effective resolution due to averaging attention-weighted positions."),
    ("Background", "claim", 0.74, "Multi-head attention counteracts the reduced effective resolution that comes from averaging over attention-weighted positions."),
    ("Background", "background", 0.87, "Self-attention, sometimes called intra-attention, relates different positions of a single sequence and has been used for reading comprehension, abstractive summarization and textual entailment."),
    ("Background", "background", 0.8, "End-to-end memory networks are based on a recurrent attention mechanism instead of sequence-aligned recurrence and perform well on simple-language question answering and language modeling."),
    ("Background", "claim", 0.88, "The Transformer is the first transduction model relying entirely on self-attention to compute representations of its input and output without sequence-aligned RNNs or convolution."),
    ("Model Architecture", "methodology", 0.95, "The model follows an encoder-decoder structure in which the encoder maps a sequence of symbol representations to continuous representations and the decoder generates the output one symbol at a time."),
    ("Model Architecture", "methodology", 0.9, "The decoder is auto-regressive: at each step it consumes the previously generated symbols as additional input when generating the next one."),
    ("Model Architecture", "methodology", 0.96, "The encoder is a stack of N = 6 identical layers, each with a multi-head self-attention sub-layer followed by a position-wise fully connected feed-forward sub-layer."),
    ("Model Architecture", "methodology", 0.93, "Each sub-layer is wrapped in a residual connection followed by layer normalization, so its output is LayerNorm(x + Sublayer(x))."),
    ("Model Architecture", "methodology", 0.94, "All sub-layers and embedding layers produce outputs of dimension d_model = 512 to facilitate the residual connections."),
    ("Model Architecture", "methodology", 0.92, "The decoder also has N = 6 identical layers and inserts a third sub-layer that performs multi-head attention over the output of the encoder stack."),
    ("Model Architecture", "methodology", 0.91, "The decoder's self-attention is masked and the output embeddings are offset by one position, so predictions for position i depend only on outputs at positions less than i."),
    ("Attention", "methodology", 0.97, "An attention function maps a query and a set of key-value pairs to an output computed as a weighted sum of the values, with weights given by a compatibility function of the query and each key."),
    ("Attention", "methodology", 0.98, "Scaled dot-product attention computes softmax(QK^T / sqrt(d_k))V over matrices of queries, keys and values packed together."),
    ("Attention", "claim", 0.85, "Dot-product attention is much faster and more space-efficient in practice than additive attention because it can be implemented with highly optimized matrix multiplication code."),
    ("Attention", "claim", 0.72, "For large values of d_k the dot products grow large in magnitude and push the softmax into regions with extremely small gradients, which the 1/sqrt(d_k) scaling counteracts."),
    ("Attention", "evidence", 0.68, "If the components of queries and keys are independent with mean 0 and variance 1, their dot product has mean 0 and variance d_k."),
    ("Attention", "methodology", 0.95, "Multi-head attention linearly projects queries, keys and values h times with different learned projections, runs attention in parallel and concatenates the results."),
    ("Attention", "claim", 0.79, "Multi-head attention lets the model jointly attend to information from different representation subspaces at different positions, which a single averaging head inhibits."),
    ("Attention", "methodology", 0.96, "The model uses h = 8 parallel attention heads with d_k = d_v = d_model / h = 64 dimensions each."),
    ("Attention", "claim", 0.81, "Because each head has a reduced dimension, the total computational cost of multi-head attention is similar to that of single-head attention with full dimensionality."),
    ("Attention", "methodology", 0.9, "In encoder-decoder attention the queries come from the previous decoder layer and the keys and values from the encoder output, so every decoder position attends over the whole input."),
    ("Attention", "methodology", 0.89, "Illegal leftward connections in decoder self-attention are masked by setting the corresponding inputs of the softmax to negative infinity."),
    ("Feed-Forward Networks", "methodology", 0.94, "Each layer contains a position-wise feed-forward network of two linear transformations with a ReLU in between, FFN(x) = max(0, xW1 + b1)W2 + b2."),
    ("Feed-Forward Networks", "methodology", 0.93, "The feed-forward networks have an input and output dimension of 512 and an inner-layer dimension of d_ff = 2048."),
    ("Embeddings", "methodology", 0.88, "The two embedding layers and the pre-softmax linear transformation share the same weight matrix, and the embedding weights are multiplied by sqrt(d_model)."),
    ("Positional Encoding", "background", 0.86, "Since the model contains no recurrence and no convolution, information about the order of the sequence must be injected through positional encodings added to the input embeddings."),
    ("Positional Encoding", "methodology", 0.95, "Positional encodings use sine and cosine functions of different frequencies, PE(pos, 2i) = sin(pos / 10000^(2i/d_model)) and PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))."),
    ("Positional Encoding", "claim", 0.64, "Sinusoidal encodings were chosen on the hypothesis that they let the model learn to attend by relative position, since PE(pos + k) is a linear function of PE(pos)."),
    ("Positional Encoding", "evidence", 0.83, "Learned positional embeddings produced nearly identical results to the sinusoidal version on the development set."),
    ("Positional Encoding", "claim", 0.58, "The sinusoidal version may allow the model to extrapolate to sequence lengths longer than the ones encountered during training."),
    ("Why Self-Attention", "claim", 0.87, "A self-attention layer connects all positions with a constant number of sequentially executed operations, whereas a recurrent layer requires O(n) sequential operations."),
    ("Why Self-Attention", "evidence", 0.9, "The per-layer complexity of self-attention is O(n^2 * d) compared with O(n * d^2) for recurrent layers and O(k * n * d^2) for convolutional layers."),
    ("Why Self-Attention", "claim", 0.8, "Self-attention layers are faster than recurrent layers when the sequence length n is smaller than the representation dimensionality d, which is most often the case for word-piece and byte-pair representations."),
    ("Why Self-Attention", "claim", 0.83, "Shorter paths between any combination of positions in the input and output sequences make it easier to learn long-range dependencies."),
    ("Why Self-Attention", "methodology", 0.62, "For very long sequences, self-attention could be restricted to a neighborhood of size r around each output position, which increases the maximum path length to O(n/r)."),
    ("Why Self-Attention", "claim", 0.55, "Self-attention could yield more interpretable models, as individual attention heads appear to learn different tasks related to the syntactic and semantic structure of sentences."),
    ("Training", "methodology", 0.93, "The English-German model was trained on the WMT 2014 dataset of about 4.5 million sentence pairs encoded with byte-pair encoding and a shared vocabulary of about 37,000 tokens."),
    ("Training", "methodology", 0.92, "For English-French the significantly larger WMT 2014 dataset of 36 million sentences was used, with tokens split into a 32,000 word-piece vocabulary."),
    ("Training", "methodology", 0.89, "Sentence pairs were batched by approximate sequence length so that each training batch contained about 25,000 source tokens and 25,000 target tokens."),
    ("Training", "evidence", 0.91, "The base models were trained for 100,000 steps, or 12 hours, on one machine with eight NVIDIA P100 GPUs at about 0.4 seconds per step."),
    ("Training", "evidence", 0.9, "The big models were trained for 300,000 steps, or 3.5 days, at about 1.0 second per step."),
    ("Training", "methodology", 0.94, "Training used the Adam optimizer with beta1 = 0.9, beta2 = 0.98 and epsilon = 1e-9."),
    ("Training", "methodology", 0.92, "The learning rate increases linearly for the first 4,000 warmup steps and then decreases proportionally to the inverse square root of the step number."),
    ("Training", "methodology", 0.88, "Residual dropout with rate 0.1 is applied to the output of each sub-layer and to the sums of the embeddings and the positional encodings."),
    ("Training", "claim", 0.7, "Label smoothing with value 0.1 hurts perplexity, as the model learns to be more unsure, but improves accuracy and BLEU score."),
    ("Results", "evidence", 0.96, "The big Transformer outperforms the best previously reported models on English-to-German, including ensembles, by more than 2.0 BLEU, establishing a new state of the art of 28.4."),
    ("Results", "claim", 0.86, "Even the base Transformer surpasses all previously published models and ensembles on English-to-German at a fraction of their training cost."),
    ("Results", "evidence", 0.88, "On English-to-French the big model outperforms all previously published single models at less than a quarter of the training cost of the previous state-of-the-art model."),
    ("Results", "methodology", 0.85, "Base models average the last 5 checkpoints and big models the last 20; decoding uses beam search with a beam size of 4 and a length penalty of 0.6."),
    ("Results", "evidence", 0.76, "Training cost is estimated by multiplying training time, the number of GPUs used, and an estimate of each GPU's sustained single-precision floating-point capacity."),
    ("Model Variations", "evidence", 0.84, "Single-head attention is 0.9 BLEU worse than the best setting on the development set, and quality also drops off with too many heads."),
    ("Model Variations", "claim", 0.6, "Reducing the attention key size d_k hurts model quality, suggesting that determining compatibility is not easy and a more sophisticated function than dot product may be beneficial."),
    ("Model Variations", "evidence", 0.87, "Bigger models are better, and dropout is very helpful in avoiding over-fitting, according to the variations evaluated on newstest2013."),
    ("Constituency Parsing", "methodology", 0.83, "For English constituency parsing a 4-layer Transformer with d_model = 1024 was trained on the roughly 40,000 sentences of the Wall Street Journal portion of the Penn Treebank."),
    ("Constituency Parsing", "evidence", 0.85, "The Transformer reaches 91.3 F1 on WSJ section 23 when trained only on the WSJ data and 92.7 F1 in the semi-supervised setting with about 17 million sentences."),
    ("Constituency Parsing", "claim", 0.66, "Despite the lack of task-specific tuning, the Transformer performs surprisingly well on constituency parsing and outperforms the BerkeleyParser even with only 40,000 training sentences."),
    ("Conclusion", "claim", 0.9, "Replacing the recurrent layers most commonly used in encoder-decoder architectures with multi-headed self-attention lets translation models train significantly faster."),
    ("Conclusion", "background", 0.5, "Future work plans to extend the Transformer to input and output modalities other than text, such as images, audio and video, and to make generation less sequential."),
]

KNOWLEDGE_ATOMS: list[dict[str, Any]] = [
    {
        "atom_id": f"atom_transformer_{number:03d}",
        "paper_id": PAPER_ID,
        "atom_type": atom_type,
        "content": content,
        "confidence": confidence,
        "domain": KNOWLEDGE_DOMAIN,
        "source_section": section,
        "created_at": KNOWLEDGE_CREATED_AT,
    }
    for number, (section, atom_type, confidence, content) in enumerate(_ATOM_TEXTS, start=1)
]


def _atom_about(phrase: str) -> str:
    """The id of the one demo atom whose content contains `phrase`."""
    found: list[str] = [atom["atom_id"] for atom in KNOWLEDGE_ATOMS if phrase in atom["content"]]
    if len(found) != 1:
        raise ValueError(f"{len(found)} demo atoms mention {phrase!r}; name exactly one")
    return found[0]


def _relation(number: int, source: str, relation_type: str, target: str, confidence: float) -> dict[str, Any]:
    return {
        "relation_id": f"rel_transformer_{number:03d}",
        "source_atom_id": _atom_about(source),
        "target_atom_id": _atom_about(target),
        "relation_type": relation_type,
        "confidence": confidence,
        "created_at": KNOWLEDGE_CREATED_AT,
    }


RELATIONS = [
    _relation(1, "establishing a new state of the art of 28.4", "supports", "superior in quality to recurrent", 0.92),
    _relation(2, "new single-model state of the art of 41.8", "supports", "superior in quality to recurrent", 0.9),
    _relation(3, "trained for 100,000 steps", "supports", "train significantly faster", 0.85),
    _relation(4, "Learned positional embeddings produced nearly identical", "contradicts",
              "attend by relative position", 0.55),
    _relation(5, "Single-head attention is 0.9 BLEU worse", "supports", "jointly attend to information", 0.8),
    _relation(6, "The model uses h = 8 parallel attention heads", "extends", "Multi-head attention linearly projects", 0.88),
    _relation(7, "91.3 F1 on WSJ section 23", "supports", "generalizes well to other tasks", 0.83),
    _relation(8, "dot product has mean 0 and variance d_k", "supports", "push the softmax into regions", 0.74),
]


def _quality(target_type: str, target_id: str, score: float, passed: bool, **details: Any) -> dict[str, Any]:
    return {
        "record_id": f"qr_{target_id}",
        "target_type": target_type,
        "target_id": target_id,
        "score": score,
        "passed": passed,
        "details": {"checked_by": "Validator", **details},
        "created_at": KNOWLEDGE_CREATED_AT,
    }


QUALITY_RECORDS = [
    _quality("paper", PAPER_ID, 0.91, True, atoms=len(KNOWLEDGE_ATOMS), notes="claims and evidence are consistent"),
    _quality("atom", _atom_about("reaches 28.4 BLEU on the WMT 2014"), 0.95, True, evidence=["Table 2"]),
    _quality("atom", _atom_about("attend by relative position"), 0.48, False,
             reason="a hypothesis the paper does not test directly"),
    _quality("atom", _atom_about("extrapolate to sequence lengths"), 0.52, False, reason="speculative; no experiment reported"),
    _quality("relation", RELATIONS[3]["relation_id"], 0.6, True,
             notes="a weak contradiction: matching results do not rule the hypothesis out"),
]
