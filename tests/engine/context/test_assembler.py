"""Assembling a node's context: references, transfer modes, batching, messages, the record."""
import json

import pytest

from engine.context import errors
from engine.context.assembler import ContextBuilder
from engine.context.errors import RefError
from engine.context.limits import ContextLimits
from engine.context.messages import MessageError
from engine.context.resolution import ResolutionAborted, Sources
from tests.engine.context.helpers import COUNTER, atoms_of, text_of

OUTPUTS = {
    "small": {"atoms": [{"atom_id": "a1", "atom_type": "claim", "content": "Attention is all you need."}]},
    "medium_text": text_of(5_000, seed=1),
    "large_atoms": {"atoms": atoms_of(20_000, seed=2), "relations": [], "metadata": {"paper": "p1"}},
    "code": "def f(x):\n    return x\n" * 700,
    "table": "\n".join(["| run | bleu |", "| --- | --- |"] + [f"| run {n} of the sweep | {20 + n / 10:.1f} |"
                                                            for n in range(400)]),
}


def task_output(task_id):
    if task_id not in OUTPUTS:
        raise RefError(errors.REF_NOT_FOUND, f"no output of task '{task_id}'")
    return OUTPUTS[task_id]


def assemble(role="", limits=None, **kwargs):
    limits = limits or ContextLimits(role=role)
    builder = ContextBuilder(limits=limits, counter=COUNTER, sources=Sources(task_output=task_output))
    return builder.assemble(task_id="t", **kwargs)


def ref(task_id, **fields):
    return {"ref_type": "task_output", "task_id": task_id, **fields}


def by_name(assembly):
    return {report.name: report for report in assembly.inputs}


def test_it_passes_small_data_whole_and_says_why():
    report = by_name(assemble(references=[ref("small")]))["small_output"]
    assert (report.transfer_mode, report.priority, report.item.content) == ("full", 1, OUTPUTS["small"])
    assert "< 2K" in report.reason


def test_it_summarises_medium_text_to_the_ratio_and_records_the_action():
    assembly = assemble(references=[ref("medium_text")])
    report = by_name(assembly)["medium_text_output"]
    assert report.transfer_mode == "summary" and "text data is passed as summary (§5.3)" == report.reason
    action = assembly.record["resolution"]["actions"][0]
    assert (action["action"], action["stage"], action["original_tokens"]) == ("summarize", "transfer", 5_000)
    assert action["reduced_tokens"] <= 1_500 == 5_000 * 0.3


def test_it_honours_summary_config_and_the_node_max_tokens():
    reference = ref("medium_text", summary_config={"summary_ratio": 0.5, "max_length": 900, "strategy": "truncate"})
    assembly = assemble(references=[reference])
    assert by_name(assembly)["medium_text_output"].item.tokens == 900
    assembly = assemble(references=[ref("medium_text", transform="summary")], transfer_config={"max_tokens": 300})
    assert 0 < by_name(assembly)["medium_text_output"].item.tokens <= 300


def test_it_passes_large_data_by_reference_with_paths_stats_and_a_preview():
    assembly = assemble(references=[ref("large_atoms")], transfer_config={"inline_preview_count": 5})
    report = by_name(assembly)["large_atoms_output"]
    assert report.transfer_mode == "reference" and "10K–50K" in report.reason
    content = report.item.content
    assert content["reference"]["available_paths"] == ["$.atoms", "$.relations", "$.metadata"]
    stats = content["reference"]["data_stats"]
    assert stats["total_atoms"] == len(OUTPUTS["large_atoms"]["atoms"]) and stats["tokens"] > 20_000
    assert stats["estimated_size_bytes"] == len(json.dumps(OUTPUTS["large_atoms"], ensure_ascii=False).encode())
    assert content["inline_preview"]["preview_count"] == 5 and len(content["inline_preview"]["atoms_preview"]) == 5
    assert report.item.tokens < 1_000


def test_it_sizes_a_text_passed_by_reference_as_its_json_text():
    report = by_name(assemble(references=[ref("medium_text", transfer_mode="reference")]))["medium_text_output"]
    stats = report.item.content["reference"]["data_stats"]
    assert stats["estimated_size_bytes"] == len(json.dumps(OUTPUTS["medium_text"], ensure_ascii=False).encode())


