import json
from io import StringIO

import pytest
from django.core.management import call_command
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase as HypothesisTestCase

from agents.models import Agent, AgentVersion
from agents.services import agent_import_document, next_version
from core.documents import export_document, import_documents
from core.errors import DocumentError, IllegalTransition
from core.status_writes import change_status

pytestmark = pytest.mark.django_db


def agent(agent_id, parent=None, **extra):
    document = {"agent_id": agent_id, "name": agent_id.title(), **extra}
    if parent:
        document["lineage"] = {"parent_id": parent}
    return document


def test_it_derives_root_and_level_from_the_parent():
    import_documents([agent("c", parent="b"), agent("b", parent="a"), agent("a")])
    a, b, c = (Agent.objects.get(agent_id=x) for x in "abc")
    assert (a.root, a.level) == (a, 0)
    assert (b.root, b.level, c.root, c.level) == (a, 1, a, 2)
    assert export_document("agent", "a")["lineage"] == {"parent_id": None, "root_id": "a", "level": 0, "children_ids": ["b"]}


def test_it_moves_a_whole_subtree_when_an_agent_changes_parent():
    import_documents([agent("a"), agent("b", parent="a"), agent("c", parent="b"), agent("x")])
    agent_import_document(agent("b", parent="x"))
    c = Agent.objects.get(agent_id="c")
    assert (c.root.agent_id, c.level) == ("x", 2)
    assert export_document("agent", "a")["lineage"]["children_ids"] == []


def test_it_refuses_a_parent_that_descends_from_the_agent():
    import_documents([agent("a"), agent("b", parent="a")])
    with pytest.raises(DocumentError, match=r"lineage.parent_id: 'b' descends from 'a'"):
        agent_import_document(agent("a", parent="b"))
    assert Agent.objects.get(agent_id="a").parent is None


def test_it_refuses_a_stated_level_that_contradicts_the_parent():
    import_documents([agent("a")])
    with pytest.raises(DocumentError, match=r"lineage.level: is derived from the parent and must be 1, not 3"):
        import_documents(agent("b") | {"lineage": {"parent_id": "a", "level": 3}})
    assert not Agent.objects.filter(agent_id="b").exists()


def test_it_refuses_children_ids_that_are_not_children():
    import_documents([agent("a"), agent("b")])
    with pytest.raises(DocumentError, match=r"lists 'b', whose parent is 'none'"):
        import_documents(agent("a") | {"lineage": {"children_ids": ["b"]}})


def test_it_creates_a_new_version_when_a_published_agent_changes():
    agent_import_document(agent("a", prompt_config={"system_prompt": "v1"}))
    first = AgentVersion.objects.get(agent__agent_id="a")
    _, outcome = agent_import_document(agent("a", prompt_config={"system_prompt": "v2"}))
    assert outcome == "updated"
    a = Agent.objects.get(agent_id="a")
    assert a.version == "1.0.1"
    assert list(a.versions.values_list("version", flat=True).order_by("id")) == ["1.0.0", "1.0.1"]
    first.refresh_from_db()
    assert first.content["prompt_config"] == {"system_prompt": "v1"}, "old versions never change"


def test_it_keeps_the_version_when_nothing_that_is_versioned_changes():
    agent_import_document(agent("a"))
    _, outcome = agent_import_document(agent("a"))
    assert outcome == "unchanged"
    _, outcome = agent_import_document(agent("a", status="inactive"))
    assert outcome == "updated"
    assert AgentVersion.objects.filter(agent__agent_id="a").count() == 1


def test_it_uses_a_version_the_author_names():
    agent_import_document(agent("a"))
    agent_import_document(agent("a", version="2.0.0", constraints=["new rule"]))
    assert Agent.objects.get(agent_id="a").version == "2.0.0"


