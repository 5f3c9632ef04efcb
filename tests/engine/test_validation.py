from itertools import pairwise

import pytest

from engine.scheduling import RUNS_EVERY_NODE
from engine.validation import find_cycle, validate_workflow

AGENTS = {"scholar", "validator", "vault", "human"}


def workflow(topology="dag", nodes=None, transitions=(), **extra):
    return {
        "workflow_id": "wf",
        "name": "wf",
        "topology": topology,
        "nodes": nodes or [{"id": "a", "agent_ref": "scholar"}, {"id": "b", "agent_ref": "validator"}],
        "transitions": list(transitions),
        **extra,
    }


def problems(document, agents=AGENTS):
    return [(p["where"], p["code"]) for p in validate_workflow(document, agents)]


def test_it_accepts_a_valid_dag():
    assert problems(workflow(transitions=[{"from": "a", "to": "b"}])) == []


def test_it_names_the_node_with_an_unknown_agent():
    document = workflow(nodes=[{"id": "a", "agent_ref": "ghost"}])
    [problem] = validate_workflow(document, AGENTS)
    assert problem["node"] == "a" and problem["code"] == "UNKNOWN_AGENT"
    assert problem["message"] == "agent 'ghost' does not exist"


def test_it_names_dangling_transitions():
    found = problems(workflow(transitions=[{"from": "a", "to": "zz"}, {"from": "a", "to": "b", "on_success": "nowhere"}]))
    assert ("transitions[0].to", "DANGLING_TRANSITION") in found
    assert ("transitions[1].on_success", "DANGLING_TRANSITION") in found


def test_it_accepts_actions_as_transition_outcomes():
    transitions = [{"from": "a", "to": "b", "on_success": "end", "on_failure": "abort"}]
    assert problems(workflow("state_machine", transitions=transitions)) == []
    for on_failure in ("escalate", "abort", "skip"):
        transitions = [{"from": "a", "to": "b", "on_success": "continue", "on_failure": on_failure}]
        assert problems(workflow("dag", transitions=transitions)) == []


@pytest.mark.parametrize("topology", ["seq", "dag"])
def test_it_refuses_what_only_a_state_machine_honours_naming_the_transition(topology):
    nodes = [{"id": "a", "agent_ref": "scholar"}, {"id": "b", "agent_ref": "validator"}, {"id": "c", "agent_ref": "vault"}]
    transitions = [{"from": "a", "to": "b"},
                   {"from": "b", "to": "c", "condition": "output.ok == true", "on_success": "end", "on_failure": "a"}]
    found = validate_workflow(workflow(topology, nodes, transitions), AGENTS)
    assert [(p["where"], p["transition"], p["code"]) for p in found] == [
        ("transitions[1].condition", 1, "TRANSITION_UNHONOURED"),
        ("transitions[1].on_success", 1, "TRANSITION_UNHONOURED"),
        ("transitions[1].on_failure", 1, "TRANSITION_UNHONOURED"),
    ]
    assert found[0]["message"] == (
        f"(b → c) a condition chooses the next node only in a state_machine; {RUNS_EVERY_NODE[topology]}, "
        "so 'c' would run whatever the condition says")
    assert all(p["message"].startswith("(b → c) ") for p in found)


def test_it_names_a_par_transition_with_a_condition():
    found = problems(workflow("par", transitions=[{"from": "a", "to": "b", "condition": "output.ok"}]))
    assert found == [("transitions[0].condition", "TRANSITION_UNHONOURED"), ("nodes[b]", "ORDER")]


def test_it_reports_one_problem_for_a_field_that_is_wrong_twice():
    transitions = [{"from": "a", "to": "b", "on_success": "nowhere"}]
    assert problems(workflow("dag", transitions=transitions)) == [("transitions[0].on_success", "DANGLING_TRANSITION")]


