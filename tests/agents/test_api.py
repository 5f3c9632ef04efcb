"""The agents router: agents with versions and lineage, derive requests and their approval."""
import pytest

from agents.documents import agent_document
from agents.models import Agent, AgentVersion, DeriveRequest
from agents.services import agent_import_document
from core.errors import DocumentError
from quality.derive_requests.services import derive_request_import_document

pytestmark = pytest.mark.django_db


def agent(agent_id, parent=None, **extra):
    document = {"agent_id": agent_id, "name": agent_id.title(), **extra}
    if parent:
        document["lineage"] = {"parent_id": parent}
    return document


@pytest.fixture
def tree():
    """scholar → scholar_cv → scholar_cv_3d, and an unrelated meta agent."""
    for document in (
        agent("scholar", prompt_config={"system_prompt": "Read papers"}, capabilities={"skills": ["extract_atoms"]}),
        agent("scholar_cv", parent="scholar"),
        agent("scholar_cv_3d", parent="scholar_cv", status="inactive"),
        agent("planner", type="meta", name="Chief Planner"),
    ):
        agent_import_document(document, actor="seed")


@pytest.fixture
def pending(tree):
    request, _ = derive_request_import_document({
        "derive_request_id": "dr_001", "parent_agent_id": "scholar", "trigger": "quality_issue",
        "trigger_context": {"average_score": 0.42}, "specialization": {"new_name": "Scholar (CV)"},
    }, actor="seed")
    return request


def stored(agent_id):
    """What the database holds for an agent: its document and its versions."""
    found = Agent.objects.get(agent_id=agent_id)
    return agent_document(found), sorted(found.versions.values_list("version", flat=True))


# --- reading agents ---------------------------------------------------------------------

def test_it_refuses_requests_without_credentials(api, tree):
    assert api.anonymous.get("/api/agents").status_code == 401
    assert api.anonymous.get("/api/agents/scholar").status_code == 401
    response = api.anonymous.post("/api/agents", agent("intruder"))
    assert response.status_code == 401 and response.json()["code"] == "UNAUTHENTICATED"
    assert not Agent.objects.filter(agent_id="intruder").exists()


def test_it_lists_agents_as_seed_documents_with_filters(api, tree):
    everything = api.viewer.get("/api/agents").json()
    assert everything["count"] == 4
    assert [a["agent_id"] for a in everything["items"]] == ["planner", "scholar", "scholar_cv", "scholar_cv_3d"]
    assert everything["items"][1] == agent_document(Agent.objects.get(agent_id="scholar"))

    def ids(**filters):
        return [a["agent_id"] for a in api.viewer.get("/api/agents", **filters).json()["items"]]

    assert ids(root="scholar") == ["scholar", "scholar_cv", "scholar_cv_3d"]
    assert ids(status="inactive") == ["scholar_cv_3d"]
    assert ids(type="meta") == ["planner"]
    assert ids(q="CHIEF") == ["planner"]  # names, case-insensitively
    assert ids(q="cv_") == ["scholar_cv_3d"]  # and agent ids
    assert ids(root="scholar", status="active") == ["scholar", "scholar_cv"]
    page = api.viewer.get("/api/agents", limit=2, offset=1).json()
    assert ([a["agent_id"] for a in page["items"]], page["count"]) == (["scholar", "scholar_cv"], 4)


def test_it_refuses_bad_list_filters_naming_them(api, tree):
    for params, field in (({"status": "retired"}, "query.status"), ({"type": "x"}, "query.type"),
                          ({"root": "no spaces"}, "query.root"), ({"q": "a\x00b"}, "query.q"),
                          ({"limit": 0}, "query.limit")):
        response = api.viewer.get("/api/agents", **params)
        assert response.status_code == 422, params
        assert response.json()["code"] == "VALIDATION_ERROR" and field in response.json()["message"]


