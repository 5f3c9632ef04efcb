"""Node kinds: one registry, and a node's kind chosen in one place from its document and
the agent that runs it."""
from types import SimpleNamespace

from agents.models import Agent
from executions import node_kinds
from executions.node_kinds import gate, llm, subworkflow, tot
from workflows.models import Node

TOT = Agent(capabilities={"skills": ["tot_orchestrate", "solve"]})


def test_it_holds_each_kind_once_by_its_name():
    assert node_kinds.KINDS == {"llm": llm.KIND, "tot": tot.KIND, "gate": gate.KIND, "subworkflow": subworkflow.KIND}
    for name, kind in node_kinds.KINDS.items():
        assert kind.name == name
        assert kind.shape in ("agent", "gate", "workflow")


def test_a_node_that_names_no_kind_is_its_agents():
    assert node_kinds.kind_of(Node(agent=TOT)) is tot.KIND
    for capabilities in ({"skills": ["draft"]}, {}):
        assert node_kinds.kind_of(Node(agent=Agent(capabilities=capabilities))) is llm.KIND
    # A fallback agent (or a pinned version) that does the work differently decides it.
    assert node_kinds.kind_of(Node(agent=Agent(capabilities={})), TOT) is tot.KIND


def test_a_gate_or_a_subworkflow_object_makes_the_node_that_kind_whatever_its_agent():
    assert node_kinds.kind_of(Node(agent=TOT, gate={"prompt": "ok?"})) is gate.KIND
    assert node_kinds.kind_of(Node(agent=TOT, subworkflow={"workflow_ref": "w"})) is subworkflow.KIND
    assert node_kinds.chosen(gate=None, subworkflow=None).shape == "agent"


def test_only_the_kinds_whose_agent_works_call_it():
    assert {name for name, kind in node_kinds.KINDS.items() if kind.calls_agent} == {"llm", "tot"}
    assert {name for name, kind in node_kinds.KINDS.items() if kind.decided_by_people} == {"gate"}
    assert {name for name, kind in node_kinds.KINDS.items() if kind.trial_refusal} == {"gate", "subworkflow"}


def test_perform_runs_the_node_as_the_kind_of_the_agent_running_it(monkeypatch):
    monkeypatch.setattr(tot.KIND, "perform", lambda run, graph, node: ("tot", node.node_id))
    monkeypatch.setattr(llm.KIND, "perform", lambda run, graph, node: ("llm", node.node_id))
    node = Node(node_id="n", agent=Agent(capabilities={}))
    assert node_kinds.perform(SimpleNamespace(agent=TOT), None, node) == ("tot", "n")
    assert node_kinds.perform(SimpleNamespace(agent=node.agent), None, node) == ("llm", "n")


def test_only_a_decided_gate_tells_the_engine_a_decision():
    decided = SimpleNamespace(gate={"decision": "approve", "comment": "", "decided_by": "ana", "timed_out": False,
                                    "prompt": "ok?"})
    assert gate.KIND.decision(decided) == {"decision": "approve", "comment": "", "decided_by": "ana",
                                           "timed_out": False}
    assert gate.KIND.decision(SimpleNamespace(gate={"decision": None})) is None
    assert llm.KIND.decision(decided) is None
