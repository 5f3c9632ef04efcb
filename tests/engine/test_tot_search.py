"""The search: run_tot with the builtin Game-of-24 roles and with small fake roles."""
import itertools

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from engine.tot import (
    TASK_TYPES,
    SearchConfig,
    ThoughtTree,
    ToTError,
    builtin_roles,
    check_message,
    make_message,
    run_tot,
    solve,
    verify,
)

BASE_KEYS = {"from", "to", "type", "payload", "task_id"}


def game(problem="4 9 10 13", roles=None, clock=None, **settings):
    extra = {"clock": clock} if clock else {}
    return run_tot(problem=problem, task_type="math_reasoning", task_id="t-1", roles=roles or builtin_roles(),
                   config=SearchConfig.for_task("math_reasoning", **settings), **extra)


def with_roles(**overrides):
    return {**builtin_roles(), **overrides}


def expanded_per_depth(run):
    counts = {}
    for node in run.tree.nodes.values():
        if node.status == "expanded":
            counts[node.depth] = counts.get(node.depth, 0) + 1
    return counts


def types(run):
    return [message["type"] for message in run.messages]


# ---------------------------------------------------------------- small fake roles: a tree of letters

def letter_roles(scores=None, goals=(), valid=True, depth=3):
    """Children of "ab" are "aba", "abb", …; a node scores `scores[content]` (5 by default)
    and is solved when its content is one of `goals` (no "solved" at all when none)."""
    scores = scores or {}

    def decomposer(request):
        return make_message("decomposer", request["from"], "decomposition_result", {
            "thought_granularity": "letter", "intermediate_steps": [], "depth_estimate": depth,
            "constraints": [], "success_criteria": "a goal word"}, request["task_id"])

    def generator(request):
        payload = request["payload"]
        parent = payload["parent_node"]["content"].replace("start", "")
        if "sample_index" in payload:
            letters = "abcdefgh"[payload["sample_index"]]
        else:
            letters = "abcdefgh"[: payload["num_candidates"]]
        candidates = [{"temp_id": f"c{n}", "content": parent + letter} for n, letter in enumerate(letters)]
        return make_message("generator", request["from"], "generated_thoughts", {"candidates": candidates},
                            request["task_id"])

    def evaluator(request):
        evaluations = []
        for node in request["payload"]["candidates"]:
            entry = {"node_id": node["id"], "score": scores.get(node["content"], 5.0), "confidence": 0.5,
                     "reasoning": "by the table"}
            if goals:
                entry["metadata"] = {"solved": node["content"] in goals}
            evaluations.append(entry)
        return make_message("evaluator", request["from"], "evaluation_results", {
            "evaluations": evaluations, "ranking": [e["node_id"] for e in evaluations], "pruning_suggestions": []},
            request["task_id"])

    def synthesizer(request):
        answer = request["payload"]["best_path"][-1]["content"]
        return make_message("synthesizer", request["from"], "final_solution", {
            "answer": answer, "reasoning_trace": [], "confidence": 1.0,
            "verification": {"is_valid": valid, "validation_errors": [] if valid else ["not a word"]}},
            request["task_id"])

    return {"decomposer": decomposer, "generator": generator, "evaluator": evaluator, "synthesizer": synthesizer}


def letters(roles, task_type="planning", **settings):
    return run_tot(problem="start", task_type=task_type, task_id="t-1", roles=roles,
                   config=SearchConfig.for_task(task_type, **settings))


# ---------------------------------------------------------------- the Game of 24 end to end

@pytest.mark.parametrize("settings", [{"strategy": "BFS", "breadth": 5}, {"strategy": "DFS"}])
def test_it_solves_the_seed_example_with_a_verified_24(settings):
    run = game("4 9 10 13", **settings)
    assert run.error is None
    solution = run.final_solution
    assert verify(solution["answer"], [4, 9, 10, 13]) == []
    assert solution["verification"] == {"is_valid": True, "validation_errors": []}
    best = run.tree.search_state.best_path
    assert best[0] == "root" and len(best) == 4
    last = run.tree.nodes[best[-1]]
    assert last.status == "terminal" and last.metadata["left"] == ["24"] and last.metadata["solved"] is True
    assert [run.tree.nodes[node_id].status for node_id in best[:-1]] == ["expanded"] * 3
    assert run.stats["total_nodes"] == len(run.tree.nodes)
    assert run.stats["llm_calls"] == sum(run.calls_by_role.values())
    assert types(run)[:4] == ["decompose_task", "decomposition_result", "initialize_search", "generate_thoughts"]
    assert types(run)[-4:] == ["synthesize_solution", "final_solution", "search_complete", "final_solution"]
    assert run.messages[-1]["payload"] == solution and run.messages[-1]["to"] == "orchestrator"