def test_it_shows_an_agent_with_its_versions_and_lineage(api, tree):
    detail = api.viewer.get("/api/agents/scholar_cv_3d").json()
    assert detail["lineage"] == {"parent_id": "scholar_cv", "root_id": "scholar", "level": 2, "children_ids": [],
                                 "ancestors": ["scholar", "scholar_cv"]}
    assert [(v["version"], v["created_by"]) for v in detail["versions"]] == [("1.0.0", "seed")]
    root = api.viewer.get("/api/agents/scholar").json()
    assert root["lineage"] == {"parent_id": None, "root_id": "scholar", "level": 0, "children_ids": ["scholar_cv"],
                               "ancestors": []}
    assert root["prompt_config"] == {"system_prompt": "Read papers"}
    assert root["metadata"]["created_by"] == "seed"


def test_it_answers_404_json_for_an_unknown_agent_or_version(api, tree):
    for path in ("/api/agents/nobody", "/api/agents/no%20body", "/api/agents/a%00b", "/api/agents/scholar/versions/9.9.9",
                 "/api/agents/nobody/versions/1.0.0", "/api/agents/scholar/versions/1%000"):
        response = api.viewer.get(path)
        assert response.status_code == 404, path
        assert response.json()["code"] == "NOT_FOUND"
    assert "versions: 1.0.0" in api.viewer.get("/api/agents/scholar/versions/9.9.9").json()["message"]


def test_it_quotes_only_the_start_of_a_long_unknown_version(api, tree):
    response = api.viewer.get("/api/agents/scholar/versions/" + "9" * 100_000)
    assert response.status_code == 404 and len(response.content) < 500, len(response.content)
    assert response.json()["message"] == f"agent 'scholar' has no version '{'9' * 60}… (100000 characters)' (versions: 1.0.0)"
    assert api.viewer.get("/api/agents/scholar/versions/" + "9" * 60).json()["details"]["version"] == "9" * 60


# --- writing agents ---------------------------------------------------------------------

def test_it_creates_an_agent_from_a_seed_document(api, tree):
    document = agent("scholar_nlp", parent="scholar", version="2.0.0", capabilities={"skills": ["extract_atoms", "ner"]},
                     metadata={"created_by": "someone else", "created_at": "2020-01-01T00:00:00Z"})
    response = api.admin.post("/api/agents", document)
    assert response.status_code == 201
    body = response.json()
    assert (body["agent_id"], body["version"], body["capabilities"]["skills"]) == ("scholar_nlp", "2.0.0", ["extract_atoms", "ner"])
    assert body["lineage"] | {"children_ids": None} == {"parent_id": "scholar", "root_id": "scholar", "level": 1,
                                                       "children_ids": None, "ancestors": ["scholar"]}
    # The server owns metadata: who created the agent is who signed in, now.
    assert body["metadata"]["created_by"] == "admin-user" and not body["metadata"]["created_at"].startswith("2020")
    assert [v["version"] for v in body["versions"]] == ["2.0.0"]
    assert AgentVersion.objects.get(agent__agent_id="scholar_nlp").created_by == "admin-user"
    assert "scholar_nlp" in api.viewer.get("/api/agents/scholar").json()["lineage"]["children_ids"]


def test_only_an_admin_or_an_approved_derive_request_makes_a_child_agent(api, tree):
    response = api.author.post("/api/agents", agent("scholar_nlp", parent="scholar"))
    assert response.status_code == 403 and "derive request" in response.json()["message"]
    assert not Agent.objects.filter(agent_id="scholar_nlp").exists()
    assert api.author.post("/api/agents", agent("scholar_nlp")).status_code == 201  # a root agent is an author's
    before = stored("scholar_nlp")
    moved = api.author.put("/api/agents/scholar_nlp", agent("scholar_nlp", parent="scholar"))
    assert moved.status_code == 403 and stored("scholar_nlp") == before
    unchanged_parent = api.author.put("/api/agents/scholar_cv_3d", {"name": "Scholar 3D"})
    assert unchanged_parent.status_code == 200  # editing a child without moving it is an author's


def test_it_refuses_to_create_an_agent_whose_id_is_taken(api, tree):
    before = stored("scholar")
    response = api.author.post("/api/agents", agent("scholar", prompt_config={"system_prompt": "overwritten"}))
    assert response.status_code == 409
    assert response.json()["code"] == "CONFLICT" and "PUT /api/agents/scholar" in response.json()["message"]
    assert stored("scholar") == before


