"""The Game of 24: exact arithmetic, the brute-force solver, the verifier and the builtin roles."""
import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.tot import ToTError, check_reply, make_message, solve, verify
from engine.tot.game24 import (
    builtin_decomposer,
    builtin_evaluator,
    builtin_generator,
    builtin_synthesizer,
    check_final_solution,
    judge,
    parse_step,
    proposals,
    state_of,
    take_step,
)

F = Fraction
puzzles = st.lists(st.integers(min_value=1, max_value=13), min_size=4, max_size=4)


def exhaustive(values: list[Fraction]) -> bool:
    """An independent check: combine any two numbers in every way, recurse on what is left."""
    if len(values) == 1:
        return values[0] == 24
    for i, j in itertools.permutations(range(len(values)), 2):
        rest = [v for n, v in enumerate(values) if n not in (i, j)]
        a, b = values[i], values[j]
        results = [a + b, a - b, a * b] + ([a / b] if b else [])
        if any(exhaustive(rest + [r]) for r in results):
            return True
    return False


def node(content, metadata=None, node_id="node_1_1", depth=1):
    return {"id": node_id, "parent_id": "root", "children_ids": [], "depth": depth, "content": content,
            "action_type": "subtraction", "evaluation": None, "status": "pending", "metadata": metadata or {}}


def request(type, payload, sender="explorer", to="generator"):
    return make_message(sender, to, type, payload, "t-1")


# ---------------------------------------------------------------- verify

@pytest.mark.parametrize("expression, numbers", [
    ("(10 - (13 - 9)) × 4 = 24", "4 9 10 13"),
    ("(10 - (13 - 9)) * 4", [4, 9, 10, 13]),
    ("4 x (10 − (13 − 9))", [13, 9, 4, 10]),
    ("8/(3-8/3)", [3, 3, 8, 8]),
    ("8 ÷ (3 - 8 ÷ 3) = 24", "3 3 8 8"),
    ("((1 + 2) + 1) × 6", [1, 1, 2, 6]),
])
def test_it_accepts_a_right_answer_exactly(expression, numbers):
    assert verify(expression, numbers) == []


def test_it_computes_fractions_exactly_where_floats_would_miss():
    assert 8 / (3 - 8 / 3) != 24  # the float trap this game sets
    assert verify("8 / (3 - 8 / 3)", [3, 3, 8, 8]) == []
    assert verify("(1 / 3 + 1 / 3 + 1 / 3) × 24", [1, 1, 1, 3, 3, 3, 24]) == []


@pytest.mark.parametrize("expression, numbers, said", [
    ("(10 - (13 - 9)) × 4 + 1", [4, 9, 10, 13, 1], "makes 25, not 24"),
    ("(13 - 9) × 4 + 10", [4, 9, 10, 13], "makes 26, not 24"),
    ("4 × 4 + 4 + 4", [4, 9, 10, 13], "uses 4 4 times but it is given once"),
    ("(9 - 3) × 4", [3, 4, 9, 9], "uses 9 once but it is given twice"),
    ("(9 - 3) × 4", [3, 4, 9, 13], "does not use 13"),
    ("6 × 4", [4, 9, 10, 13], "uses 6, which is not one of the numbers"),
    ("(6 + 6) + (6 + 6)", [6, 6, 6], "uses 6 4 times but it is given 3 times"),
    ("8 / (3 - 8 / 3)", [3, 8, 8], "uses 3 twice but it is given once"),
    ("-(1 - 25)", [1, 25], "unary minus is not allowed"),
    ("24 / (4 - 4)", [24, 4, 4], "division by zero"),
    ("24 / (4 - 4 + 0)", [24, 4, 4, 0], "division by zero"),
    ("(4 + 20", [4, 20], "not closed"),
    ("4 + 20)", [4, 20], "unexpected ) after a complete expression"),
    ("4 20", [4, 20], "unexpected 20 after"),
    ("4 +", [4, 20], "ends where a number was expected"),
    ("", [24], "empty"),
    ("2.5 × 9.6", [24], "unexpected '.'"),
    ("__import__('os')", [24], "unexpected '_'"),
    ("٢٤", [24], "unexpected '٢'"),
    ("(10 - (13 - 9)) × 4 = 25", [4, 9, 10, 13], "right-hand side must be 24"),
    ("24 = 24 = 24", [24], "more than one '='"),
    ("(" * 60 + "24" + ")" * 60, [24], "nested parentheses"),
    ("1 + " * 200 + "1", [1] * 201, "longer than 500"),
])
def test_it_refuses_a_wrong_answer_saying_why(expression, numbers, said):
    errors = verify(expression, numbers)
    assert errors and said in " ".join(errors), errors