@pytest.mark.parametrize("settings", [{}, {"strategy": "DFS"}])
def test_it_solves_3_3_8_8_through_fractional_steps_with_the_seed_settings(settings):
    run = game("3 3 8 8", **settings)
    assert (run.tree.search_config["branching_factor"], run.tree.search_config["breadth"]) == (5, 3)
    assert run.error is None and verify(run.final_solution["answer"], [3, 3, 8, 8]) == []
    steps = [run.tree.nodes[node_id].metadata["step"] for node_id in run.tree.search_state.best_path[1:]]
    assert steps == ["8 ÷ 3 = 8/3", "3 - 8/3 = 1/3", "8 ÷ 1/3 = 24"]


@pytest.mark.parametrize("settings", [{"strategy": "BFS", "breadth": 1}, {"strategy": "BFS", "breadth": 5},
                                      {"strategy": "DFS"}])
@pytest.mark.parametrize("problem", ["1 1 1 1", "13 13 13 13", "1 1 2 2"])
def test_it_exhausts_a_puzzle_without_solution_and_gives_no_answer(problem, settings):
    assert solve(problem) is None
    run = game(problem, **settings)
    assert run.final_solution is None
    assert run.error.code == "SEARCH_EXHAUSTED" and run.error.recoverable is False
    assert "no terminal node meets the success criterion" in run.error.message
    complete = run.messages[-1]
    assert complete["type"] == "search_complete" and complete["error"] == run.error.as_dict()
    assert "final_solution" not in types(run)


def test_it_keeps_the_seed_shapes_in_every_message():
    for run in (game("4 9 10 13", strategy="BFS", breadth=5), game("1 1 1 1", strategy="DFS")):
        for message in run.messages:
            assert set(message) - {"error"} == BASE_KEYS
            check_message(message)
        complete = run.messages[-1] if run.error else run.messages[-2]
        assert complete["type"] == "search_complete"
        assert set(complete["payload"]) == {"best_path", "tree", "stats"}
        assert set(complete["payload"]["stats"]) == {"total_nodes", "total_backtracks", "llm_calls"}
        assert ThoughtTree.from_dict(complete["payload"]["tree"]).as_dict() == run.tree.as_dict()
        assert [node["id"] for node in complete["payload"]["best_path"]] == run.tree.search_state.best_path
        assert run.as_dict()["tree"] == run.tree.as_dict()


def test_it_names_nodes_by_depth_and_records_the_search_config():
    run = game("4 9 10 13", strategy="BFS", breadth=5)
    for node_id, node in run.tree.nodes.items():
        assert node_id == "root" if node.depth == 0 else node_id.startswith(f"node_{node.depth}_")
    config = run.tree.as_dict()["search_config"]
    assert list(config)[:4] == ["strategy", "max_depth", "branching_factor", "pruning_threshold"]
    assert config["max_depth"] == 3 and config["breadth"] == 5
    assert run.messages[2]["payload"]["search_config"] == config


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=13), min_size=4, max_size=4),
       st.sampled_from([{"strategy": "BFS", "breadth": 1}, {"strategy": "BFS", "breadth": 5}, {"strategy": "DFS"},
                        {"strategy": "DFS", "generation_strategy": "independent_sampling",
                         "evaluation_strategy": "comparative_voting"}]))
def test_it_never_gives_a_wrong_answer(numbers, settings):
    run = game(" ".join(map(str, numbers)), **settings)
    if run.final_solution is not None:
        assert verify(run.final_solution["answer"], numbers) == []
        assert run.error is None
    else:
        assert run.error.code == "SEARCH_EXHAUSTED"
    if solve(numbers) is None:
        assert run.final_solution is None


# ---------------------------------------------------------------- BFS and DFS