def test_it_lets_only_authors_write_agents(api, tree):
    before = stored("scholar")
    for client in (api.viewer, api.approver):
        assert client.post("/api/agents", agent("newcomer")).status_code == 403
        assert client.put("/api/agents/scholar", agent("scholar", name="Renamed")).json()["code"] == "FORBIDDEN"
        assert client.post("/api/agents/scholar/deprecate").status_code == 403
    assert not Agent.objects.filter(agent_id="newcomer").exists()
    assert stored("scholar") == before
    assert api.admin.put("/api/agents/scholar", agent("scholar", name="Renamed")).status_code == 200


def test_it_bumps_the_version_on_edit_and_keeps_the_old_one_readable(api, tree):
    document = api.viewer.get("/api/agents/scholar").json()
    document["prompt_config"]["system_prompt"] = "Read papers carefully"
    response = api.author.put("/api/agents/scholar", document)  # the detail, sent back as it came plus the edit
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == "1.0.1" and body["prompt_config"]["system_prompt"] == "Read papers carefully"
    assert [(v["version"], v["created_by"]) for v in body["versions"]] == [("1.0.1", "author-user"), ("1.0.0", "seed")]
    old = api.viewer.get("/api/agents/scholar/versions/1.0.0").json()
    assert old["content"]["prompt_config"] == {"system_prompt": "Read papers"}
    new = api.viewer.get("/api/agents/scholar/versions/1.0.1").json()
    assert new["content"]["prompt_config"] == {"system_prompt": "Read papers carefully"} and new["created_by"] == "author-user"


def test_it_makes_no_version_when_nothing_changed(api, tree):
    document = api.viewer.get("/api/agents/scholar").json()
    response = api.author.put("/api/agents/scholar", document)
    assert response.status_code == 200 and response.json()["version"] == "1.0.0"
    assert AgentVersion.objects.filter(agent__agent_id="scholar").count() == 1


def test_it_keeps_status_and_parent_when_an_edit_leaves_them_out(api, tree):
    response = api.author.put("/api/agents/scholar_cv_3d", {"name": "Scholar 3D"})  # no agent_id: the path names it
    assert response.status_code == 200
    body = response.json()
    assert (body["name"], body["status"], body["lineage"]["parent_id"]) == ("Scholar 3D", "inactive", "scholar_cv")
    moved = api.admin.put("/api/agents/scholar_cv_3d", {"name": "Scholar 3D", "lineage": {"parent_id": None}}).json()
    assert moved["lineage"] | {"children_ids": None} == {"parent_id": None, "root_id": "scholar_cv_3d", "level": 0,
                                                         "children_ids": None, "ancestors": []}


def test_it_refuses_a_body_whose_agent_id_differs_from_the_path(api, tree):
    before = stored("scholar")
    response = api.author.put("/api/agents/scholar", agent("planner", name="Hijack"))
    assert response.status_code == 422
    assert response.json()["message"].startswith("agent_id: is 'planner' but the path names 'scholar'")
    assert stored("scholar") == before and stored("planner")[0]["name"] == "Chief Planner"
    assert api.author.put("/api/agents/nobody", agent("nobody")).status_code == 404
    assert not Agent.objects.filter(agent_id="nobody").exists()