def test_it_says_so_when_a_named_version_exists_with_other_content(monkeypatch):
    agent_import_document(agent("a", version="1.0.0", constraints=["old rule"]))
    monkeypatch.setattr("sys.stdin", StringIO(json.dumps(agent("a", version="1.0.0", constraints=["new"]))))
    out = StringIO()
    call_command("import_document", "-", stdout=out)
    assert out.getvalue() == ("updated, stored as version 1.0.1: version '1.0.0' exists with other content, and a "
                              "version never changes: agent a\n")
    a = Agent.objects.get(agent_id="a")
    assert (a.version, a.constraints) == ("1.0.1", ["new"])
    assert AgentVersion.objects.get(agent=a, version="1.0.0").content["constraints"] == ["old rule"]


def test_it_keeps_a_taken_version_whose_content_is_the_same():
    agent_import_document(agent("a", version="1.0.0", constraints=["rule"]))
    _, outcome = agent_import_document(agent("a", version="1.0.0", constraints=["rule"]))
    assert outcome == "unchanged"


def test_it_bumps_versions_past_ones_taken():
    assert next_version("1.0.0", {"1.0.0", "1.0.1"}) == "1.0.2"
    assert next_version("beta", {"beta"}) == "beta.1"


def test_it_checks_derived_context_limits():
    with pytest.raises(DocumentError, match=r"context_limits.effective_data_limit: is derived and must be 82800, not 90000"):
        agent_import_document(agent("a", context_limits={"effective_data_limit": 90000}))
    created, _ = agent_import_document(agent("b", context_limits={"max_input_tokens": 100000, "available_for_data": 92000, "safety_margin": 0.9}))
    assert created.effective_data_limit == 82800


def test_it_refuses_backends_operators_did_not_configure():
    with pytest.raises(DocumentError, match=r"runtime.backend: backend 'shell' is not configured"):
        agent_import_document(agent("a", runtime={"backend": "shell"}))


def test_it_caps_the_data_budget_by_the_role_data_area():
    created, _ = agent_import_document(agent("s", runtime={"role": "Scholar"}))
    assert (created.effective_data_limit, created.data_budget) == (82800, 80000)


def test_it_refuses_illegal_status_transitions():
    created, _ = agent_import_document(agent("a", status="deprecated"))
    with pytest.raises(IllegalTransition, match="cannot go from 'deprecated' to 'inactive'"):
        agent_import_document(agent("a", status="inactive"))
    change_status(created, Agent.STATES, "active")
    assert Agent.objects.get(agent_id="a").status == "active"


def test_it_refuses_a_status_change_someone_else_already_made():
    created, _ = agent_import_document(agent("a"))
    stale = Agent.objects.get(agent_id="a")
    change_status(created, Agent.STATES, "inactive")
    with pytest.raises(IllegalTransition) as caught:
        change_status(stale, Agent.STATES, "inactive")
    assert caught.value.code == "CONFLICT"


class TestLineageInvariants(HypothesisTestCase):
    @hsettings(max_examples=25, deadline=None)
    @given(st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=12), st.data())
    def test_it_keeps_lineage_consistent_under_random_trees_and_moves(self, parents, data):
        # Agent i hangs under an earlier agent (or is a root), then random moves re-parent some.
        documents = [agent(f"n{i}", parent=f"n{p % i}" if i and p % 3 else None) for i, p in enumerate(parents)]
        import_documents(documents)
        for _ in range(data.draw(st.integers(0, 4))):
            mover = data.draw(st.integers(0, len(parents) - 1))
            target = data.draw(st.integers(-1, len(parents) - 1))
            try:
                agent_import_document(agent(f"n{mover}", parent=f"n{target}" if target >= 0 else None))
            except DocumentError:
                pass  # moving under a descendant is refused; the tree must still be consistent
        for node in Agent.objects.select_related("parent", "root"):
            if node.parent is None:
                assert (node.root_id, node.level) == (node.pk, 0)
            else:
                assert node.level == node.parent.level + 1
                assert node.root_id == node.parent.root_id
            assert node.root.level == 0 and node.root.parent is None
            assert set(node.children_ids) == {c.agent_id for c in Agent.objects.filter(parent=node)}