@pytest.mark.parametrize("breadth", [1, 2, 5])
def test_it_keeps_the_b_best_nodes_per_level_in_bfs(breadth):
    scores = {word: 1.0 + (sum(map(ord, word)) % 9) for word in map("".join, itertools.product("abcde", repeat=2))}
    run = letters(letter_roles(scores=scores, depth=3), task_type="math_reasoning", breadth=breadth,
                  pruning_threshold=0)
    assert expanded_per_depth(run) == {0: 1, 1: breadth, 2: breadth}
    level_2 = [node for node in run.tree.nodes.values() if node.depth == 2]
    kept = sorted((node for node in level_2 if node.status == "expanded"), key=lambda node: -node.score)
    dropped = [node for node in level_2 if node.status == "pruned"]
    assert len(level_2) == breadth * 5 and len(dropped) == breadth * 5 - breadth
    assert all(node.score <= kept[-1].score for node in dropped)
    assert all(node.metadata["pruned_reason"] == f"not among the {breadth} best of depth 2" for node in dropped)


def test_it_keeps_one_node_per_level_with_b1_and_five_with_b5_on_the_seed_example():
    one, five = game("4 9 10 13", breadth=1), game("4 9 10 13", breadth=5)
    assert expanded_per_depth(one) == {0: 1, 1: 1, 2: 1}
    assert expanded_per_depth(five)[1] == 5


def test_it_backtracks_in_dfs_when_the_first_branch_fails():
    run = game("1 3 8 9", strategy="DFS")
    assert verify(run.final_solution["answer"], [1, 3, 8, 9]) == []
    assert run.stats["total_backtracks"] > 0
    tried_first = max((run.tree.nodes[i] for i in run.tree.root.children_ids), key=lambda node: node.score)
    assert tried_first.status == "expanded" and tried_first.id not in run.tree.search_state.best_path


def test_it_backtracks_step_by_step_in_a_dfs_over_letters():
    # a is the best first step but leads nowhere; b leads to the goal "bb".
    roles = letter_roles(scores={"a": 9, "b": 6, "aa": 1, "ab": 1, "ba": 1, "bb": 7}, goals=("bb",), depth=2)
    run = letters(roles, branching_factor=2, pruning_threshold=3)
    nodes = {node.content: node for node in run.tree.nodes.values()}
    assert run.final_solution["answer"] == "bb"
    assert nodes["a"].status == "expanded" and nodes["aa"].status == nodes["ab"].status == "pruned"
    assert run.stats["total_backtracks"] == 1
    assert run.tree.search_state.best_path == ["root", nodes["b"].id, nodes["bb"].id]
    assert [m["payload"]["parent_node"]["content"] for m in run.messages if m["type"] == "generate_thoughts"] == [
        "start", "a", "b"]


def test_it_prunes_below_the_threshold_and_never_expands_a_pruned_node():
    run = game("1 1 4 7", strategy="DFS", pruning_threshold=5)
    pruned = [node for node in run.tree.nodes.values() if node.status == "pruned"]
    assert pruned
    for node in run.tree.nodes.values():
        if node.score is not None and node.score < 5:
            assert node.status == "pruned" and node.children_ids == []
            assert "below the pruning threshold 5" in node.metadata["pruned_reason"]
    strict = game("4 9 10 13", strategy="DFS", pruning_threshold=9.5)
    assert expanded_per_depth(strict) == {0: 1} and strict.error.code == "SEARCH_EXHAUSTED"


def test_it_obeys_the_evaluators_pruning_suggestions():
    run = game("4 9 10 13", strategy="DFS", pruning_threshold=0)
    suggested = [node for node in run.tree.nodes.values() if node.metadata.get("judgement") == "impossible"]
    assert suggested and all(node.status == "pruned" and not node.children_ids for node in suggested)
    assert {node.metadata["pruned_reason"] for node in suggested} == {"the evaluator suggested pruning it"}


@pytest.mark.parametrize("strategy", ["BFS", "DFS"])
def test_it_stops_at_the_node_budget_and_says_so(strategy):
    run = game("1 1 1 1", strategy=strategy, max_nodes=4)
    assert len(run.tree.nodes) == 4
    assert run.error.code == "BUDGET_EXHAUSTED" and run.error.recoverable is False
    assert "node budget (max_nodes 4) was spent" in run.error.message
    assert run.messages[-1]["type"] == "search_complete" and run.messages[-1]["error"] == run.error.as_dict()
    assert check_message(run.messages[-1], "search_complete")


