"""Node kinds: a node runs as the kind its agent makes it."""
from types import SimpleNamespace

from agents.models import Agent
from executions import node_kinds as nodes
from executions.node_kinds import llm, tot


def test_it_runs_the_node_of_an_agent_with_tot_orchestrate_as_a_tree_of_thoughts_search(monkeypatch):
    monkeypatch.setitem(nodes.KINDS, "tot", lambda run, graph, node: ("tot", node))
    run = SimpleNamespace(agent=Agent(capabilities={"skills": ["tot_orchestrate", "solve"]}))
    assert nodes.perform(run, graph=None, node="n") == ("tot", "n")


def test_it_runs_the_node_of_any_other_agent_as_a_prompt_to_its_backend(monkeypatch):
    monkeypatch.setitem(nodes.KINDS, "llm", lambda run, graph, node: ("llm", node))
    for capabilities in ({"skills": ["draft"]}, {}):
        run = SimpleNamespace(agent=Agent(capabilities=capabilities))
        assert nodes.perform(run, graph=None, node="n") == ("llm", "n")


def test_it_knows_each_kind_by_its_one_run():
    assert nodes.KINDS == {"llm": llm.perform, "tot": tot.perform_search}