@pytest.mark.parametrize("change, where", [
    ({"prompt_config": {"system_prompt": 42}}, "prompt_config.system_prompt"),
    ({"prompt_config": {"system_promt": "typo"}}, "prompt_config"),
    ({"capabilities": {"skills": "extract_atoms"}}, "capabilities.skills"),
    ({"type": "wizard"}, "type"),
    ({"status": "retired"}, "status"),
    ({"name": ""}, "name"),
    ({"name": "nul\x00byte"}, "name"),
    ({"constraints": ["ok", "lone \ud800 surrogate"]}, "constraints[1]"),
    ({"lineage": {"parent_id": "nobody"}}, "lineage.parent_id"),
    ({"lineage": {"parent_id": None, "level": 4}}, "lineage.level"),
    ({"lineage": {"children_ids": ["planner"]}}, "lineage.children_ids"),
    ({"context_limits": {"max_input_tokens": 1000, "reserved_for_system_prompt": 900, "reserved_for_instructions": 100}}, "context_limits"),
    ({"context_limits": {"max_input_tokens": 10**30}}, "context_limits.max_input_tokens"),
    ({"runtime": {"backend": "skynet"}}, "runtime.backend"),
    ({"runtime": {"model": "m" * 201}}, "runtime.model"),
    ({"metadata": {"created_at": 5}}, "metadata.created_at"),
])
def test_it_names_the_field_of_a_bad_document_and_keeps_the_stored_agent(api, tree, change, where):
    before = stored("scholar")
    document = api.viewer.get("/api/agents/scholar").json()
    document["prompt_config"]["system_prompt"] = "a change that would make a new version"
    response = api.admin.put("/api/agents/scholar", document | change)
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_DOCUMENT"
    assert response.json()["message"].startswith(f"{where}: ")
    assert stored("scholar") == before
    created = api.admin.post("/api/agents", agent("scholar_new") | change)
    assert created.status_code == 422 and created.json()["message"].startswith(f"{where}: ")
    assert not Agent.objects.filter(agent_id="scholar_new").exists()


def test_it_refuses_a_parent_that_descends_from_the_agent(api, tree):
    before = stored("scholar")
    response = api.admin.put("/api/agents/scholar", agent("scholar", parent="scholar_cv_3d"))
    assert response.status_code == 422
    assert response.json()["message"] == "lineage.parent_id: 'scholar_cv_3d' descends from 'scholar', so it cannot be its parent"
    assert stored("scholar") == before