# ---------------------------------------------------------------- generation and evaluation strategies

@pytest.mark.parametrize("strategy, generator_calls", [("independent_sampling", 5), ("sequential_proposal", 1)])
def test_it_counts_k_generator_calls_for_sampling_and_one_for_a_proposal(strategy, generator_calls):
    run = game("4 9 10 13", max_depth=1, branching_factor=5, generation_strategy=strategy)
    assert run.calls_by_role == {"decomposer": 1, "generator": generator_calls, "evaluator": 5, "synthesizer": 0}
    assert run.stats["llm_calls"] == 1 + generator_calls + 5
    asks = [m["payload"] for m in run.messages if m["type"] == "generate_thoughts"]
    if strategy == "independent_sampling":
        assert [(a["num_candidates"], a["sample_index"]) for a in asks] == [(1, n) for n in range(5)]
    else:
        assert [a["num_candidates"] for a in asks] == [5]
    assert len(run.tree.root.children_ids) == 5


@pytest.mark.parametrize("strategy, evaluator_calls", [("independent_scoring", 5), ("comparative_voting", 1)])
def test_it_counts_n_evaluator_calls_for_scoring_and_one_for_voting(strategy, evaluator_calls):
    run = game("4 9 10 13", max_depth=1, branching_factor=5, evaluation_strategy=strategy)
    assert run.calls_by_role["evaluator"] == evaluator_calls
    assert run.stats["llm_calls"] == 1 + 1 + evaluator_calls
    sizes = [len(m["payload"]["candidates"]) for m in run.messages if m["type"] == "evaluate_thoughts"]
    assert sizes == ([1] * 5 if strategy == "independent_scoring" else [5])


def test_it_solves_with_comparative_voting_and_independent_sampling_too():
    run = game("4 9 10 13", breadth=5, evaluation_strategy="comparative_voting",
               generation_strategy="independent_sampling")
    assert verify(run.final_solution["answer"], [4, 9, 10, 13]) == []


def test_it_merges_duplicate_samples():
    def same_each_time(request):
        return make_message("generator", "explorer", "generated_thoughts", {"candidates": [
            {"temp_id": "c1", "content": "13 - 9 = 4 (left: 4 4 10)", "metadata": {"left": ["4", "4", "10"]}}]},
            "t-1")

    run = game("4 9 10 13", max_depth=1, generation_strategy="independent_sampling",
               roles=with_roles(generator=same_each_time))
    assert run.calls_by_role["generator"] == 5 and len(run.tree.root.children_ids) == 1
    assert run.tree.nodes["node_1_1"].action_type == "equation", "the decomposition's granularity by default"


# ---------------------------------------------------------------- errors

def nothing(request):
    return make_message("generator", "explorer", "generated_thoughts", {"candidates": []}, "t-1")


def broken(request):
    raise RuntimeError("model unavailable")


@pytest.mark.parametrize("generator, said", [(nothing, "gave no candidate for root"),
                                             (broken, "RuntimeError: model unavailable")])
def test_it_reports_generation_failed_when_the_generator_gives_nothing(generator, said):
    run = game("4 9 10 13", roles=with_roles(generator=generator))
    assert run.final_solution is None and len(run.tree.nodes) == 1
    assert run.error.code == "GENERATION_FAILED" and run.error.recoverable is False
    reply = run.messages[4]
    assert reply["from"] == "generator" and reply["type"] == "generated_thoughts"
    assert reply["error"]["code"] == "GENERATION_FAILED" and reply["error"]["recoverable"] is True
    assert said in reply["error"]["message"]
    assert run.tree.root.metadata["error"] == reply["error"]
    assert run.tree.root.status == "expanded"


def test_it_moves_on_when_some_generator_calls_fail():
    builtin = builtin_roles()["generator"]

    def flaky(request):
        if request["payload"].get("sample_index") == 1:
            raise RuntimeError("rate limited")
        return builtin(request)

    run = game("4 9 10 13", breadth=5, generation_strategy="independent_sampling", roles=with_roles(generator=flaky))
    assert verify(run.final_solution["answer"], [4, 9, 10, 13]) == []
    failed = [m for m in run.messages if m.get("error", {}).get("code") == "GENERATION_FAILED"]
    assert failed and all(m["error"]["recoverable"] for m in failed)