def test_it_finds_cycles_in_a_dag_through_transitions_and_references():
    nodes = [
        {"id": "a", "agent_ref": "scholar"},
        {"id": "b", "agent_ref": "validator", "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "a"}]}},
        {"id": "c", "agent_ref": "vault"},
    ]
    found = validate_workflow(workflow(nodes=nodes, transitions=[{"from": "b", "to": "c"}, {"from": "c", "to": "a"}]), AGENTS)
    assert [p["code"] for p in found] == ["CYCLE"]
    # On the transition that closed it (the last one drawn), not on a node.
    assert (found[0]["where"], found[0]["node"], found[0]["transition"]) == ("transitions[1]", None, 1)
    assert found[0]["message"] == "(c → a) closes a cycle in the dag: a → b → c → a"


def test_it_puts_a_cycle_on_the_latest_transition_along_it_told_from_its_target():
    nodes = [{"id": "a", "agent_ref": "scholar"}, {"id": "b", "agent_ref": "validator"}, {"id": "c", "agent_ref": "vault"}]
    transitions = [{"from": "c", "to": "a"}, {"from": "a", "to": "b"}, {"from": "b", "to": "c"}]
    [found] = validate_workflow(workflow(nodes=nodes, transitions=transitions), AGENTS)
    assert (found["where"], found["transition"]) == ("transitions[2]", 2)
    assert found["message"] == "(b → c) closes a cycle in the dag: c → a → b → c"


def test_it_puts_a_cycle_of_references_alone_on_the_reference_that_closes_it():
    def reads(node_id, other):
        return {"id": node_id, "agent_ref": "scholar",
                "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": other}]}}
    [found] = validate_workflow(workflow(nodes=[reads("a", "b"), reads("b", "a")]), AGENTS)
    assert (found["where"], found["node"], found["code"]) == ("nodes[a].input_mapping.data_references", "a", "CYCLE")
    assert found["message"] == "reading 'b' closes a cycle in the dag: a → b → a"


def test_it_allows_loops_in_a_state_machine_but_not_unreachable_nodes():
    nodes = [{"id": "a", "agent_ref": "scholar"}, {"id": "b", "agent_ref": "validator"}, {"id": "island", "agent_ref": "vault"}]
    transitions = [{"from": "a", "to": "b"}, {"from": "b", "to": "a", "condition": "output.again == true"}]
    assert problems(workflow("state_machine", nodes, transitions)) == [("nodes[island]", "UNREACHABLE")]


def test_it_reports_missing_fallback_and_escalation_agents():
    document = workflow(error_handling={"retry_count": 1, "fallback_agent": "nobody", "escalate_to": "no_one"})
    assert problems(document) == [
        ("error_handling.fallback_agent", "UNKNOWN_AGENT"),
        ("error_handling.escalate_to", "UNKNOWN_AGENT"),
    ]


def test_it_reports_conditions_that_do_not_parse():
    found = validate_workflow(workflow(transitions=[{"from": "a", "to": "b", "condition": "output.x >"}]), AGENTS)
    assert found[0]["where"] == "transitions[0].condition" and found[0]["transition"] == 0
    assert found[0]["message"].startswith("(a → b) ")


def test_it_refuses_code_in_conditions():
    found = problems(workflow(transitions=[{"from": "a", "to": "b", "condition": "__import__('os').system('id')"}]))
    assert found == [("transitions[0].condition", "CONDITION_INVALID")]