def test_it_follows_the_role_of_the_downstream_agent():
    assert by_name(assemble("Scholar", references=[ref("large_atoms")]))["large_atoms_output"].transfer_mode == "full"
    assert by_name(assemble("Validator", references=[ref("large_atoms")]))["large_atoms_output"].transfer_mode == "summary"


def test_it_never_summarises_code_even_when_the_node_asks_for_summaries():
    report = by_name(assemble(references=[ref("code", data_type="code")], transfer_config={"mode": "summary"}))["code_output"]
    assert report.transfer_mode == "full" and report.item.content == OUTPUTS["code"]


def test_it_lets_the_reference_setting_win():
    report = by_name(assemble(references=[ref("small", transfer_mode="reference", name="atoms")]))["atoms"]
    assert (report.transfer_mode, report.reason) == ("reference", "set on the reference")


def test_it_batches_when_the_batch_config_says_so():
    batch_config = {"enabled": True, "batch_size_tokens": 6_000, "overlap_tokens": 200, "max_batches": 10,
                    "aggregation_strategy": "merge", "batch_priority": "importance"}
    assembly = assemble(references=[ref("large_atoms", path="$.atoms", batch_config=batch_config)])
    report = by_name(assembly)["large_atoms_output"]
    assert report.batches >= 4 and report.item.tokens <= 6_000
    action = assembly.record["resolution"]["actions"][0]
    assert (action["action"], action["batches"], action["aggregation"]) == ("batch", report.batches, "merge")
    assert assembly.batch_count == report.batches
    first, last = dict(assembly.texts(0)), dict(assembly.texts(report.batches - 1))
    assert first["large_atoms_output"] != last["large_atoms_output"]
    assert assembly.record["resolution"]["final_tokens"] == max(
        COUNTER.count(dict(assembly.texts(i))["large_atoms_output"]) for i in range(report.batches))


def test_it_keeps_only_the_priorities_the_node_asks_for():
    outputs = {"claims": [{"atom_type": "claim", "content": "c"}, {"atom_type": "background", "content": "b"}]}
    OUTPUTS.update(outputs)
    try:
        assembly = assemble(references=[ref("claims")], items=[{"name": "extra", "content": "x", "priority": 4}],
                            transfer_config={"priority_filter": [1, 2]})
    finally:
        OUTPUTS.pop("claims")
    reports = by_name(assembly)
    assert reports["extra"].item is None
    assert reports["claims_output"].item.content == [{"atom_type": "claim", "content": "c"}]
    assert [a["action"] for a in assembly.record["resolution"]["actions"]] == ["filter_by_priority"] * 2


def test_it_records_failures_and_goes_on_without_the_skipped_input():
    assembly = assemble(references=[ref("missing"), ref("small")])
    assert [r.name for r in assembly.inputs] == ["small_output"]
    assert assembly.failures[0]["error_code"] == "REF_NOT_FOUND" and assembly.failures[0]["input"] == "missing_output"


def test_it_reports_every_failure_so_far_when_a_reference_aborts():
    references = [ref("missing"), ref("missing", name="second", fallback_config={"strategy": "abort"})]
    with pytest.raises(ResolutionAborted) as caught:
        assemble(references=references)
    assert [f["input"] for f in caught.value.failures] == ["missing_output", "second"]


def test_it_merges_data_messages_by_identity_and_keeps_instances_apart():
    messages = [
        {"kind": "state", "data": {"step": 1, "notes": {"a": 1}}},
        {"kind": "state", "data": {"step": 2, "notes": {"b": 2}}},
        {"kind": "state", "_instance": "left", "data": {"step": 9}},
        {"kind": "input", "data": "question"},
    ]
    reports = by_name(assemble(messages=messages))
    assert reports["state"].item.content == {"kind": "state", "data": {"step": 2, "notes": {"a": 1, "b": 2}}}
    assert reports["state[left]"].item.content["data"] == {"step": 9}
    assert reports["input"].item.content["data"] == "question"


def test_it_refuses_a_message_that_breaks_its_schema():
    schema = {"type": "object", "properties": {"step": {"type": "integer"}}}
    with pytest.raises(MessageError):
        assemble(messages=[{"kind": "state", "schema": schema, "data": {"step": "one"}}])