def test_it_times_out_a_slow_evaluator_with_a_fake_clock():
    now = [0.0]
    builtin = builtin_roles()["evaluator"]

    def slow(request):
        now[0] += 10.0
        return builtin(request)

    run = game("4 9 10 13", roles=with_roles(evaluator=slow), clock=lambda: now[0], evaluation_timeout_s=5)
    children = [run.tree.nodes[node_id] for node_id in run.tree.root.children_ids]
    assert children and all(node.evaluation is None and node.status == "pruned" for node in children)
    assert all(node.metadata["error"]["code"] == "EVALUATION_TIMEOUT" for node in children)
    late = [m for m in run.messages if m["type"] == "evaluation_results"]
    assert late and all(m["error"]["code"] == "EVALUATION_TIMEOUT" for m in late)
    assert "after 10 s, more than the evaluation_timeout_s of 5 s" in late[0]["error"]["message"]
    # Every branch ended on a timeout: that is what the run's error says.
    assert run.error.code == "EVALUATION_TIMEOUT" and "5 × EVALUATION_TIMEOUT" in run.error.message


def test_it_times_out_only_the_slow_calls():
    now = [0.0]
    builtin = builtin_roles()["evaluator"]

    def sometimes_slow(request):
        if request["payload"]["candidates"][0]["id"] == "node_1_1":
            now[0] += 2.0
        return builtin(request)

    run = game("4 9 10 13", breadth=5, roles=with_roles(evaluator=sometimes_slow), clock=lambda: now[0],
               evaluation_timeout_s=1.5)
    assert run.tree.nodes["node_1_1"].metadata["error"]["code"] == "EVALUATION_TIMEOUT"
    assert verify(run.final_solution["answer"], [4, 9, 10, 13]) == []


def test_it_treats_a_timeout_error_from_the_evaluator_as_evaluation_timeout():
    def gives_up(request):
        raise TimeoutError("no answer in 30 s")

    run = game("4 9 10 13", roles=with_roles(evaluator=gives_up))
    assert run.tree.nodes["node_1_1"].metadata["error"]["code"] == "EVALUATION_TIMEOUT"


def test_it_refuses_a_malformed_generator_reply_and_goes_on():
    builtin = builtin_roles()["generator"]

    def sloppy(request):
        reply = builtin(request)
        if request["payload"]["parent_node"]["id"] == "root":
            reply["payload"]["candidates"][1].pop("content")
        return reply

    run = game("4 9 10 13", roles=with_roles(generator=sloppy))
    reply = run.messages[4]
    assert reply["error"]["code"] == "INVALID_FORMAT"
    assert reply["error"]["message"].startswith("payload.candidates[1].content: is required")
    assert run.tree.root.children_ids == [] and run.error.code == "INVALID_FORMAT"
    assert run.error.recoverable is False and "payload.candidates[1].content: is required" in run.error.message


@pytest.mark.parametrize("change, said", [
    (lambda p: p["evaluations"][0].update(score=11), "payload.evaluations[0].score: must be between 0 and 10"),
    (lambda p: p["evaluations"][0].update(node_id="node_9_9"),
     "payload.evaluations[0].node_id: 'node_9_9' is not one of the candidates"),
    (lambda p: p["evaluations"].clear(), "payload.evaluations: no evaluation for node_1_"),
    (lambda p: p["ranking"].append("node_7_7"), "payload.ranking[1]: 'node_7_7' is not one of the candidates"),
    (lambda p: p["evaluations"].append(dict(p["evaluations"][0])), "is evaluated twice"),
])
def test_it_refuses_a_malformed_evaluator_reply_and_leaves_its_nodes_unscored(change, said):
    builtin = builtin_roles()["evaluator"]

    def sloppy(request):
        reply = builtin(request)
        change(reply["payload"])
        return reply

    run = game("4 9 10 13", roles=with_roles(evaluator=sloppy))
    first = next(m for m in run.messages if m["type"] == "evaluation_results")
    assert first["error"]["code"] == "INVALID_FORMAT" and said in first["error"]["message"], first["error"]
    node = run.tree.nodes["node_1_1"]
    assert node.evaluation is None and node.status == "pruned" and node.metadata["error"] == first["error"]