def test_it_refuses_a_body_that_is_not_an_object(api, tree):
    response = api.author.client.post("/api/agents", "[1, 2]", content_type="application/json")
    assert response.status_code == 422 and response.json()["code"] == "VALIDATION_ERROR"
    response = api.author.client.put("/api/agents/scholar", "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "BAD_REQUEST"


def test_it_deprecates_an_agent_through_its_state_machine(api, tree):
    response = api.author.post("/api/agents/scholar_cv/deprecate")
    assert response.status_code == 200 and response.json()["status"] == "deprecated"
    assert response.json()["version"] == "1.0.0"  # a status is not a new version
    again = api.author.post("/api/agents/scholar_cv/deprecate")
    assert again.status_code == 409
    assert again.json() | {"details": None} == {"code": "ILLEGAL_TRANSITION", "message": "agent 'scholar_cv' is deprecated already",
                                                "details": None}
    assert api.author.post("/api/agents/nobody/deprecate").status_code == 404


# --- derive requests --------------------------------------------------------------------

def derive(**extra):
    return {"parent_agent_id": "scholar", "trigger": "capability_gap", "trigger_context": {"node_id": "extract"},
            "specialization": {"new_name": "Scholar (3D)", "domain_focus": "point clouds",
                               "additional_skills": ["read_meshes"], "additional_constraints": ["cite datasets"]},
            **extra}


def test_it_raises_a_derive_request_that_starts_pending(api, tree):
    response = api.author.post("/api/derive-requests", derive(status="approved", result_agent_id="planner"))
    assert response.status_code == 201
    body = response.json()
    assert body["derive_request_id"].startswith("dr_")
    history = body.pop("history")
    assert [(e["event"], e["status"], e["actor"], e["comment"]) for e in history] == [
        ("raised", "pending", "author-user", "raised by hand")]
    assert body | {"derive_request_id": None, "created_at": None} == {
        "derive_request_id": None, "parent_agent_id": "scholar", "trigger": "capability_gap",
        "trigger_context": {"node_id": "extract"},
        "specialization": {"new_name": "Scholar (3D)", "domain_focus": "point clouds",
                           "additional_skills": ["read_meshes"], "additional_constraints": ["cite datasets"]},
        "status": "pending", "result_agent_id": None, "created_at": None, "created_by": "author-user",
        "decided_by": None, "decided_at": None, "comment": "", "result_error": "", "evidence": None,
    }
    assert DeriveRequest.objects.get(derive_request_id=body["derive_request_id"]).status == "pending"
    named = api.author.post("/api/derive-requests", derive(derive_request_id="dr_3d", trigger="quality_issue"))
    assert named.status_code == 201 and named.json()["derive_request_id"] == "dr_3d"
    assert api.viewer.get("/api/derive-requests/dr_3d").json() == named.json()


def test_it_refuses_a_second_pending_request_for_the_same_agent_and_trigger(api, tree):
    first = api.author.post("/api/derive-requests", derive()).json()["derive_request_id"]
    again = api.author.post("/api/derive-requests", derive(derive_request_id="dr_again"))
    assert again.status_code == 409
    assert f"derive request '{first}' for agent 'scholar' and trigger 'capability_gap' is pending" in again.json()["message"]
    assert list(DeriveRequest.objects.values_list("derive_request_id", flat=True)) == [first]
    assert api.approver.post(f"/api/derive-requests/{first}/reject", {"comment": "no"}).status_code == 200
    assert api.author.post("/api/derive-requests", derive(derive_request_id="dr_again")).status_code == 201


def test_it_refuses_a_trigger_context_nested_too_deeply(api, tree):
    context = "x"
    for _ in range(300):  # parses, and was stored for whatever walks it recursively to overflow on
        context = [context]
    response = api.author.post("/api/derive-requests", derive(trigger_context={"evidence": context}))
    assert response.status_code == 422
    assert response.json()["message"].endswith(": is nested more than 64 levels deep")
    assert response.json()["message"].startswith("trigger_context.evidence[0][0]")
    assert not DeriveRequest.objects.exists()


def test_it_names_what_is_wrong_with_a_derive_request(api, tree, pending):
    cases = [
        (derive(parent_agent_id="nobody"), 422, "parent_agent_id: agent 'nobody' does not exist"),
        (derive(trigger="boredom"), 422, "body.payload.trigger"),
        (derive(specialization={"new_name": ""}), 422, "body.payload.specialization.new_name"),
        (derive(specialization={"domain_focus": "x"}), 422, "body.payload.specialization.new_name"),
        (derive(derive_request_id="no spaces"), 422, "body.payload.derive_request_id"),
        (derive(trigger_context={"note": "nul\x00"}), 422, "trigger_context.note: contains a NUL character"),
        (derive(derive_request_id="dr_001"), 409, "derive request 'dr_001' exists already"),
    ]
    for body, status, message in cases:
        response = api.author.post("/api/derive-requests", body)
        assert response.status_code == status, body
        assert message in response.json()["message"], response.json()
    assert list(DeriveRequest.objects.values_list("derive_request_id", "parent_agent__agent_id")) == [("dr_001", "scholar")]


def test_it_lets_only_authors_raise_derive_requests(api, tree):
    for client in (api.viewer, api.approver):
        assert client.post("/api/derive-requests", derive()).status_code == 403
    assert api.anonymous.post("/api/derive-requests", derive()).status_code == 401
    assert not DeriveRequest.objects.exists()


def test_it_lets_only_approvers_decide(api, pending):
    for client in (api.author, api.viewer):
        for verb in ("approve", "reject"):
            response = client.post(f"/api/derive-requests/dr_001/{verb}", {"comment": "looks fine"})
            assert response.status_code == 403 and response.json()["code"] == "FORBIDDEN"
    pending.refresh_from_db()
    assert (pending.status, pending.decided_by, pending.comment) == ("pending", None, "")
    assert api.admin.post("/api/derive-requests/dr_001/approve", {}).json()["decided_by"] == "admin-user"


def test_it_approves_once_and_refuses_a_second_decision(api, pending):
    response = api.approver.post("/api/derive-requests/dr_001/approve", {"comment": "CV papers keep failing"})
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["decided_by"], body["comment"]) == ("approved", "approver-user", "CV papers keep failing")
    assert body["decided_at"] and body["result_agent_id"] is None  # the child agent comes from a later task
    pending.refresh_from_db()
    decided = (pending.status, pending.decided_by_id, pending.decided_at, pending.comment)

    for verb in ("approve", "reject"):
        again = api.admin.post(f"/api/derive-requests/dr_001/{verb}", {"comment": "second thoughts"})
        assert again.status_code == 409
        assert again.json()["code"] == "ILLEGAL_TRANSITION"
        assert again.json()["message"] == ("derive request 'dr_001' was approved by approver-user already; "
                                           "only a pending request can be approved or rejected")
    pending.refresh_from_db()
    assert (pending.status, pending.decided_by_id, pending.decided_at, pending.comment) == decided
    assert not Agent.objects.filter(name="Scholar (CV)").exists()