def test_it_records_the_limits_and_a_within_limit_that_is_true():
    limits = ContextLimits(max_input_tokens=6_000, max_output_tokens=2_000, reserved_for_system_prompt=1_000,
                           reserved_for_instructions=500, role="Knowledge_Vault")
    record = assemble(limits=limits, references=[ref("small"), ref("medium_text")]).record
    assert record["context_limit"] == 4_050 and record["limits"]["effective_data_limit"] == 4_050
    assert record["limits"]["data_area"] == 85_000
    assert record["total_tokens"] == sum(entry["tokens"] for entry in record["total_input_data"].values())
    assert record["resolution"]["within_limit"] is (record["resolution"]["final_tokens"] <= 4_050)


def test_it_never_encodes_the_same_text_twice_in_one_assembly():
    from engine.tokens import TokenCounter

    counter = TokenCounter("cl100k_base")
    encoded = []
    real = counter.encoding

    class Spy:
        def __getattr__(self, name):
            return getattr(real, name)

        def encode(self, text, **kwargs):
            encoded.append(text)
            return real.encode(text, **kwargs)

    counter.encoding = Spy()
    limits = ContextLimits(max_input_tokens=9_000, reserved_for_system_prompt=0, reserved_for_instructions=0)
    builder = ContextBuilder(limits=limits, counter=counter, sources=Sources(task_output=task_output))
    assembly = builder.assemble(references=[ref(name) for name in OUTPUTS],
                                items=[{"name": "notes", "content": text_of(3_000, seed=9), "priority": 3}])
    assert assembly.record["resolution"]["actions"], "something was reduced"
    assert len(encoded) == len(set(encoded))


def test_it_records_the_summary_strategy_actually_used_and_why_it_fell_back():
    def failing_model(text, target):
        raise TimeoutError("the model did not answer")

    builder = ContextBuilder(limits=ContextLimits(), counter=COUNTER, sources=Sources(task_output=task_output),
                             abstractive=failing_model)
    reference = ref("medium_text", summary_config={"strategy": "abstractive"})
    (action,) = builder.assemble(task_id="t", references=[reference]).record["resolution"]["actions"]
    assert (action["action"], action["strategy"]) == ("summarize", "extractive")
    assert action["strategy_note"] == ("abstractive summary failed (TimeoutError: the model did not answer); "
                                       "used extractive")
    (action,) = assemble(references=[ref("medium_text")]).record["resolution"]["actions"]
    assert action["strategy"] == "extractive" and "strategy_note" not in action


def test_it_summarises_a_table_as_a_table():
    assembly = assemble(references=[ref("table", data_type="table")])
    report = by_name(assembly)["table_output"]
    assert report.transfer_mode == "summary" and report.reason == "table data is passed as summary (§5.3)"
    (action,) = assembly.record["resolution"]["actions"]
    assert action["strategy"] == "table" and "rows and the column statistics" in action["strategy_note"]
    lines = report.item.content.splitlines()
    assert lines[:3] == ["| run | bleu |", "| --- | --- |", "| run 0 of the sweep | 20.0 |"]
    assert "rows: 400 (" in report.item.content


def test_it_names_the_encoding_every_count_of_the_record_is_in():
    from engine.tokens import TokenCounter

    assert assemble(references=[ref("small")]).record["encoding"] == "cl100k_base"
    builder = ContextBuilder(limits=ContextLimits(), counter=TokenCounter("o200k_base"),
                             sources=Sources(task_output=task_output))
    record = builder.assemble(task_id="t", references=[ref("medium_text")]).record
    assert record["encoding"] == "o200k_base"
    assert record["total_tokens"] == TokenCounter("o200k_base").count(OUTPUTS["medium_text"])


def test_it_gives_data_the_priority_of_its_most_important_element():
    from engine.context.assembler import infer_priority

    background, evidence, claim = ({"atom_type": kind} for kind in ("background", "evidence", "claim"))
    assert infer_priority(None, "", [background, evidence, "x", claim, {"priority": 4}]) == 1
    assert infer_priority(None, "", {"atoms": [background, evidence], "notes": "n"}) == 2
    assert infer_priority(None, "", [background, {"priority": 4}]) == 3
    assert infer_priority(None, "", ["x", {"content": "y"}]) == 2  # says nothing: "important"
    assert infer_priority(3, "", [claim]) == 3 and infer_priority(None, "raw_text", [claim]) == 4