def test_it_stops_before_searching_when_the_decomposition_is_malformed():
    def sloppy(request):
        reply = builtin_roles()["decomposer"](request)
        reply["payload"]["depth_estimate"] = "three"
        return reply

    run = game("4 9 10 13", roles=with_roles(decomposer=sloppy))
    assert run.error.code == "INVALID_FORMAT" and run.error.recoverable is False
    assert "payload.depth_estimate: expected an integer" in run.error.message
    assert types(run) == ["decompose_task", "decomposition_result"] and len(run.tree.nodes) == 1
    assert run.messages[1]["error"]["code"] == "INVALID_FORMAT"


def test_it_stops_on_a_problem_the_decomposer_refuses():
    run = game("make 24")
    assert run.error.code == "INVALID_FORMAT" and "payload.problem" in run.error.message
    assert run.messages[1]["payload"] == {} and run.messages[1]["error"]["code"] == "INVALID_FORMAT"


def test_it_never_reports_an_answer_whose_verification_fails():
    run = letters(letter_roles(goals=("ab",), valid=False, depth=2), branching_factor=2)
    assert run.final_solution is None and run.error.code == "SEARCH_EXHAUSTED"
    offered = [m for m in run.messages if m["type"] == "final_solution"]
    assert offered and all(m["from"] == "synthesizer" for m in offered)
    goal = next(node for node in run.tree.nodes.values() if node.content == "ab")
    assert goal.status == "terminal" and goal.metadata["validation_errors"] == ["not a word"]


def test_it_tries_the_next_terminal_when_an_answer_does_not_verify():
    roles = letter_roles(scores={"aa": 9, "ab": 8}, goals=("aa", "ab"), depth=2)
    synthesize = roles["synthesizer"]

    def picky(request):
        reply = synthesize(request)
        if reply["payload"]["answer"] == "aa":
            reply["payload"]["verification"] = {"is_valid": False, "validation_errors": ["aa is not allowed"]}
        return reply

    run = letters({**roles, "synthesizer": picky}, task_type="math_reasoning", branching_factor=2, breadth=2)
    assert run.final_solution["answer"] == "ab"
    assert [m["payload"]["answer"] for m in run.messages if m["type"] == "final_solution"] == ["aa", "ab", "ab"]


def test_it_lists_the_other_verified_terminal_nodes_as_alternative_solutions():
    roles = letter_roles(scores={"aa": 9, "ab": 8, "ac": 7, "ad": 6}, goals=("aa", "ab", "ad"), depth=2)
    run = letters(roles, task_type="math_reasoning", branching_factor=4, breadth=1)
    assert run.final_solution["answer"] == "aa"
    assert run.final_solution["alternative_solutions"] == ["ab", "ad"]
    assert check_message(run.messages[-1], "final_solution")["alternative_solutions"] == ["ab", "ad"]
    offered = [m["payload"]["best_path"][-1]["content"] for m in run.messages if m["type"] == "synthesize_solution"]
    assert offered == ["aa", "ab", "ad"], "each terminal node once, best first"


def test_it_leaves_out_alternatives_that_do_not_verify_or_repeat_the_answer():
    roles = letter_roles(scores={"aa": 9, "ab": 8, "ac": 7}, goals=("aa", "ab", "ac"), depth=2)
    synthesize = roles["synthesizer"]

    def one_answer(request):
        reply = synthesize(request)
        content = reply["payload"]["answer"]
        reply["payload"]["answer"] = "a?" if content in ("aa", "ab") else content
        if content == "ac":
            reply["payload"]["verification"] = {"is_valid": False, "validation_errors": ["ac is not allowed"]}
        return reply

    run = letters({**roles, "synthesizer": one_answer}, task_type="math_reasoning", branching_factor=3, breadth=1)
    assert run.final_solution["answer"] == "a?" and run.final_solution["alternative_solutions"] == []


def test_it_finds_several_verified_game24_solutions():
    run = game("3 4 6 8")
    alternatives = run.final_solution["alternative_solutions"]
    assert len(alternatives) >= 2 and run.final_solution["answer"] not in alternatives
    assert all(verify(answer, [3, 4, 6, 8]) == [] for answer in alternatives)


