import copy

from engine.workflow_diff import workflow_diff

BASE = {
    "workflow_id": "review", "name": "Review", "topology": "state_machine",
    "nodes": [
        {"id": "draft", "agent_ref": "Drafter", "input_mapping": {"topic": "$.input.topic"}, "layout": {"x": 0, "y": 0}},
        {"id": "review", "agent_ref": "Reviewer", "input_mapping": {}},
        {"id": "publish", "agent_ref": "Publisher", "input_mapping": {}},
    ],
    "transitions": [
        {"from": "draft", "to": "review"},
        {"from": "review", "to": "draft", "condition": "output.ok == false"},
        {"from": "review", "to": "publish", "condition": "output.ok == true"},
    ],
    "error_handling": {"retry_count": 0, "fallback_agent": None, "escalate_to": None},
    "limits": {"max_steps": 50, "max_wall_seconds": 3600},
    "domain": "",
    "evaluation": {"judge_agent": None, "quality_gate": None},
}


def test_it_finds_nothing_between_equal_documents():
    diff = workflow_diff(BASE, copy.deepcopy(BASE))
    assert diff["same"] is True
    assert diff["nodes"] == {"added": [], "removed": [], "changed": []}
    assert diff["transitions"] == {"added": [], "removed": [], "changed": []}
    assert diff["settings"] == [] and diff["json"] == []


def test_it_names_nodes_added_removed_and_the_fields_that_changed():
    b = copy.deepcopy(BASE)
    b["nodes"][0]["input_mapping"] = {"topic": "$.input.subject"}
    b["nodes"][0]["layout"] = {"x": 40, "y": 0}
    b["nodes"][1]["agent_ref"] = "Critic"
    b["nodes"][1]["output_mapping"] = {"verdict": "$.ok"}
    del b["nodes"][2]
    b["nodes"].append({"id": "archive", "agent_ref": "Archivist", "input_mapping": {}})
    diff = workflow_diff(BASE, b)
    assert diff["nodes"] == {
        "added": ["archive"], "removed": ["publish"],
        "changed": [{"id": "draft", "fields": ["input_mapping", "layout"]},
                    {"id": "review", "fields": ["agent_ref", "output_mapping"]}],
    }
    assert diff["same"] is False
    assert {"path": "/nodes/1/agent_ref", "op": "changed", "a": "Reviewer", "b": "Critic"} in diff["json"]


def test_it_matches_transitions_by_their_ends_and_their_order_among_them():
    b = copy.deepcopy(BASE)
    b["transitions"][1]["condition"] = "output.ok != true"
    b["transitions"].append({"from": "review", "to": "draft", "condition": "output.retry"})
    del b["transitions"][2]
    diff = workflow_diff(BASE, b)
    assert diff["transitions"]["changed"] == [{
        "from": "review", "to": "draft", "index": 0, "fields": ["condition"],
        "a": BASE["transitions"][1], "b": b["transitions"][1]}]
    assert diff["transitions"]["added"] == [{"from": "review", "to": "draft", "condition": "output.retry", "index": 1}]
    assert diff["transitions"]["removed"] == [{**BASE["transitions"][2], "index": 0}]


def test_it_lists_the_settings_that_changed_with_both_values():
    b = copy.deepcopy(BASE)
    b["name"] = "Review, again"
    b["error_handling"]["retry_count"] = 2
    b["limits"]["max_steps"] = 5
    b["evaluation"]["quality_gate"] = {"completeness": 1.0}
    diff = workflow_diff(BASE, b)
    assert [(s["name"], s["a"], s["b"]) for s in diff["settings"]] == [
        ("name", "Review", "Review, again"),
        ("error_handling", BASE["error_handling"], b["error_handling"]),
        ("limits", BASE["limits"], b["limits"]),
        ("evaluation", BASE["evaluation"], b["evaluation"]),
    ]
    assert diff["nodes"]["changed"] == [] and diff["transitions"]["changed"] == []