def test_it_rejects_a_pending_request_and_then_refuses_to_approve_it(api, pending):
    response = api.approver.post("/api/derive-requests/dr_001/reject", {"comment": "one bad week"})
    assert (response.status_code, response.json()["status"], response.json()["comment"]) == (200, "rejected", "one bad week")
    approve = api.approver.post("/api/derive-requests/dr_001/approve", {"comment": "changed my mind"})
    assert approve.status_code == 409 and "was rejected by approver-user already" in approve.json()["message"]
    pending.refresh_from_db()
    assert (pending.status, pending.comment) == ("rejected", "one bad week")


def test_it_answers_404_for_an_unknown_derive_request(api, pending):
    for response in (api.viewer.get("/api/derive-requests/dr_999"), api.viewer.get("/api/derive-requests/a%00b"),
                     api.approver.post("/api/derive-requests/dr_999/approve", {})):
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    response = api.approver.post("/api/derive-requests/dr_001/approve", {"comment": 5})
    assert response.status_code == 422 and "body.payload.comment" in response.json()["message"]
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_it_lists_derive_requests_newest_first_with_filters(api, pending):
    api.author.post("/api/derive-requests", derive(derive_request_id="dr_002"))
    api.author.post("/api/derive-requests", derive(derive_request_id="dr_003", parent_agent_id="planner"))
    api.approver.post("/api/derive-requests/dr_002/reject", {"comment": "no"})

    def ids(**filters):
        body = api.viewer.get("/api/derive-requests", **filters).json()
        assert body["count"] == len(body["items"])
        return [r["derive_request_id"] for r in body["items"]]

    assert ids() == ["dr_003", "dr_002", "dr_001"]
    assert ids(status="pending") == ["dr_003", "dr_001"]
    assert ids(trigger="quality_issue") == ["dr_001"]
    assert ids(parent_agent_id="scholar") == ["dr_002", "dr_001"]
    assert ids(parent_agent_id="scholar", status="rejected") == ["dr_002"]
    assert api.viewer.get("/api/derive-requests", status="done").status_code == 422


def test_it_takes_a_whole_number_written_with_a_decimal_point_as_that_number(api):
    document = {"agent_id": "wide", "name": "Wide", "context_limits": {"max_input_tokens": 120000.0, "data_area": 5000.0}}
    response = api.author.post("/api/agents", document)
    assert response.status_code == 201
    limits = response.json()["context_limits"]
    assert (limits["max_input_tokens"], limits["data_area"]) == (120000, 5000)


def test_an_imported_approved_request_must_name_a_child_of_its_parent(tree):
    record = {"derive_request_id": "dr_old", "parent_agent_id": "scholar", "trigger": "quality_issue",
              "specialization": {"new_name": "Scholar (CV)"}, "status": "approved"}
    with pytest.raises(DocumentError) as refused:
        derive_request_import_document({**record, "result_agent_id": "planner"}, actor="import")
    assert str(refused.value) == ("result_agent_id: 'planner' is not a child of 'scholar', so this request did not "
                                  "produce it")
    assert not DeriveRequest.objects.filter(derive_request_id="dr_old").exists()
    request, outcome = derive_request_import_document({**record, "result_agent_id": "scholar_cv"}, actor="import")
    assert outcome == "created" and request.result_agent.agent_id == "scholar_cv"