def test_it_reports_invalid_format_when_every_synthesizer_reply_is_malformed():
    roles = letter_roles(goals=("ab",), depth=2)
    synthesize = roles["synthesizer"]

    def sloppy(request):
        reply = synthesize(request)
        del reply["payload"]["verification"]
        return reply

    run = letters({**roles, "synthesizer": sloppy}, branching_factor=2)
    assert run.final_solution is None
    assert run.error.code == "INVALID_FORMAT" and "payload.verification: is required" in run.error.message


def test_it_takes_a_leaf_at_max_depth_as_terminal_when_the_task_has_no_solved_test():
    run = letters(letter_roles(scores={"b": 8, "ba": 6, "bb": 9}, depth=2), task_type="creative_writing",
                  branching_factor=2, breadth=1)
    assert run.final_solution["answer"] == "bb"
    assert run.calls_by_role["evaluator"] == 2, "comparative voting: one call per expansion"


def test_it_lets_a_role_bug_propagate():
    def buggy(request):
        raise KeyError("payload")

    with pytest.raises(KeyError):
        game("4 9 10 13", roles=with_roles(synthesizer=buggy))
    with pytest.raises(ValueError, match="roles: no callable for evaluator"):
        run_tot(problem="4 9 10 13", task_type="math_reasoning", task_id="t", roles={
            k: v for k, v in builtin_roles().items() if k != "evaluator"})


# ---------------------------------------------------------------- the configuration

def test_it_takes_its_defaults_from_the_seed_task_type_table():
    expected = {
        "math_reasoning": ("BFS", "independent_scoring", "sequential_proposal"),
        "creative_writing": ("BFS", "comparative_voting", "independent_sampling"),
        "planning": ("DFS", "independent_scoring", "sequential_proposal"),
        "debugging": ("DFS", "independent_scoring", "sequential_proposal"),
        "architecture_design": ("BFS", "comparative_voting", "independent_sampling"),
    }
    for task_type, row in expected.items():
        config = SearchConfig.for_task(task_type)
        assert (config.strategy, config.evaluation_strategy, config.generation_strategy) == row
    assert set(TASK_TYPES) == set(expected)
    assert SearchConfig.for_task("planning", strategy="BFS", breadth=5).as_dict()["breadth"] == 5


@pytest.mark.parametrize("task_type, estimate, depth", [("math_reasoning", 3, 3), ("math_reasoning", 10, 4),
                                                        ("math_reasoning", 1, 3), ("planning", 2, 3),
                                                        ("debugging", 12, 12), ("creative_writing", 5, 3)])
def test_it_takes_the_depth_from_the_decomposition_within_the_recommended_range(task_type, estimate, depth):
    assert SearchConfig.for_task(task_type).with_depth(task_type, estimate).max_depth == depth
    assert SearchConfig.for_task(task_type, max_depth=2).with_depth(task_type, estimate).max_depth == 2


@pytest.mark.parametrize("settings, said", [
    ({"strategy": "A*"}, "search_config.strategy"), ({"breadth": 0}, "search_config.breadth"),
    ({"branching_factor": 2.5}, "search_config.branching_factor"), ({"max_depth": 0}, "search_config.max_depth"),
    ({"pruning_threshold": 11}, "search_config.pruning_threshold"),
    ({"generation_strategy": "beam"}, "search_config.generation_strategy"),
    ({"evaluation_strategy": "vote"}, "search_config.evaluation_strategy"),
    ({"evaluation_timeout_s": 0}, "search_config.evaluation_timeout_s"), ({"max_nodes": 0}, "search_config.max_nodes"),
    ({"beam": 3}, "unknown search setting"),
])
def test_it_refuses_a_bad_search_setting(settings, said):
    with pytest.raises(ValueError, match=said):
        SearchConfig.for_task("math_reasoning", **settings)


def test_it_refuses_an_unknown_task_type():
    with pytest.raises(ValueError, match="unknown task type 'poetry'"):
        SearchConfig.for_task("poetry")


def test_it_never_raises_a_protocol_error_out_of_a_run():
    run = game("4 9 10 13", roles=with_roles(evaluator=lambda request: "7/10"))
    assert isinstance(run.error, ToTError) and run.error.code == "INVALID_FORMAT"
    assert run.messages[6]["error"]["message"] == "message: expected an object, got '7/10'"