def test_it_refuses_an_answer_that_is_not_text():
    assert verify(24, [24]) == ["the answer must be text, got int"]


# ---------------------------------------------------------------- solve

def test_it_solves_the_seed_example():
    expression = solve("4 9 10 13")
    assert expression is not None and verify(expression, [4, 9, 10, 13]) == []


def test_it_finds_the_fraction_solution_of_3_3_8_8():
    expression = solve([3, 3, 8, 8])
    assert verify(expression, [3, 3, 8, 8]) == [], expression
    assert "÷" in expression


def test_it_finds_no_solution_where_there_is_none():
    assert solve([1, 1, 1, 1]) is None
    assert solve([24]) == "24" and solve([23]) is None


def test_it_counts_1362_solvable_puzzles_among_the_1820():
    hands = list(itertools.combinations_with_replacement(range(1, 14), 4))
    assert len(hands) == 1820
    assert sum(solve(hand) is not None for hand in hands) == 1362  # the known count


@settings(max_examples=150, deadline=None)
@given(puzzles)
def test_it_agrees_with_an_independent_exhaustive_check(numbers):
    expression = solve(numbers)
    assert (expression is not None) == exhaustive([F(n) for n in numbers])
    if expression is not None:
        assert verify(expression, numbers) == []


# ---------------------------------------------------------------- steps and states

def test_it_proposes_the_seed_steps_in_the_paper_format():
    offered = proposals([F(4), F(9), F(10), F(13)])
    contents = [p["content"] for p in offered]
    assert "13 - 9 = 4 (left: 4 4 10)" in contents
    assert "10 + 4 = 14 (left: 9 13 14)" in contents
    seed = next(p for p in offered if p["content"].startswith("13 - 9"))
    assert seed["action_type"] == "subtraction"
    assert seed["metadata"] == {"left": ["4", "4", "10"], "step": "13 - 9 = 4"}
    states = [tuple(p["metadata"]["left"]) for p in offered]
    assert len(states) == len(set(states)), "each proposal leaves different numbers"


def test_it_proposes_a_fractional_step_among_the_first_three():
    offered = [p["content"] for p in proposals([F(3), F(3), F(8), F(8)])]
    assert "8 ÷ 3 = 8/3 (left: 8/3 3 8)" in offered[:3]
    assert "3 ÷ 8 = 3/8 (left: 3/8 3 8)" in offered[:6]


def test_it_proposes_first_a_step_that_leaves_two_numbers_making_24():
    offered = [p["content"] for p in proposals([F(8, 3), F(3), F(8)])]
    assert offered[0] == "3 - 8/3 = 1/3 (left: 1/3 8)"
    assert proposals([F(4), F(6)])[0]["content"] == "6 × 4 = 24 (left: 24)"


def test_it_never_proposes_a_negative_number_or_a_division_by_zero():
    offered = proposals([F(0), F(3), F(5)])
    assert offered and all(F(value) >= 0 for p in offered for value in p["metadata"]["left"])
    assert not any("÷ 0" in p["content"] for p in offered)
    assert proposals([F(24)]) == []


def test_it_writes_fractions_exactly_in_steps():
    offered = proposals([F(3), F(8)])
    assert "8 ÷ 3 = 8/3 (left: 8/3)" in [p["content"] for p in offered]
    assert take_step([F(3), F(8), F(8, 3)], "3 - 8/3 = 1/3") == [F(1, 3), F(8)]


@pytest.mark.parametrize("text, said", [
    ("13 - 9 = 5", "13 - 9 is 4, not 5"),
    ("4 / 0 = 1", "division by zero"),
    ("thirteen minus nine", "not a step"),
    ("1/0 + 1 = 1", "division by zero"),
])
def test_it_refuses_a_wrong_step(text, said):
    with pytest.raises(ValueError, match=said):
        parse_step(text)


