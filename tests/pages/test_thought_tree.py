"""The thought-tree page (tot-protocol): a node run's Tree-of-Thoughts search drawn with its
scores, pruned branches, best path and each node's messages — server side here, and in a
real browser at the end of the file."""
from __future__ import annotations

import hashlib
import re
from fractions import Fraction
from itertools import permutations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from executions.models import ThoughtSearch
from tests.pages.conftest import screenshot, signed_in
from tests.pages.test_executions import make_execution

pytestmark = pytest.mark.django_db

XSS = '<script>window.pwned=1</script><b>bold</b><img src=x onerror="window.pwned=2">'


# -- a Game-of-24 search built by hand, in the seed's shapes -----------------------------------
#
# BFS with sequential_proposal (one generator call of k candidates per node) and
# independent_scoring (one evaluator call per candidate); exact arithmetic. The score is
# this file's own: states of 3+ numbers score high when they can still make 24 — the page
# does not care how scores were made, only that the shapes are the seed's.

OPS = (("+", lambda a, b: a + b), ("-", lambda a, b: a - b), ("×", lambda a, b: a * b),
       ("÷", lambda a, b: a / b if b else None))


def show(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def can_make_24(values: list[Fraction]) -> bool:
    if len(values) == 1:
        return values[0] == 24
    for i, j in permutations(range(len(values)), 2):
        rest = [values[k] for k in range(len(values)) if k not in (i, j)]
        for _, op in OPS:
            value = op(values[i], values[j])
            if value is not None and can_make_24([*rest, value]):
                return True
    return False


def proposals(state: list[tuple[Fraction, str]]) -> list[dict]:
    """Every distinct next step from a state, in a fixed but mixed order."""
    out, seen = [], set()
    for i, j in permutations(range(len(state)), 2):
        (a, ea), (b, eb) = state[i], state[j]
        for symbol, op in OPS:
            value = op(a, b)
            if value is None or value < 0 or (symbol in "+×" and i > j):
                continue
            rest = [state[k] for k in range(len(state)) if k not in (i, j)] + [(value, f"({ea} {symbol} {eb})")]
            key = tuple(sorted(v for v, _ in rest))
            if key in seen:
                continue
            seen.add(key)
            left = " ".join(show(v) for v, _ in sorted(rest))
            step = f"{show(a)} {symbol} {show(b)} = {show(value)}"
            out.append({"content": f"{step} (left: {left})", "step": step, "symbol": symbol, "state": rest})
    return sorted(out, key=lambda item: hashlib.md5(item["content"].encode()).hexdigest())


ACTION = {"+": "addition", "-": "subtraction", "×": "multiplication", "÷": "division"}
NICE = {1, 2, 3, 4, 6, 8, 12, 24}


def score_of(state) -> tuple[float, str]:
    values = [v for v, _ in state]
    if len(values) == 1:
        return (10.0, "24 reached") if values[0] == 24 else (0.0, f"ends at {show(values[0])}, not 24")
    nice = sum(1 for v in values if v in NICE)
    if can_make_24(values):
        return 6.5 + min(nice, 3) * 0.75, "the remaining numbers can still make 24"
    if len(values) == 2:
        return 1.0, "these two numbers cannot make 24"
    return 2.0 + min(nice, 3) * 1.0, f"{nice} of the numbers divide 24; no sure way to 24 seen"


def build_search(numbers=(4, 9, 10, 13), *, k=8, breadth=3, threshold=3.0, task_id="tot_page_24",
                 problem=None) -> dict:
    """A ThoughtSearch's fields (tree, messages, stats, final_solution, error) for a BFS."""
    problem = problem or f"Use {' '.join(map(str, numbers))} and + - × ÷ to make 24"
    messages: list[dict] = []
    calls = 0

    def send(from_, to, type_, payload, **extra):
        messages.append({"from": from_, "to": to, "type": type_, "payload": payload, "task_id": task_id, **extra})

    decomposition = {"thought_granularity": "equation", "intermediate_steps": [
        "Step 1: pick two numbers and combine them", "Step 2: combine the result with a third number",
        "Step 3: reach the target number 24"], "depth_estimate": 3,
        "constraints": ["use every number exactly once", "only + - × ÷"], "success_criteria": "the result equals 24"}
    send("orchestrator", "decomposer", "decompose_task", {"problem": problem, "task_type": "math_reasoning"})
    send("decomposer", "orchestrator", "decomposition_result", decomposition)
    calls += 1
    config = {"strategy": "BFS", "max_depth": 3, "branching_factor": k, "breadth": breadth,
              "pruning_threshold": threshold, "generation_strategy": "sequential_proposal",
              "evaluation_strategy": "independent_scoring", "evaluation_timeout_s": None, "max_nodes": 2000}
    send("orchestrator", "explorer", "initialize_search", {"problem": problem, "task_type": "math_reasoning",
                                                           "search_config": config, "decomposition_result": decomposition})
    root_state = [(Fraction(n), str(n)) for n in numbers]
    nodes = {"root": {"id": "root", "parent_id": None, "children_ids": [], "depth": 0,
                      "content": " ".join(map(str, numbers)), "action_type": "root", "evaluation": None,
                      "status": "pending", "metadata": {"remaining": [str(n) for n in numbers]}}}
    states = {"root": root_state}
    frontier = ["root"]
    counters: dict[int, int] = {}
    for depth in (1, 2, 3):
        level = []
        for parent_id in frontier:
            parent = nodes[parent_id]
            found = proposals(states[parent_id])
            picked = found[:k]
            if depth < 3 and not any(can_make_24([v for v, _ in p["state"]]) for p in picked):
                good = [p for p in found if can_make_24([v for v, _ in p["state"]])]
                picked = picked[:-1] + good[:1]
            context = {"problem": problem, "goal": "24", "constraints": decomposition["constraints"]}
            send("explorer", "generator", "generate_thoughts", {"parent_node": dict(parent),
                 "generation_strategy": "sequential_proposal", "num_candidates": k, "context": context})
            candidates = [{"temp_id": f"cand_{n + 1}", "content": p["content"], "action_type": ACTION[p["symbol"]],
                           "metadata": {"remaining": [show(v) for v, _ in p["state"]], "step": p["step"]}}
                          for n, p in enumerate(picked)]
            send("generator", "explorer", "generated_thoughts", {"candidates": candidates})
            calls += 1
            parent["status"] = "expanded"
            for candidate, p in zip(candidates, picked, strict=True):
                counters[depth] = counters.get(depth, 0) + 1
                node_id = f"node_{depth}_{counters[depth]}"
                node = {"id": node_id, "parent_id": parent_id, "children_ids": [], "depth": depth,
                        "content": candidate["content"], "action_type": candidate["action_type"], "evaluation": None,
                        "status": "pending", "metadata": candidate["metadata"]}
                nodes[node_id] = node
                parent["children_ids"].append(node_id)
                states[node_id] = p["state"]
                send("explorer", "evaluator", "evaluate_thoughts", {"candidates": [dict(node)],
                     "evaluation_strategy": "independent_scoring",
                     "evaluation_criteria": ["correctness", "progress", "feasibility"],
                     "context": {"problem": problem, "goal": "24", "current_depth": depth, "max_depth": 3}})
                score, reasoning = score_of(p["state"])
                confidence = 1.0 if depth == 3 else 0.8
                send("evaluator", "explorer", "evaluation_results", {
                    "evaluations": [{"node_id": node_id, "score": score, "confidence": confidence, "reasoning": reasoning,
                                     "dimension_scores": {"correctness": 10, "progress": depth * 3, "feasibility": score}}],
                    "ranking": [node_id], "pruning_suggestions": [node_id] if score < threshold else []})
                calls += 1
                node["evaluation"] = {"score": score, "confidence": confidence, "reasoning": reasoning}
                level.append(node_id)
        ranked = sorted(level, key=lambda i: -nodes[i]["evaluation"]["score"])
        if depth == 3:
            for node_id in level:
                nodes[node_id]["status"] = "terminal" if nodes[node_id]["evaluation"]["score"] == 10 else "pruned"
            frontier = []
        else:
            frontier = [i for i in ranked if nodes[i]["evaluation"]["score"] >= threshold][:breadth]
            for node_id in level:
                if node_id not in frontier:
                    nodes[node_id]["status"] = "pruned"
    solved = [i for i, node in nodes.items() if node["status"] == "terminal"]
    best_path, final_solution, error = [], None, None
    if solved:
        at = solved[0]
        while at:
            best_path.insert(0, at)
            at = nodes[at]["parent_id"]
        path = [dict(nodes[i]) for i in best_path]
        send("explorer", "synthesizer", "synthesize_solution", {"best_path": path, "problem": problem,
                                                                "task_type": "math_reasoning"})
        expression = states[solved[0]][0][1][1:-1]
        final_solution = {"answer": f"{expression} = 24",
                          "reasoning_trace": [f"Step {n}: {nodes[i]['metadata']['step']}" for n, i in enumerate(best_path[1:], 1)],
                          "confidence": 1.0, "verification": {"is_valid": True, "validation_errors": []},
                          "alternative_solutions": []}
        send("synthesizer", "explorer", "final_solution", final_solution)
        calls += 1
    else:
        error = {"code": "SEARCH_EXHAUSTED", "message": "no terminal node reached 24 within depth 3",
                 "recoverable": False}
    tree = {"task_id": task_id, "problem": problem, "task_type": "math_reasoning", "search_config": config,
            "nodes": nodes, "root_id": "root",
            "search_state": {"current_depth": 3, "frontier": [], "best_path": best_path}}
    stats = {"total_nodes": len(nodes), "total_backtracks": 0, "llm_calls": calls}
    send("explorer", "orchestrator", "search_complete", {"best_path": [dict(nodes[i]) for i in best_path],
                                                         "tree": tree, "stats": stats},
         **({"error": error} if error else {}))
    return {"problem": problem, "task_type": "math_reasoning", "tree": tree, "messages": messages, "stats": stats,
            "final_solution": final_solution, "error": error}


def wide_search(n_nodes: int) -> dict:
    """A tree of n nodes (a root, 20 children, the rest below them), with a message per node."""
    search = build_search()
    nodes = {"root": {**search["tree"]["nodes"]["root"], "children_ids": []}}
    for n in range(1, n_nodes):
        depth, parent = (1, "root") if n <= 20 else (2, f"node_1_{(n - 21) % 20 + 1}")
        node_id = f"node_{depth}_{n}"
        nodes[node_id] = {"id": node_id, "parent_id": parent, "children_ids": [], "depth": depth,
                          "content": f"step {n}", "action_type": "addition", "status": "pruned" if n % 3 else "expanded",
                          "evaluation": {"score": n % 10, "confidence": 0.5, "reasoning": "r"}, "metadata": {}}
        nodes[parent]["children_ids"].append(node_id)
    search["tree"] = {**search["tree"], "nodes": nodes}
    search["messages"] = [{"from": "evaluator", "to": "explorer", "type": "evaluation_results", "task_id": "t",
                           "payload": {"evaluations": [{"node_id": i, "score": 1}], "ranking": [i],
                                       "pruning_suggestions": []}} for i in nodes]
    return search


def store_search(execution, node_run=None, **fields) -> ThoughtSearch:
    node_run = node_run or execution.node_runs.order_by("sequence").first()
    return ThoughtSearch.objects.create(node_run=node_run, execution=execution, **{**build_search(), **fields})


def tot_execution(execution_id="exec_tot", **search_fields) -> tuple:
    """A run of the demo's game24 workflow: its node `solve` failed once, then ran the search."""
    execution = make_execution("game24", [{"node_id": "solve", "status": "failed", "error_code": "TIMEOUT"},
                                          {"node_id": "solve", "status": "success", "attempt": 2, "kind": "retry"}],
                               execution_id=execution_id, input={"numbers": [4, 9, 10, 13]})
    search = store_search(execution, execution.node_runs.get(attempt=2), **search_fields)
    return execution, search


def page_url(execution_id, node_run_id) -> str:
    return f"/executions/{execution_id}/tot/{node_run_id}/"


# -- the page, server side --------------------------------------------------------------------


def test_it_builds_a_search_that_finds_24_and_one_that_cannot():
    solved = build_search()
    assert solved["final_solution"]["verification"]["is_valid"] and solved["error"] is None
    assert solved["final_solution"]["answer"].endswith("= 24")
    best = solved["tree"]["search_state"]["best_path"]
    assert best[0] == "root" and solved["tree"]["nodes"][best[-1]]["status"] == "terminal"
    assert any(node["status"] == "pruned" for node in solved["tree"]["nodes"].values())
    exhausted = build_search((1, 1, 1, 1))
    assert exhausted["final_solution"] is None and exhausted["error"]["code"] == "SEARCH_EXHAUSTED"


def test_it_shows_the_search_its_outcome_and_stats(api, demo):
    execution, search = tot_execution()
    response = signed_in(api.viewer.user).get(page_url(execution.execution_id, search.node_run_id))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Use 4 9 10 13 and + - × ÷ to make 24" in page
    assert search.final_solution["answer"] in page and "solved · verified" in page and "✓ verified" in page
    assert 'data-setting="strategy">BFS<' in page and 'data-setting="breadth">3<' in page
    assert 'data-setting="generation_strategy">sequential_proposal<' in page
    stats = search.stats
    assert f'id="tt-total-nodes">{stats["total_nodes"]}<' in page
    assert 'id="tt-backtracks">0<' in page and f'id="tt-llm-calls">{stats["llm_calls"]}<' in page
    # The decomposition and the final solution in full.
    assert "Step 2: combine the result with a third number" in page and "the result equals 24" in page
    assert search.final_solution["reasoning_trace"][0] in page
    # The best path, root first, each step linking to its node.
    best = search.tree["search_state"]["best_path"]
    assert re.findall(r'<li><a href="#tt-panel" data-node="([^"]+)"', page) == best
    # The crumbs lead back to the run and its node.
    assert f'href="/executions/{execution.execution_id}/"' in page


def test_it_hands_the_script_the_whole_tree_and_every_message_as_stored(api, demo):
    execution, search = tot_execution()
    response = signed_in(api.viewer.user).get(page_url(execution.execution_id, search.node_run_id))
    data = response.context["page_data"]
    assert data["tree"] == search.tree
    assert (data["tree"]["problem"], data["tree"]["task_type"]) == (search.problem, search.task_type)
    assert data["messages"] == search.messages
    complete = data["messages"][-1]
    assert complete["type"] == "search_complete" and complete["payload"]["tree"] == search.tree


def test_it_shows_an_exhausted_search_plainly_without_an_answer(api, demo):
    execution, search = tot_execution(**build_search((1, 1, 1, 1)))
    page = signed_in(api.viewer.user).get(page_url(execution.execution_id, search.node_run_id)).content.decode()
    assert 'data-outcome="SEARCH_EXHAUSTED"' in page
    assert '<code id="tt-error-code">SEARCH_EXHAUSTED</code> no terminal node reached 24 within depth 3' in page
    assert "No final solution" in page and "verified" not in page
    assert "The search found no best path." in page
    assert "Errors recorded on the way" not in page  # the outcome's own error is not counted again


def test_it_shows_the_engines_exhausted_search_with_the_path_it_liked_best(api, demo):
    fields = real_search("1 1 1 1")
    execution, search = tot_execution(**fields)
    page = signed_in(api.viewer.user).get(page_url(execution.execution_id, search.node_run_id)).content.decode()
    assert f'<code id="tt-error-code">SEARCH_EXHAUSTED</code> {fields["error"]["message"]}' in page
    assert "the most promising path found; it reaches no solution" in page
    assert re.findall(r'<li><a href="#tt-panel" data-node="([^"]+)"', page) == fields["tree"]["search_state"]["best_path"]


def test_it_shows_an_answer_that_failed_verification_as_not_verified(api, demo):
    fields = build_search()
    fields["final_solution"]["verification"] = {"is_valid": False, "validation_errors": ["13 is used twice"]}
    execution, search = tot_execution(**fields)
    page = signed_in(api.viewer.user).get(page_url(execution.execution_id, search.node_run_id)).content.decode()
    assert "answer not verified" in page and "✗ not verified" in page and "13 is used twice" in page
    assert "solved · verified" not in page


def test_it_counts_the_errors_recorded_on_the_way(api, demo):
    fields = build_search()
    fields["messages"][3]["error"] = {"code": "GENERATION_FAILED", "message": "no candidates", "recoverable": True}
    execution, search = tot_execution(**fields)
    page = signed_in(api.viewer.user).get(page_url(execution.execution_id, search.node_run_id)).content.decode()
    assert "Errors recorded on the way:" in page and "<code>GENERATION_FAILED</code> × 1" in page


def test_it_answers_404_unless_the_node_run_of_this_execution_ran_a_search(api, demo):
    execution, search = tot_execution()
    other = make_execution("game24", [{"node_id": "solve", "status": "success"}], execution_id="exec_other")
    browser = signed_in(api.viewer.user)
    without = execution.node_runs.get(attempt=1)
    assert browser.get(page_url(execution.execution_id, without.pk)).status_code == 404  # no search
    assert browser.get(page_url(other.execution_id, search.node_run_id)).status_code == 404  # another run's
    assert browser.get(page_url("exec_missing", search.node_run_id)).status_code == 404
    assert browser.get(page_url("bad%00id", search.node_run_id)).status_code == 404
    assert browser.get(page_url(execution.execution_id, 999999)).status_code == 404
    assert browser.get(page_url(execution.execution_id, search.node_run_id)).status_code == 200


def test_it_asks_who_you_are_first(api, demo):
    execution, search = tot_execution()
    response = Client().get(page_url(execution.execution_id, search.node_run_id))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_escapes_what_the_roles_wrote(api, demo):
    fields = build_search(problem=f"make 24 {XSS}")
    node = next(node for node in fields["tree"]["nodes"].values() if node["status"] == "pruned")
    node["content"] = f"1 + 1 = 2 {XSS}"
    node["evaluation"]["reasoning"] = XSS
    fields["final_solution"]["answer"] = f"{fields['final_solution']['answer']} {XSS}"
    fields["final_solution"]["reasoning_trace"].append(XSS)
    fields["messages"][1]["payload"]["constraints"].append(XSS)
    execution, search = tot_execution(**fields)
    page = signed_in(api.viewer.user).get(page_url(execution.execution_id, search.node_run_id)).content.decode()
    assert "<script>window.pwned" not in page and "<img src=x" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page  # shown as text in the header and lists
    assert "\\u003Cscript\\u003Ewindow.pwned=1" in page  # and inert in the script's JSON


def test_it_reads_a_500_node_tree_in_as_few_queries_as_a_small_one(api, demo, django_assert_max_num_queries):
    small_run, small = tot_execution("exec_tot_small")
    large_run, large = tot_execution("exec_tot_large", **wide_search(500))
    browser = signed_in(api.viewer.user)
    browser.get("/executions/")  # the session's first read is not the page's
    with django_assert_max_num_queries(4):  # session, user, roles, the search with its node run and run
        response = browser.get(page_url(large_run.execution_id, large.node_run_id))
    assert response.status_code == 200 and len(response.context["page_data"]["tree"]["nodes"]) == 500
    assert "500 nodes" in response.content.decode()

    def count(path):
        with CaptureQueriesContext(connection) as queries:
            assert browser.get(path).status_code == 200
        return len(queries)

    assert count(page_url(large_run.execution_id, large.node_run_id)) == count(
        page_url(small_run.execution_id, small.node_run_id))


# -- the link from the run's page ------------------------------------------------------------------


def test_it_links_a_runs_page_to_its_thought_trees_in_one_more_query(api, demo, django_assert_max_num_queries):
    from tests.pages.test_executions import PAGE_QUERIES

    execution, search = tot_execution()
    exhausted = store_search(execution, execution.node_runs.get(attempt=1), **build_search((1, 1, 1, 1)))
    browser = signed_in(api.viewer.user)
    browser.get("/executions/")
    with django_assert_max_num_queries(PAGE_QUERIES + 1):  # the run's searches, read once
        page = browser.get(f"/executions/{execution.execution_id}/").content.decode()
    assert page.count('id="thought-trees"') == 1
    for one in (search, exhausted):
        assert f'data-thought-tree href="{page_url(execution.execution_id, one.node_run_id)}"' in page
    assert search.final_solution["answer"] in page and '<span class="badge success">verified</span>' in page
    assert "<code>SEARCH_EXHAUSTED</code>" in page


def test_it_leaves_the_thought_trees_out_of_a_run_without_a_search(api, demo):
    execution = make_execution("thesis_reading", [{"node_id": "task_scholar_001", "status": "success"}])
    page = signed_in(api.viewer.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert 'id="thought-trees"' not in page and "data-thought-tree" not in page


# -- the page in a real browser -------------------------------------------------------------------


def click_tree_node(page, node_id: str) -> None:
    """Click a node of the cytoscape tree where it is drawn on the canvas (centred first),
    once the tree has drawn it; the panel then names a clicked node."""
    page.locator("#tt-graph").scroll_into_view_if_needed()
    page.wait_for_function("(id) => window.switchyard.thoughtTree && window.switchyard.thoughtTree.getElementById(id).length",
                           arg=node_id)
    page.evaluate("(id) => { const cy = window.switchyard.thoughtTree; cy.center(cy.getElementById(id)); }", node_id)
    # Let the scroll's events and the centred view reach cytoscape before clicking, as they
    # would for a person: it maps a click through the container position it re-reads on scroll.
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    box = page.locator("#tt-graph").bounding_box()
    point = page.evaluate("(id) => window.switchyard.thoughtTree.getElementById(id).renderedPosition()", node_id)
    page.mouse.click(box["x"] + point["x"], box["y"] + point["y"])
    if not node_id.startswith("fold:"):  # a fold opens in place; a node is named by the panel
        page.locator("#tt-panel h2").filter(has_text=node_id).wait_for()


def real_search(numbers: str = "4 9 10 13", *, generator_fails_on: str = "") -> dict:
    """A ThoughtSearch's fields from the engine's own search with the builtin Game-of-24 roles
    (whose generator, if asked, fails to expand the node whose thought starts so)."""
    from engine.tot import game24, run_tot

    roles = game24.builtin_roles()
    generate = roles["generator"]

    def generator(message: dict) -> dict:
        if generator_fails_on and message["payload"]["parent_node"]["content"].startswith(generator_fails_on):
            raise RuntimeError("the model went quiet")
        return generate(message)

    result = run_tot(problem=numbers, task_type="math_reasoning", task_id="exec_tot.solve",
                     roles={**roles, "generator": generator})
    return {"problem": numbers, "task_type": "math_reasoning", "tree": result.tree.as_dict(),
            "messages": result.messages, "stats": result.stats, "final_solution": result.final_solution,
            "error": result.error.as_dict() if result.error is not None else None}


@pytest.mark.django_db(transaction=True)
def test_it_draws_the_tree_with_the_best_path_and_shows_a_nodes_messages_on_click(page_for, api, demo):
    from playwright.sync_api import expect

    fields = real_search()
    nodes = fields["tree"]["nodes"]
    best = fields["tree"]["search_state"]["best_path"]
    assert fields["final_solution"]["verification"]["is_valid"] and len(best) == 4
    pruned = [node_id for node_id, node in nodes.items() if node["status"] == "pruned"]
    marked = nodes[pruned[-1]]["content"] = f"{nodes[pruned[-1]]['content']} {XSS}"
    nodes[pruned[-1]]["evaluation"]["reasoning"] = XSS
    execution, search = tot_execution(**fields)
    page = page_for(api.viewer.user)
    # From the run's page: the node run's attempt links to its tree.
    page.goto(f"/executions/{execution.execution_id}/?node=solve&run={search.node_run_id}")
    expect(page.locator("#thought-trees tr[data-thought-tree-run] .thought-tree-run")).to_have_text("solve · retry #2")
    attempt = page.locator(f"#node-panel .attempt[data-run='{search.node_run_id}']")
    attempt.get_by_role("link", name="Thought tree").click()
    page.wait_for_url(f"**{page_url(execution.execution_id, search.node_run_id)}")
    expect(page.locator("#tt-answer")).to_have_text(fields["final_solution"]["answer"])
    graph = page.locator("#tt-graph")
    tree = "window.switchyard.thoughtTree"
    # 15 nodes side by side at depth 2: the pruned siblings start folded, one node per parent.
    expect(page.locator("#tt-collapse")).to_be_checked()
    expect(graph).to_have_attribute("data-drawn", re.compile(r"^\d+$"))
    folds = page.evaluate(f"() => {tree}.nodes('.fold').map((n) => n.data('fold'))")
    assert best[-2] in folds and len(folds) >= 3
    assert int(graph.get_attribute("data-drawn")) < len(nodes) // 2

    # The best path: its nodes and edges drawn thick and orange, root first.
    assert page.evaluate(f"() => {tree}.nodes('.best').map((n) => n.id())") == best
    assert page.evaluate(f"() => {tree}.edges('.best').map((e) => e.id())") == [
        f"{a}>{b}" for a, b in zip(best, best[1:], strict=False)]
    assert page.evaluate(f"() => {tree}.edges('.best')[0].style('line-color')") == "rgb(224,123,0)"
    assert page.evaluate(f"() => {tree}.getElementById('{best[-1]}').style('border-width')") == "4px"
    assert page.evaluate(f"() => {tree}.getElementById('root').style('background-color')") == "rgb(24,32,44)"
    expect(page.locator("#tt-best-path li")).to_have_count(len(best))

    # Opening the fold beside the answer shows its pruned siblings, greyed.
    siblings = [kid for kid in nodes[best[-2]]["children_ids"] if nodes[kid]["status"] == "pruned"]
    drawn = int(graph.get_attribute("data-drawn"))
    click_tree_node(page, f"fold:{best[-2]}")
    expect(graph).to_have_attribute("data-drawn", str(drawn + len(siblings) - 1))
    for sibling in siblings:
        assert page.evaluate(f"() => {tree}.getElementById('{sibling}').style('background-color')") == "rgb(238,240,243)"
        assert page.evaluate(f"() => {tree}.getElementById('{sibling}').style('border-style')") == "dashed"

    # A node on the best path: its score, and the exchanges that made and scored it.
    chosen = best[2]
    click_tree_node(page, chosen)
    panel = page.locator("#tt-panel")
    expect(panel.locator("h2")).to_have_text(chosen)
    expect(panel.locator(".tt-content")).to_have_text(nodes[chosen]["content"])
    evaluation = nodes[chosen]["evaluation"]
    expect(panel.locator(".tt-eval-value")).to_have_text(f"{evaluation['score']:g}")
    expect(panel.locator(".badge.tt-best")).to_be_visible()
    produced = panel.locator(".tt-exchange[data-type='generate_thoughts']").first
    expect(produced.locator(".tt-focus")).to_contain_text(f"“{nodes[chosen]['content']}”")
    scored = panel.locator(".tt-exchange[data-type='evaluate_thoughts']")
    expect(scored.locator(".tt-focus")).to_contain_text(
        f"score {evaluation['score']:g} · confidence {evaluation['confidence']:g} · ranked 1 of 1 — {evaluation['reasoning']}")
    reply = scored.locator(".tt-msg[data-type='evaluation_results']")
    expect(reply.locator("summary")).to_contain_text("evaluator → explorer evaluation_results")
    reply.locator("summary").click()
    expect(reply.locator("pre")).to_contain_text(f'"node_id": "{chosen}"')
    assert f"node={chosen}" in page.url

    # Every node, unfolded; a pruned node whose thought holds markup: shown as text, never run.
    page.locator("#tt-collapse").uncheck()
    expect(graph).to_have_attribute("data-drawn", str(len(nodes)))
    assert page.evaluate(f"() => {tree}.nodes('.faded').length") == len(pruned)
    click_tree_node(page, pruned[-1])
    expect(panel.locator("h2")).to_have_text(pruned[-1])
    expect(panel.locator(".tt-content")).to_have_text(marked)
    expect(panel.locator(".tt-reasoning")).to_have_text(XSS)
    assert page.locator("main b:text-is('bold'), main img[src='x']").count() == 0
    assert page.evaluate("window.pwned") is None

    # Every message, in order, built when asked for.
    page.get_by_text("Show every message").click()
    expect(page.locator("#tt-all-messages .tt-msg")).to_have_count(len(fields["messages"]))
    expect(page.locator("#tt-all-messages .tt-msg").first).to_contain_text("orchestrator → decomposer decompose_task")
    page.get_by_text("Show every message").click()

    # The best path's list selects its nodes, opening the folds on the way.
    page.locator("#tt-collapse").check()
    page.locator(f"#tt-best-path a[data-node='{best[-1]}']").click()
    expect(panel.locator("h2")).to_have_text(best[-1])

    # A search whose generator failed once: the error on the node it could not expand.
    failed = store_search(execution, execution.node_runs.get(attempt=1),
                          **real_search(generator_fails_on="13 - 9 = 4"))
    page.goto(page_url(execution.execution_id, failed.node_run_id))
    expect(page.locator("#tt-result")).to_contain_text("Errors recorded on the way: GENERATION_FAILED × 1")
    stuck = next(i for i, node in failed.tree["nodes"].items() if node["content"].startswith("13 - 9 = 4"))
    click_tree_node(page, stuck)
    expansion = panel.locator(".tt-expansion .tt-exchange")
    expect(expansion.locator(".tt-focus")).to_have_text(
        "GENERATION_FAILED: the generator failed: RuntimeError: the model went quiet")
    expect(expansion.locator(".tt-msg[data-type='generated_thoughts'] .tt-msg-error")).to_have_text("GENERATION_FAILED")

    # The picture: the page as it opens on the answer's node (?node=…).
    page.goto(page_url(execution.execution_id, search.node_run_id) + f"?node={best[-1]}")
    expect(panel.locator("h2")).to_have_text(best[-1])
    expect(graph).to_have_attribute("data-drawn", re.compile(r"^\d+$"))
    screenshot(page, "thought_tree")


@pytest.mark.django_db(transaction=True)
def test_it_keeps_a_500_node_tree_responsive_by_folding_its_pruned_branches(page_for, api, demo):
    from playwright.sync_api import expect

    execution, search = tot_execution(**wide_search(500))
    page = page_for(api.viewer.user)
    page.goto(page_url(execution.execution_id, search.node_run_id))
    graph = page.locator("#tt-graph")
    expect(graph).to_have_attribute("data-drawn", re.compile(r"^\d+$"))
    expect(page.locator("#tt-collapse")).to_be_checked()
    assert int(graph.get_attribute("data-drawn")) < 100  # of 500
    assert int(graph.get_attribute("data-draw-ms")) < 3000
    # The root's pruned children fold into one node, their subtrees counted in.
    pruned_kids = [kid for kid in search.tree["nodes"]["root"]["children_ids"]
                   if search.tree["nodes"][kid]["status"] == "pruned"]
    label = page.evaluate("() => window.switchyard.thoughtTree.getElementById('fold:root').data('label')")
    assert re.fullmatch(rf"{len(pruned_kids)} pruned \+\d+\n▸ show", label)

    page.locator("#tt-collapse").uncheck()
    expect(graph).to_have_attribute("data-drawn", "500")
    assert int(graph.get_attribute("data-draw-ms")) < 3000
    click_tree_node(page, "node_2_29")
    expect(page.locator("#tt-panel h2")).to_have_text("node_2_29")
    expect(page.locator("#tt-panel .tt-eval-value")).to_have_text("9")
