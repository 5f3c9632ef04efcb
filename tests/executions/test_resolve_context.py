"""`manage.py resolve_context`: a description in, the context and its record out."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

ROOT = Path(__file__).resolve().parents[2]


def describe(**overrides):
    description = {
        "task_id": "task_validator_001",
        "agent": {"role": "Validator", "context_limits": {"max_input_tokens": 100_000}},
        "task_outputs": {"task_scholar_001": {"atoms": [
            {"atom_id": "a1", "atom_type": "claim", "content": "Self-attention parallelises.", "confidence": 0.95},
            {"atom_id": "a2", "atom_type": "background", "content": "RNNs are sequential.", "confidence": 0.7},
        ]}},
        "input": {
            "data_references": [
                {"ref_type": "task_output", "task_id": "task_scholar_001", "path": "$.atoms[?(@.atom_type=='claim')]",
                 "transform": "summary"},
                {"ref_type": "task_output", "task_id": "task_missing"},
            ],
            "transfer_config": {"mode": "summary", "max_tokens": 5000, "priority_filter": [1, 2]},
        },
        "items": [{"name": "task_instructions", "content": "Check each claim.", "data_type": "instructions"}],
    }
    description.update(overrides)
    return description


def run(tmp_path, description, capsys):
    path = tmp_path / "context.json"
    path.write_text(json.dumps(description))
    call_command("resolve_context", str(path))
    return json.loads(capsys.readouterr().out)


@pytest.mark.django_db
def test_it_prints_the_record_the_inputs_and_the_failures(tmp_path, capsys):
    out = run(tmp_path, describe(), capsys)
    record = out["context_management"]
    assert record["task_id"] == "task_validator_001" and record["context_limit"] == 70_000
    assert set(record["total_input_data"]) == {"task_scholar_001_output", "task_instructions"}
    assert record["resolution"]["within_limit"] is True
    inputs = {entry["name"]: entry for entry in out["inputs"]}
    assert inputs["task_scholar_001_output"]["content"][0]["atom_id"] == "a1"
    assert inputs["task_instructions"]["priority"] == 1
    assert [(f["task_id"], f["error_code"]) for f in out["resolution_failures"]] == [("task_missing", "REF_NOT_FOUND")]


@pytest.mark.django_db
def test_it_reads_workspace_files_and_database_rows(tmp_path, capsys, settings):
    settings.WORKSPACE_ROOT = tmp_path
    (tmp_path / "notes.md").write_text("# Notes\n\n## Method\n\nWe attend.\n\n## Other\n\nSkip me.\n")
    description = describe(input={"data_references": [
        {"ref_type": "file", "path": "/workspace/notes.md", "sections": ["method"]},
        {"ref_type": "db_query", "table": "papers", "limit": 5},
    ]})
    out = run(tmp_path, description, capsys)
    inputs = {entry["name"]: entry for entry in out["inputs"]}
    assert inputs["notes.md"]["content"]["sections"] == {"Method": "We attend."}
    assert inputs["papers_query"]["content"] == []


@pytest.mark.parametrize("description, message", [
    ("{not json", "malformed JSON at line 1"),
    ("[" * 100_000 + "]" * 100_000, "the JSON is nested too deeply"),
    (json.dumps({"agent": {}}), "'input' is a required property"),
    (json.dumps(describe(input={"data_references": [{"ref_type": "ftp"}]})), "data_references[0].ref_type"),
    (json.dumps(describe(agent={"context_limits": {"safety_margin": 3}})), "safety_margin"),
    (json.dumps(describe(agent={"encoding": "p50k_base"})), "not one Switchyard can count offline"),
    (json.dumps(describe(messages=[{"kind": "state"}])), "data message 0"),
])
def test_it_exits_2_on_invalid_input_naming_the_problem(tmp_path, description, message):
    path = tmp_path / "bad.json"
    path.write_text(description)
    with pytest.raises(CommandError, match=message.replace("[", r"\[").replace("]", r"\]")) as caught:
        call_command("resolve_context", str(path))
    assert caught.value.returncode == 2


def test_it_reads_standard_input_and_exits_2_in_a_real_process():
    done = subprocess.run([sys.executable, "manage.py", "resolve_context", "-"], input="[]", cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "is not of type 'object'" in done.stderr


@pytest.mark.django_db
def test_it_exits_1_with_the_failure_when_a_reference_aborts(tmp_path, capsys, settings):
    settings.WORKSPACE_ROOT = tmp_path
    path = tmp_path / "abort.json"
    path.write_text(json.dumps(describe(input={"data_references": [{"ref_type": "file", "path": "../secret.txt"}]})))
    with pytest.raises(CommandError) as caught:
        call_command("resolve_context", str(path))
    assert caught.value.returncode == 1
    assert json.loads(capsys.readouterr().out)["aborted"]["error_code"] == "REF_PERMISSION_DENIED"


@pytest.mark.django_db
def test_it_exits_3_naming_the_limit_when_the_instructions_alone_exceed_the_context(tmp_path, capsys):
    path = tmp_path / "large.json"
    path.write_text(json.dumps(describe(
        agent={"role": "Validator", "context_limits": {"max_input_tokens": 1000}},
        items=[{"name": "task_instructions", "content": "Check each claim. " * 2000, "data_type": "instructions"}])))
    with pytest.raises(CommandError, match=r"^INSTRUCTIONS_EXCEED_CONTEXT: the task instructions and system prompt "
                                           r"take \d+ tokens, more than the context limit of \d+") as caught:
        call_command("resolve_context", str(path))
    assert caught.value.returncode == 3
    assert capsys.readouterr().out == ""