def test_it_refuses_a_step_on_numbers_that_are_not_left():
    with pytest.raises(ValueError, match="7 is not among the numbers left"):
        take_step([F(4), F(9), F(10), F(13)], "7 + 1 = 8")


def test_it_refuses_a_state_that_is_not_numbers():
    for left in (["1/0"], ["four"], [None]):
        with pytest.raises(ValueError, match="the numbers left are not numbers"):
            state_of(node("x", {"left": left}))


def test_it_reads_a_state_from_metadata_content_or_the_problem():
    assert state_of(node("x", {"left": ["8/3", "3"]})) == [F(8, 3), F(3)]
    assert state_of(node("13 - 9 = 4 (left: 4 4 10)")) == [F(4), F(4), F(10)]
    assert state_of(node("4 9 10 13", depth=0)) == [F(4), F(9), F(10), F(13)]


# ---------------------------------------------------------------- the evaluator's judgement

@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=2))
def test_it_judges_one_or_two_numbers_exactly(numbers):
    verdict = judge([F(n) for n in numbers])
    assert (verdict["judgement"] == "sure") == (solve(numbers) is not None)
    assert verdict["score"] in (0.0, 9.0, 10.0) and verdict["confidence"] == 1.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=13), min_size=3, max_size=3))
def test_it_says_sure_or_impossible_about_three_numbers_only_when_right(numbers):
    verdict = judge([F(n) for n in numbers])
    if verdict["judgement"] == "sure":
        assert solve(numbers) is not None
    if verdict["judgement"] == "impossible":
        assert solve(numbers) is None
    assert 0 <= verdict["score"] <= 10


def test_it_judges_three_numbers_by_a_heuristic_not_a_search():
    assert judge([F(4), F(4), F(10)])["judgement"] == "sure"  # (10 - 4) × 4
    assert judge([F(1), F(2), F(3)])["judgement"] == "impossible"  # at most (1 + 3) × 2... all too small
    # 8/(3 - 8/3) needs a division: the quick tries do not see it, so only "likely".
    assert judge([F(3), F(8), F(8, 3)])["judgement"] == "likely"
    unsolvable_but_likely = judge([F(1), F(5), F(7)])
    assert unsolvable_but_likely["judgement"] == "likely" and solve([1, 5, 7]) is None
    # With four numbers the quick tries are only the sum and the product: never "impossible".
    assert judge([F(1), F(1), F(3), F(4)])["judgement"] == "likely" and solve([1, 1, 3, 4]) is not None


# ---------------------------------------------------------------- the builtin roles

def test_it_decomposes_like_the_seed_example():
    reply = builtin_decomposer(request("decompose_task", {"problem": "4 9 10 13", "task_type": "math_reasoning"},
                                       sender="orchestrator", to="decomposer"))
    payload = check_reply(reply, "decomposition_result", from_="decomposer", to="orchestrator", task_id="t-1")
    assert payload["depth_estimate"] == 3 and payload["thought_granularity"] == "equation"
    assert len(payload["intermediate_steps"]) == 3 and payload["success_criteria"] == "the final result equals 24"


def test_it_refuses_a_problem_that_is_not_numbers():
    with pytest.raises(ToTError) as caught:
        builtin_decomposer(request("decompose_task", {"problem": "make 24", "task_type": "math_reasoning"},
                                   sender="orchestrator", to="decomposer"))
    assert caught.value.code == "INVALID_FORMAT" and "payload.problem" in caught.value.message


def generate(strategy, k, index=None):
    payload = {"parent_node": node("4 9 10 13", node_id="root", depth=0), "generation_strategy": strategy,
               "num_candidates": k, "context": {"problem": "4 9 10 13", "goal": "24", "constraints": []}}
    if index is not None:
        payload["sample_index"] = index
    return check_reply(builtin_generator(request("generate_thoughts", payload)), "generated_thoughts")["candidates"]


def test_it_proposes_k_steps_in_one_call_or_one_per_sample():
    together = generate("sequential_proposal", 5)
    apart = [generate("independent_sampling", 1, index)[0] for index in range(5)]
    assert len(together) == 5 and len({c["content"] for c in together}) == 5
    assert [c["content"] for c in apart] == [c["content"] for c in together]


