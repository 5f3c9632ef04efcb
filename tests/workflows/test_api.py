"""The workflows router: blueprints, workflows, validation without saving, and a node's context plan."""

import pytest
from django.utils import timezone
from jsonpath_rfc9535 import JSONPathQuery

from executions.models import Execution, NodeRun
from executions.services import execution_import_document
from quality.evaluations import evaluation_import_document
from tests.replay import load_demo
from workflows.documents import blueprint_document, workflow_document
from workflows.models import Blueprint, Workflow

pytestmark = pytest.mark.django_db

REVIEW = {
    "workflow_id": "paper_review",
    "name": "Paper review",
    "topology": "seq",
    "nodes": [
        {"id": "read", "agent_ref": "Scholar",
         "input_mapping": {"data_references": [{"ref_type": "file", "path": "papers/transformer.md"}]}},
        {"id": "check", "agent_ref": "Validator",
         "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "read", "path": "$.atoms"}]}},
    ],
    "transitions": [{"from": "read", "to": "check"}],
}
BLUEPRINT = {
    "blueprint_id": "review_system",
    "name": "Review system",
    "agents": [{"agent_ref": "Scholar", "source": "reuse"}, {"agent_ref": "Validator", "source": "new"}],
    "contracts": {"Scholar → Validator": {"data_type": "atoms", "schema": {"type": "object", "required": ["atoms"]}}},
}


@pytest.fixture
def demo(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)


def stored(workflow_id):
    return workflow_document(Workflow.objects.get(workflow_id=workflow_id))


# -- blueprints ------------------------------------------------------------------------


def test_it_shows_blueprints_with_their_agents_and_contracts_to_everyone_signed_in(api, demo):
    listed = api.viewer.get("/api/blueprints").json()
    assert listed["count"] == 1
    (summary,) = listed["items"]
    assert (summary["blueprint_id"], summary["agent_count"], summary["contract_count"]) == ("thesis_reading_system", 3, 2)
    detail = api.viewer.get("/api/blueprints/thesis_reading_system").json()
    assert detail == blueprint_document(Blueprint.objects.get())
    assert detail["contracts"]["Scholar → Validator"]["schema"]["required"] == ["atoms"]
    assert api.viewer.get("/api/blueprints/nope").json()["code"] == "NOT_FOUND"
    assert api.anonymous.get("/api/blueprints").status_code == 401


def test_it_lets_authors_create_and_replace_blueprints(api, demo):
    assert api.viewer.post("/api/blueprints", BLUEPRINT).status_code == 403
    assert not Blueprint.objects.filter(blueprint_id="review_system").exists()
    created = api.author.post("/api/blueprints", BLUEPRINT)
    assert created.status_code == 201
    assert created.json()["agents"][1] == {"agent_ref": "Validator", "source": "new", "role_in_workflow": ""}
    again = api.author.post("/api/blueprints", BLUEPRINT)
    assert again.status_code == 409 and "PUT /api/blueprints/review_system" in again.json()["message"]

    changed = {key: value for key, value in BLUEPRINT.items() if key != "blueprint_id"} | {"name": "Renamed", "contracts": {}}
    assert api.viewer.put("/api/blueprints/review_system", changed).status_code == 403
    replaced = api.author.put("/api/blueprints/review_system", changed)
    assert replaced.status_code == 200 and (replaced.json()["name"], replaced.json()["contracts"]) == ("Renamed", {})
    assert api.author.put("/api/blueprints/nope", changed).status_code == 404


def test_it_refuses_a_bad_blueprint_by_field_and_keeps_the_stored_one(api, demo):
    before = api.viewer.get("/api/blueprints/thesis_reading_system").json()
    path = "/api/blueprints/thesis_reading_system"
    cases = [
        ({**before, "agents": [{"agent_ref": "Nobody", "source": "reuse"}]}, "agents[0].agent_ref"),
        ({**before, "blueprint_id": "other"}, "blueprint_id"),
        ({**before, "version": "1" * 51}, "version"),
        ({**before, "name": "a\x00b"}, "name"),
        ({**before, "contracts": {"Scholar → Validator": {"data_type": "x", "schema": {"type": "nonsense"}}}},
         "contracts['Scholar → Validator'].schema"),
        ({**before, "contracts": {"Scholar → Stranger": {"data_type": "x", "schema": {}}}}, "contracts['Scholar → Stranger']"),
    ]
    for document, where in cases:
        response = api.author.put(path, document)
        assert response.status_code == 422, where
        assert response.json()["message"].startswith(f"{where}: "), response.json()["message"]
    assert api.viewer.get(path).json() == before


def test_it_refuses_a_contract_schema_nested_too_deeply_to_check(api, demo):
    schema = {"type": "object"}
    for _ in range(150):  # 300 levels of JSON: checking it against the meta-schema overflowed the stack
        schema = {"type": "object", "properties": {"a": schema}}
    document = {**BLUEPRINT, "contracts": {"Scholar → Validator": {"data_type": "atoms", "schema": schema}}}
    response = api.author.post("/api/blueprints", document)
    assert response.status_code == 422
    assert response.json()["message"].startswith("contracts.Scholar → Validator.schema.properties.a.properties.a")
    assert response.json()["message"].endswith(": is nested more than 64 levels deep")
    assert not Blueprint.objects.filter(blueprint_id="review_system").exists()


# -- workflows -------------------------------------------------------------------------


def test_it_lists_workflows_by_topology_and_name(api, demo):
    everything = api.viewer.get("/api/workflows").json()
    assert [w["workflow_id"] for w in everything["items"]] == ["game24", "parallel_analysis", "release_review",
                                                               "repository_review", "research_with_tools",
                                                               "research_without_tools", "thesis_reading"]
    assert everything["items"][1]["node_count"] == 4
    dags = api.viewer.get("/api/workflows", topology="dag").json()
    assert [w["workflow_id"] for w in dags["items"]] == ["parallel_analysis"]
    assert [w["workflow_id"] for w in api.viewer.get("/api/workflows", q="THESIS").json()["items"]] == ["thesis_reading"]
    assert [w["workflow_id"] for w in api.viewer.get("/api/workflows", q="state machine").json()["items"]] == [
        "release_review"]
    page = api.viewer.get("/api/workflows", limit=1, offset=1).json()
    assert (page["count"], [w["workflow_id"] for w in page["items"]]) == (7, ["parallel_analysis"])
    response = api.viewer.get("/api/workflows", topology="ring")
    assert response.status_code == 422 and "topology" in response.json()["message"]


def test_it_creates_reads_replaces_and_validates_a_workflow(api, demo):
    created = api.author.post("/api/workflows", REVIEW)
    assert created.status_code == 201
    assert created.json() == stored("paper_review")
    assert api.author.post("/api/workflows", REVIEW).status_code == 409

    # What GET answers can be sent back as it is: the document round-trips.
    document = api.viewer.get("/api/workflows/paper_review").json()
    assert "output_schema" not in document["nodes"][0] and document["transitions"] == [{"from": "read", "to": "check"}]
    document["nodes"][1]["compress"] = True
    document["name"] = "Paper review, compressed"
    replaced = api.author.put("/api/workflows/paper_review", document)
    assert replaced.status_code == 200 and replaced.json() == document == stored("paper_review")
    without_id = {key: value for key, value in document.items() if key != "workflow_id"}
    assert api.author.put("/api/workflows/paper_review", without_id).status_code == 200

    reads_no_input = {"type": "object", "properties": {}, "required": []}
    nothing_wrong = {"valid": True, "problems": [], "warnings": [], "inferred_input_schema": reads_no_input}
    assert api.viewer.post("/api/workflows/paper_review/validate").json() == nothing_wrong
    no_body = api.viewer.client.generic("POST", "/api/workflows/paper_review/validate", b"")
    assert no_body.json() == nothing_wrong
    broken = {**document, "nodes": [document["nodes"][0], {**document["nodes"][1], "agent_ref": "Nobody"}],
              "transitions": [{"from": "read", "to": "publish"}]}
    checked = api.author.post("/api/workflows/paper_review/validate", broken)
    assert checked.status_code == 200
    body = checked.json()
    assert body["valid"] is False
    problems = {(p["where"], p["node"], p["code"]) for p in body["problems"]}
    assert problems == {("nodes[check].agent_ref", "check", "UNKNOWN_AGENT"),
                        ("transitions[0].to", None, "DANGLING_TRANSITION")}
    assert stored("paper_review") == document, "validating saves nothing"


def test_it_warns_of_an_edge_that_passes_nothing_and_still_saves_the_workflow(api, demo):
    document = {**REVIEW, "topology": "dag", "nodes": [
        {"id": "docs", "agent_ref": "Docs_Analyzer", "input_mapping": {"repository": "$.input.repository"}},
        {"id": "code", "agent_ref": "Code_Analyzer", "input_mapping": {"repository": "$.input.repository"}},
        {"id": "report", "agent_ref": "Report_Synthesizer", "input_mapping": {"code": "$.nodes.code"}}],
        "transitions": [{"from": "code", "to": "report"}, {"from": "docs", "to": "report"}]}
    body = api.viewer.post("/api/workflows/paper_review/validate", document).json()
    assert (body["valid"], body["problems"]) == (True, [])
    assert [(w["where"], w["node"], w["transition"], w["code"]) for w in body["warnings"]] == [
        ("nodes[docs]", "docs", None, "OUTPUT_UNREAD"), ("transitions[1]", None, 1, "EDGE_UNUSED")]
    assert body["warnings"][1]["message"].startswith("(docs → report) passes nothing: 'report' waits for 'docs'")

    created = api.author.post("/api/workflows", document)
    assert created.status_code == 201, created.json()
    assert api.viewer.post("/api/workflows/paper_review/validate").json()["warnings"] == body["warnings"]


def test_it_validates_a_document_against_the_path_and_the_shape(api, demo):
    other = api.viewer.post("/api/workflows/thesis_reading/validate", {**REVIEW, "topology": "mesh"}).json()
    assert [p["where"] for p in other["problems"]] == ["workflow_id", "topology"]
    assert other["problems"][0]["code"] == "ID_MISMATCH"
    assert api.viewer.post("/api/workflows/nope/validate").status_code == 404
    new = {key: value for key, value in REVIEW.items() if key != "workflow_id"}
    assert api.viewer.post("/api/workflows/not_saved_yet/validate", new).json()["valid"] is True
    assert not Workflow.objects.filter(workflow_id="not_saved_yet").exists()


def test_it_names_a_transition_its_topology_cannot_honour_and_refuses_to_run_it(api, demo):
    conditional = {**REVIEW, "transitions": [{"from": "read", "to": "check", "condition": "len(output.atoms) > 0"}]}
    checked = api.viewer.post("/api/workflows/paper_review/validate", conditional).json()
    assert checked["valid"] is False
    (problem,) = checked["problems"]
    assert (problem["where"], problem["transition"], problem["code"]) == (
        "transitions[0].condition", 0, "TRANSITION_UNHONOURED")
    assert problem["message"].startswith("(read → check) a condition chooses the next node only in a state_machine")
    assert api.author.post("/api/workflows", conditional).status_code == 422
    assert not Workflow.objects.filter(workflow_id="paper_review").exists()

    # Stored before validation refused it: the stored workflow is reported, and not run.
    assert api.author.post("/api/workflows", REVIEW).status_code == 201
    stored = Workflow.objects.get(workflow_id="paper_review")
    stored.transitions.update(condition="len(output.atoms) > 0")
    version = stored.versions.get()  # as the migration that gave old workflows their first version wrote it
    version.document["transitions"][0]["condition"] = "len(output.atoms) > 0"
    version.save()
    assert api.viewer.post("/api/workflows/paper_review/validate").json()["problems"] == [problem]
    started = api.author.post("/api/executions", {"workflow_id": "paper_review", "input": {}})
    assert started.status_code == 422
    assert started.json()["code"] == "WORKFLOW_INVALID" and started.json()["details"] == [problem]
    assert "transitions[0].condition: (read → check) a condition" in started.json()["message"]
    assert not Execution.objects.filter(workflow__workflow_id="paper_review").exists()


def test_it_refuses_an_invalid_workflow_with_every_problem_on_its_node(api, demo):
    cyclic = {**REVIEW, "topology": "dag", "transitions": [{"from": "read", "to": "check"}, {"from": "check", "to": "read"}],
              "nodes": [{**REVIEW["nodes"][0], "output_mapping": {"x": "$[["}}, REVIEW["nodes"][1]]}
    response = api.author.post("/api/workflows", cyclic)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "WORKFLOW_INVALID"
    assert {(p["node"], p["code"]) for p in body["details"]} == {("read", "REF_PATH_INVALID"), (None, "CYCLE")}
    assert not Workflow.objects.filter(workflow_id="paper_review").exists()

    before = stored("thesis_reading")
    for document, where in [
        ({**before, "workflow_id": "renamed"}, "workflow_id"),
        ({**before, "nodes": []}, "nodes"),
        ({**before, "nodes": [{**before["nodes"][0], "compress_model": "m" * 101}]}, "nodes[task_scholar_001].compress_model"),
        ({**before, "name": "\ud800"}, "name"),
    ]:
        response = api.author.put("/api/workflows/thesis_reading", document)
        assert response.status_code == 422 and response.json()["message"].startswith(f"{where}: "), where
    response = api.author.put("/api/workflows/thesis_reading", {**before, "nodes": before["nodes"][1:]})
    assert response.json()["code"] == "WORKFLOW_INVALID"
    assert response.json()["details"][0]["node"] == "task_validator_001"
    assert stored("thesis_reading") == before


def test_it_lets_only_authors_change_workflows(api, demo):
    before = stored("thesis_reading")
    assert api.viewer.post("/api/workflows", REVIEW).json()["code"] == "FORBIDDEN"
    assert api.approver.put("/api/workflows/thesis_reading", {**before, "name": "x"}).status_code == 403
    assert api.viewer.delete("/api/workflows/thesis_reading").status_code == 403
    assert api.anonymous.post("/api/workflows", REVIEW).status_code == 401
    assert api.anonymous.delete("/api/workflows/thesis_reading").status_code == 401
    assert not Workflow.objects.filter(workflow_id="paper_review").exists() and stored("thesis_reading") == before
    assert api.admin.post("/api/workflows", REVIEW).status_code == 201


def test_it_deletes_only_a_workflow_that_was_never_run(api, demo):
    api.author.post("/api/workflows", REVIEW)
    assert api.author.delete("/api/workflows/paper_review").status_code == 204
    assert not Workflow.objects.filter(workflow_id="paper_review").exists()
    assert api.author.delete("/api/workflows/paper_review").status_code == 404

    execution_import_document({"execution_id": "exec_1", "workflow_ref": "thesis_reading", "status": "success"})
    refused = api.author.delete("/api/workflows/thesis_reading")
    assert refused.status_code == 409
    assert refused.json()["details"]["executions"] == 1 and "records" in refused.json()["message"]
    assert Workflow.objects.filter(workflow_id="thesis_reading").exists() and Execution.objects.count() == 1

    evaluation_import_document({"evaluation_id": "eval_1", "target_type": "workflow", "target_id": "release_review",
                                "scores": {"accuracy": 1, "completeness": 1, "efficiency": 1}, "overall_score": 1,
                                "pass": True, "action": "approve"})
    assert api.author.delete("/api/workflows/release_review").json()["details"]["evaluations"] == 1
    assert Workflow.objects.filter(workflow_id="release_review").exists()


def test_it_answers_ids_that_cannot_exist_with_not_found(api, demo):
    for path in ("/api/workflows/a%00b", "/api/workflows/%F0%9F%98%80", "/api/blueprints/" + "x" * 300):
        response = api.viewer.get(path)
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    response = api.viewer.get("/api/workflows", q="a\x00b")
    assert response.status_code == 422 and "q" in response.json()["message"]


# -- a node's context plan -------------------------------------------------------------


def test_it_plans_the_vault_node_of_the_demo_with_its_failure_and_budget(api, demo):
    execution_import_document({
        "execution_id": "exec_1", "workflow_ref": "thesis_reading", "status": "success",
        "results": [{"node_id": "task_scholar_001", "agent_ref": "Scholar", "status": "success",
                     "output": {"atoms": [{"atom_id": "a1", "atom_type": "claim", "content": "Attention suffices.",
                                           "confidence": 0.9}]}},
                    {"node_id": "task_validator_001", "agent_ref": "Validator", "status": "success",
                     "output": {"validation_results": [{"atom_id": "a1", "valid": True}]}}],
    })
    runs = NodeRun.objects.count()
    response = api.viewer.post("/api/workflows/thesis_reading/nodes/task_vault_001/plan")
    assert response.status_code == 200
    plan = response.json()
    assert (plan["outcome"], plan["outputs_from"], plan["agent_ref"]) == ("ready", "exec_1", "Knowledge_Vault")
    assert plan["limits"]["data_limit"] == plan["context_management"]["context_limit"] == 4_050
    assert plan["context_management"]["resolution"]["within_limit"]
    (batch,) = [a for a in plan["context_management"]["resolution"]["actions"] if a["action"] == "batch"]
    assert batch["data"] == "knowledge_atoms_query" and plan["batch_count"] == batch["batches"] > 1
    (failure,) = plan["resolution_failures"]
    assert (failure["ref_type"], failure["input"], failure["error_code"], failure["fallback_strategy"]) == (
        "file", "supplementary.md", "REF_NOT_FOUND", "use_default")
    names = [entry["name"] for entry in plan["resolved_inputs"]]
    assert {"task_scholar_001_output", "task_validator_001_output", "supplementary.md"} <= set(names)
    assert NodeRun.objects.count() == runs, "a plan runs nothing"

    # Outputs given in the body replace the run's.
    given = api.viewer.post("/api/workflows/thesis_reading/nodes/task_vault_001/plan", {"outputs": {}}).json()
    assert given["outputs_from"] is None
    assert {f.get("task_id") for f in given["resolution_failures"]} == {"task_scholar_001", "task_validator_001", None}


def test_it_refuses_a_jsonpath_beyond_the_limits_and_plans_a_stored_one_as_a_failed_reference(api, demo):
    deep = "$" + ".a" * 20_000
    with_deep_path = {**REVIEW, "nodes": [REVIEW["nodes"][0], {**REVIEW["nodes"][1], "input_mapping": {
        "data_references": [{"ref_type": "task_output", "task_id": "read", "path": deep}]}}]}
    checked = api.viewer.post("/api/workflows/paper_review/validate", with_deep_path).json()
    assert [(p["where"], p["code"]) for p in checked["problems"]] == [
        ("nodes[check].input_mapping.data_references[0].path", "REF_PATH_INVALID")]
    response = api.author.post("/api/workflows", with_deep_path)
    assert response.status_code == 422 and response.json()["code"] == "WORKFLOW_INVALID"
    assert "the limit is 2000" in response.json()["details"][0]["message"]

    # A workflow stored before the limits: planning it answers the reference's failure.
    assert api.author.post("/api/workflows", REVIEW).status_code == 201
    workflow = Workflow.objects.get(workflow_id="paper_review")
    workflow.nodes.filter(node_id="check").update(input_mapping=with_deep_path["nodes"][1]["input_mapping"])
    Workflow.objects.filter(pk=workflow.pk).update(updated_at=timezone.now())  # no cached graph of the old nodes
    plan = api.viewer.post("/api/workflows/paper_review/nodes/check/plan", {"outputs": {"read": {"atoms": [1]}}})
    assert plan.status_code == 200, plan.content[:300]
    (failure,) = plan.json()["resolution_failures"]
    assert (failure["task_id"], failure["error_code"]) == ("read", "REF_PATH_INVALID")


def test_it_answers_a_plan_that_overflows_the_stack_with_a_named_error(api, demo, monkeypatch):
    assert api.author.post("/api/workflows", REVIEW).status_code == 201

    def overflow(*args, **kwargs):  # a walk nested beyond the stack, as a smaller thread stack would see it
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(JSONPathQuery, "find", overflow)
    response = api.viewer.post("/api/workflows/paper_review/nodes/check/plan", {"outputs": {"read": {"atoms": []}}})
    assert response.status_code == 200, response.content[:300]
    (failure,) = response.json()["resolution_failures"]  # the reference's failure, on the record
    assert (failure["task_id"], failure["error_code"]) == ("read", "REF_PATH_INVALID")
    assert "'$.atoms' cannot be applied: nested too deeply" in failure["error_message"]


def test_it_names_what_is_wrong_with_a_plan_request(api, demo):
    path = "/api/workflows/thesis_reading/nodes/{}/plan"
    assert api.viewer.post(path.format("task_zzz")).status_code == 404
    assert api.viewer.post("/api/workflows/nope/nodes/task_vault_001/plan").status_code == 404
    response = api.viewer.post(path.format("task_vault_001"), {"outputs": {"task_typo": {}}})
    assert response.status_code == 422 and response.json()["message"].startswith("outputs.task_typo: ")
    response = api.viewer.post(path.format("task_vault_001"), {"input": "not an object"})
    assert response.status_code == 422 and "input" in response.json()["message"]
    assert api.anonymous.post(path.format("task_vault_001")).status_code == 401


@pytest.mark.parametrize("body, where", [
    ('{"state": {"draft": NaN}}', "state.draft"),
    ('{"outputs": {"task_scholar_001": {"atoms": [Infinity]}}}', "outputs.task_scholar_001.atoms[0]"),
    ('{"input": {"limit": -Infinity}}', "input.limit"),
    ('{"state": {"note": "a\\u0000b"}}', "state.note"),
])
def test_it_refuses_a_plan_request_holding_what_json_cannot_say(api, demo, body, where):
    response = api.viewer.client.post("/api/workflows/thesis_reading/nodes/task_vault_001/plan", body,
                                      content_type="application/json")
    assert response.status_code == 422, response.content[:300]
    assert response.json()["message"].startswith(f"{where}: "), response.json()
    assert b"NaN" not in response.content and b"Infinity" not in response.content


def test_optional_strings_given_empty_mean_none_everywhere(api, demo):
    blank = {**REVIEW, "transitions": [{"from": "read", "to": "check", "condition": "", "on_success": "",
                                        "on_failure": ""}],
             "error_handling": {"retry_count": 1, "fallback_agent": "", "escalate_to": ""},
             "evaluation": {"judge_agent": ""}}
    assert api.author.post("/api/workflows/paper_review/validate", blank).json()["problems"] == []
    response = api.author.post("/api/workflows", blank)
    assert response.status_code == 201, response.json()
    workflow = Workflow.objects.get(workflow_id="paper_review")
    assert (workflow.fallback_agent, workflow.escalate_to, workflow.judge_agent) == (None, None, None)
    transition = api.author.get("/api/workflows/paper_review").json()["transitions"][0]
    assert (transition["condition"], transition["on_success"], transition["on_failure"]) == ("", "", ""), \
        "a transition's strings are exported as they were imported"


def test_an_unknown_filter_operator_is_accepted_and_left_to_the_run(api, demo):
    # The seed makes it REF_FILTER_ERROR when the reference is read, with its fallback (the
    # unfiltered data by default): see tests/executions/test_context.py.
    reference = {"ref_type": "task_output", "task_id": "read", "path": "$.atoms",
                 "filter": {"field": "atom_type", "operator": "like", "value": "c%"}}
    document = {**REVIEW, "nodes": [REVIEW["nodes"][0], {**REVIEW["nodes"][1],
                                                          "input_mapping": {"data_references": [reference]}}]}
    assert api.author.post("/api/workflows/paper_review/validate", document).json()["problems"] == []
    assert api.author.post("/api/workflows", document).status_code == 201