@pytest.mark.parametrize(
    "node",
    [
        {"id": "b", "agent_ref": "validator", "input_mapping": {"x": "$.input["}},
        {"id": "b", "agent_ref": "validator", "output_mapping": {"x": "$..["}},
        {"id": "b", "agent_ref": "validator", "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "a", "path": "$.atoms[?(@.x>"}]}},
    ],
)
def test_it_reports_jsonpath_that_does_not_parse(node):
    [problem] = validate_workflow(workflow(nodes=[{"id": "a", "agent_ref": "scholar"}, node]), AGENTS)
    assert problem["code"] == "REF_PATH_INVALID" and problem["node"] == "b"


def test_it_refuses_a_jsonpath_that_is_not_rfc_9535_naming_the_position():
    node = {"id": "b", "agent_ref": "validator", "input_mapping": {"x": "$.a[?(@.name =~ '(a+)+$')]"}}
    [problem] = validate_workflow(workflow(nodes=[{"id": "a", "agent_ref": "scholar"}, node]), AGENTS)
    assert (problem["where"], problem["code"]) == ("nodes[b].input_mapping.x", "REF_PATH_INVALID")
    assert problem["message"].endswith("is not valid: unexpected filter selector token '=', line 1, column 13")


@pytest.mark.parametrize("path, limit", [
    ("$" + ".a" * 20_000, "too long (40001 characters; the limit is 2000)"),
    ("$[?" + "(" * 950 + "@" + ")" * 950 + "]", "is not valid: nested too deeply"),
])
def test_it_refuses_a_jsonpath_beyond_the_limits_naming_the_node(path, limit):
    references = [{"ref_type": "task_output", "task_id": "a", "path": path}]
    node = {"id": "b", "agent_ref": "validator", "input_mapping": {"data_references": references, "x": path},
            "output_mapping": {"y": path}}
    found = validate_workflow(workflow(nodes=[{"id": "a", "agent_ref": "scholar"}, node]), AGENTS)
    assert [(p["where"], p["node"], p["code"]) for p in found] == [
        ("nodes[b].input_mapping.data_references[0].path", "b", "REF_PATH_INVALID"),
        ("nodes[b].input_mapping.x", "b", "REF_PATH_INVALID"),
        ("nodes[b].output_mapping.y", "b", "REF_PATH_INVALID"),
    ]
    assert all(limit in p["message"] and len(p["message"]) < 200 for p in found)


def test_it_accepts_a_jsonpath_just_within_the_limits():
    node = {"id": "b", "agent_ref": "validator", "output_mapping": {"y": "$" + ".a" * 49}}
    assert validate_workflow(workflow(nodes=[{"id": "a", "agent_ref": "scholar"}, node]), AGENTS) == []


def test_it_reports_references_to_tasks_that_are_not_nodes():
    node = {"id": "b", "agent_ref": "validator", "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "elsewhere"}]}}
    assert problems(workflow(nodes=[{"id": "a", "agent_ref": "scholar"}, node])) == [
        ("nodes[b].input_mapping.data_references[0].task_id", "REF_NOT_FOUND")
    ]


def test_it_reports_a_named_input_that_reads_a_node_that_does_not_exist():
    node = {"id": "b", "agent_ref": "validator",
            "input_mapping": {"draft": "$.nodes.drafter.text", "all": "$.nodes", "a": "$.nodes['a']"}}
    found = validate_workflow(workflow(nodes=[{"id": "a", "agent_ref": "scholar"}, node]), AGENTS)
    assert [(p["where"], p["code"], p["message"]) for p in found] == [
        ("nodes[b].input_mapping.draft", "REF_NOT_FOUND",
         "reads '$.nodes.drafter.text': 'drafter' is not a node of this workflow")]


def test_it_refuses_a_seq_node_that_reads_a_later_one():
    nodes = [
        {"id": "a", "agent_ref": "scholar", "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "b"}]}},
        {"id": "b", "agent_ref": "validator"},
    ]
    assert problems(workflow("seq", nodes)) == [("nodes[a]", "ORDER")]


def test_it_refuses_dependencies_between_par_nodes():
    assert problems(workflow("par", transitions=[{"from": "a", "to": "b"}])) == [("nodes[b]", "ORDER")]


def test_it_reports_duplicate_node_ids():
    nodes = [{"id": "a", "agent_ref": "scholar"}, {"id": "a", "agent_ref": "validator"}]
    assert ("nodes[a]", "DUPLICATE_NODE") in problems(workflow(nodes=nodes))


def test_it_finds_no_cycle_in_a_long_chain_without_recursion_limits():
    ids = [f"n{i}" for i in range(5000)]
    assert find_cycle(ids, list(pairwise(ids))) is None
    assert find_cycle(ids, list(pairwise(ids)) + [("n4999", "n0")])[0] == "n0"