def test_it_scores_ranks_and_suggests_pruning():
    candidates = [node("13 - 9 = 4 (left: 4 4 10)", {"left": ["4", "4", "10"], "step": "13 - 9 = 4"}),
                  node("x", {"left": ["1", "1", "2"]}, node_id="node_1_2"),
                  node("6 × 4 = 24 (left: 24)", {"left": ["24"], "step": "6 × 4 = 24"}, node_id="node_1_3"),
                  node("13 - 9 = 5 (left: 5 4 10)", {"left": ["4", "5", "10"], "step": "13 - 9 = 5"},
                       node_id="node_1_4"),
                  node("a model's nonsense", {"left": ["1/0", "24"]}, node_id="node_1_5")]
    reply = builtin_evaluator(request("evaluate_thoughts", {
        "candidates": candidates, "evaluation_strategy": "comparative_voting", "evaluation_criteria": [],
        "context": {"problem": "4 9 10 13", "goal": "24", "current_depth": 1, "max_depth": 3}}, to="evaluator"))
    payload = check_reply(reply, "evaluation_results", from_="evaluator")
    scores = {e["node_id"]: e["score"] for e in payload["evaluations"]}
    assert scores == {"node_1_1": 8.0, "node_1_2": 1.0, "node_1_3": 10.0, "node_1_4": 0.0, "node_1_5": 0.0}
    assert payload["ranking"] == ["node_1_3", "node_1_1", "node_1_2", "node_1_4", "node_1_5"]
    assert payload["pruning_suggestions"] == ["node_1_2", "node_1_4", "node_1_5"]
    solved = {e["node_id"]: e["metadata"]["solved"] for e in payload["evaluations"]}
    assert solved == {"node_1_1": False, "node_1_2": False, "node_1_3": True, "node_1_4": False, "node_1_5": False}
    wrong = payload["evaluations"][3]
    assert wrong["dimension_scores"]["correctness"] == 0.0 and "is 4, not 5" in wrong["reasoning"]


def path(*steps):
    nodes = [node("4 9 10 13", node_id="root", depth=0)]
    for depth, step in enumerate(steps, 1):
        nodes.append(node(f"{step} (left: …)", {"step": step}, node_id=f"node_{depth}_1", depth=depth))
    return nodes


def synthesize(*steps):
    reply = builtin_synthesizer(request("synthesize_solution", {
        "best_path": path(*steps), "problem": "4 9 10 13", "task_type": "math_reasoning"}, to="synthesizer"))
    return check_reply(reply, "final_solution", from_="synthesizer")


def test_it_writes_the_path_as_one_verified_expression():
    solution = synthesize("13 - 9 = 4", "10 - 4 = 6", "6 × 4 = 24")
    assert solution["answer"] == "(10 - (13 - 9)) × 4 = 24"
    assert solution["verification"] == {"is_valid": True, "validation_errors": []}
    assert solution["confidence"] == 1.0 and len(solution["reasoning_trace"]) == 3


@pytest.mark.parametrize("steps, said", [
    (("13 - 9 = 4", "10 - 4 = 6", "6 + 4 = 10"), "makes 10, not 24"),
    (("13 - 9 = 4", "10 - 4 = 6"), "leave 2 numbers"),
    (("13 - 9 = 4", "7 - 4 = 3", "3 × 8 = 24"), "7 is not among the numbers left"),
    (("13 - 9 = 5",), "is 4, not 5"),
])
def test_it_never_calls_a_wrong_path_valid(steps, said):
    solution = synthesize(*steps)
    assert solution["verification"]["is_valid"] is False and solution["confidence"] == 0.0
    assert said in " ".join(solution["verification"]["validation_errors"])


def test_it_writes_the_value_a_wrong_path_really_makes():
    assert synthesize("13 - 9 = 4", "10 - 4 = 6", "6 + 4 = 10")["answer"] == "(10 - (13 - 9)) + 4 = 10"


def test_it_rechecks_a_final_solution_whose_claim_is_not_to_be_trusted():
    claimed = {"answer": "4 × 6 = 24", "reasoning_trace": [], "confidence": 1.0, "verification": {"is_valid": True}}
    checked = check_final_solution(claimed, "4 9 10 13")
    assert checked["verification"]["is_valid"] is False
    assert "uses 6, which is not one of the numbers" in checked["verification"]["validation_errors"]
    assert claimed["verification"] == {"is_valid": True}, "the claim itself is left as it was"
