"""The agents' messages: the seed's base structure and every reply type's payload."""
import copy

import pytest

from engine.tot import ToTError, check_message, check_reply, make_message

# The seed's own examples (tot-protocol.zh.md), as the payloads of their replies.
SEED_REPLIES = {
    "decomposition_result": {
        "thought_granularity": "single_equation",
        "intermediate_steps": ["Step 1: 选择两个数字进行运算", "Step 2: 用结果与第三个数字运算", "Step 3: 得到目标数字24"],
        "depth_estimate": 3,
        "constraints": ["必须使用所有数字各一次", "只能用+-×÷"],
        "success_criteria": "最终结果等于24",
    },
    "generated_thoughts": {
        "candidates": [
            {"temp_id": "cand_1", "content": "13 - 9 = 4, 剩余: 4, 4, 10", "action_type": "subtraction"},
            {"temp_id": "cand_2", "content": "10 + 4 = 14, 剩余: 9, 13, 14", "action_type": "addition"},
        ],
    },
    "evaluation_results": {
        "evaluations": [{"node_id": "node_1_1", "score": 7.5, "confidence": 0.8,
                         "reasoning": "产生了4的倍数，剩余数字可组合成24",
                         "dimension_scores": {"correctness": 10, "progress": 5}}],
        "ranking": ["node_1_1", "node_1_2"],
        "pruning_suggestions": [],
    },
    "final_solution": {
        "answer": "(10 - (13 - 9)) × 4 = 24",
        "reasoning_trace": ["步骤1: 用13减9得到4", "步骤2: 用10减去上一步的4得到6", "步骤3: 用6乘以剩余的4得到24"],
        "confidence": 1.0,
        "verification": {"is_valid": True},
    },
}
REPLIERS = {"decomposition_result": "decomposer", "generated_thoughts": "generator",
            "evaluation_results": "evaluator", "final_solution": "synthesizer"}


def reply(type, payload=None, **fields):
    payload = copy.deepcopy(SEED_REPLIES[type]) if payload is None else payload
    return {**make_message(REPLIERS[type], "explorer", type, payload, "t-1"), **fields}


def test_it_builds_the_seed_base_structure():
    assert make_message("explorer", "generator", "generate_thoughts", {"k": 1}, "t-1") == {
        "from": "explorer", "to": "generator", "type": "generate_thoughts", "payload": {"k": 1}, "task_id": "t-1"}
    failed = make_message("generator", "explorer", "generated_thoughts", {}, "t-1",
                          error=ToTError("GENERATION_FAILED", "nothing", recoverable=True))
    assert failed["error"] == {"code": "GENERATION_FAILED", "message": "nothing", "recoverable": True}
    with pytest.raises(ValueError, match="unknown role 'judge'"):
        make_message("judge", "explorer", "x", {}, "t-1")


def test_it_knows_only_the_seed_error_codes():
    assert ToTError("SEARCH_EXHAUSTED", "done").as_dict() == {"code": "SEARCH_EXHAUSTED", "message": "done",
                                                              "recoverable": False}
    with pytest.raises(ValueError, match="unknown Tree-of-Thoughts error code"):
        ToTError("OOPS", "x")


@pytest.mark.parametrize("type", list(SEED_REPLIES))
def test_it_accepts_the_seed_examples(type):
    assert check_reply(reply(type), type, from_=REPLIERS[type], to="explorer", task_id="t-1") == SEED_REPLIES[type]


def malformed(type, change):
    payload = copy.deepcopy(SEED_REPLIES[type])
    change(payload)
    return reply(type, payload)


@pytest.mark.parametrize("type, change, named", [
    ("decomposition_result", lambda p: p.pop("depth_estimate"), "payload.depth_estimate: is required"),
    ("decomposition_result", lambda p: p.update(depth_estimate=0), "payload.depth_estimate: must be"),
    ("decomposition_result", lambda p: p.update(depth_estimate=2.5), "payload.depth_estimate: expected an integer"),
    ("decomposition_result", lambda p: p.update(constraints="all"), "payload.constraints: expected a list"),
    ("decomposition_result", lambda p: p["intermediate_steps"].append(3), "payload.intermediate_steps[3]"),
    ("decomposition_result", lambda p: p.update(thought_granularity=""), "payload.thought_granularity"),
    ("decomposition_result", lambda p: p.pop("success_criteria"), "payload.success_criteria: is required"),
    ("generated_thoughts", lambda p: p.pop("candidates"), "payload.candidates: is required"),
    ("generated_thoughts", lambda p: p["candidates"][1].pop("content"), "payload.candidates[1].content"),
    ("generated_thoughts", lambda p: p["candidates"][0].update(content="  "), "payload.candidates[0].content"),
    ("generated_thoughts", lambda p: p["candidates"][0].pop("temp_id"), "payload.candidates[0].temp_id"),
    ("generated_thoughts", lambda p: p["candidates"][0].update(metadata=[]), "payload.candidates[0].metadata"),
    ("generated_thoughts", lambda p: p["candidates"][0].update(action_type=5), "payload.candidates[0].action_type"),
    ("generated_thoughts", lambda p: p["candidates"].append("13 - 9"), "payload.candidates[2]: expected an object"),
    ("evaluation_results", lambda p: p["evaluations"][0].update(score=11), "payload.evaluations[0].score: must be"),
    ("evaluation_results", lambda p: p["evaluations"][0].update(score="7"), "payload.evaluations[0].score"),
    ("evaluation_results", lambda p: p["evaluations"][0].update(score=float("nan")), "payload.evaluations[0].score"),
    ("evaluation_results", lambda p: p["evaluations"][0].update(score=True), "payload.evaluations[0].score"),
    ("evaluation_results", lambda p: p["evaluations"][0].update(confidence=1.5), "payload.evaluations[0].confidence"),
    ("evaluation_results", lambda p: p["evaluations"][0].pop("node_id"), "payload.evaluations[0].node_id"),
    ("evaluation_results", lambda p: p["evaluations"][0].pop("reasoning"), "payload.evaluations[0].reasoning"),
    ("evaluation_results", lambda p: p["evaluations"][0]["dimension_scores"].update(progress="high"),
     "payload.evaluations[0].dimension_scores.progress"),
    ("evaluation_results", lambda p: p["evaluations"][0].update(metadata={"solved": "yes"}),
     "payload.evaluations[0].metadata.solved"),
    ("evaluation_results", lambda p: p.update(ranking="node_1_1"), "payload.ranking: expected a list"),
    ("evaluation_results", lambda p: p.pop("pruning_suggestions"), "payload.pruning_suggestions: is required"),
    ("final_solution", lambda p: p.update(answer=""), "payload.answer"),
    ("final_solution", lambda p: p.update(confidence=2), "payload.confidence: must be"),
    ("final_solution", lambda p: p.pop("verification"), "payload.verification: is required"),
    ("final_solution", lambda p: p["verification"].update(is_valid="true"), "payload.verification.is_valid"),
    ("final_solution", lambda p: p["verification"].update(validation_errors=[1]),
     "payload.verification.validation_errors[0]"),
    ("final_solution", lambda p: p.update(alternative_solutions="none"), "payload.alternative_solutions"),
    ("final_solution", lambda p: p.update(reasoning_trace=None), "payload.reasoning_trace"),
])
def test_it_refuses_a_malformed_reply_naming_the_field(type, change, named):
    with pytest.raises(ToTError) as caught:
        check_reply(malformed(type, change), type)
    assert caught.value.code == "INVALID_FORMAT"
    assert caught.value.message.startswith(named), caught.value.message


@pytest.mark.parametrize("message, expected, named", [
    ("not a message", "final_solution", "message: expected an object"),
    (reply("final_solution"), "generated_thoughts", "type: expected 'generated_thoughts'"),
    ({**reply("final_solution"), "from": "oracle"}, "final_solution", "from: expected one of"),
    ({**reply("final_solution"), "type": "chat"}, None, "type: unknown message type"),
    ({k: v for k, v in reply("final_solution").items() if k != "payload"}, "final_solution", "payload: is required"),
    ({k: v for k, v in reply("final_solution").items() if k != "task_id"}, "final_solution", "task_id: is required"),
    ({**reply("final_solution"), "payload": []}, "final_solution", "payload: expected an object"),
    ({**reply("final_solution"), "error": {"code": "OOPS", "message": "", "recoverable": False}}, "final_solution",
     "error.code"),
])
def test_it_refuses_a_message_that_breaks_the_base_structure(message, expected, named):
    with pytest.raises(ToTError) as caught:
        if expected is None:
            check_message(message)
        else:
            check_reply(message, expected)
    assert caught.value.code == "INVALID_FORMAT" and caught.value.message.startswith(named), caught.value.message


@pytest.mark.parametrize("key, value", [("from", "generator"), ("to", "orchestrator"), ("task_id", "t-2")])
def test_it_refuses_a_reply_from_the_wrong_role_or_task(key, value):
    with pytest.raises(ToTError, match=f"^{key}: expected"):
        check_reply({**reply("final_solution"), key: value}, "final_solution", from_="synthesizer", to="explorer",
                    task_id="t-1")


def test_it_raises_the_error_a_reply_carries():
    failed = reply("generated_thoughts", {}, error={"code": "GENERATION_FAILED", "message": "model refused",
                                                    "recoverable": True})
    with pytest.raises(ToTError) as caught:
        check_reply(failed, "generated_thoughts")
    assert (caught.value.code, caught.value.message, caught.value.recoverable) == (
        "GENERATION_FAILED", "model refused", True)


def test_it_checks_requests_too():
    node = {"id": "root", "parent_id": None, "children_ids": [], "depth": 0, "content": "4 9 10 13",
            "action_type": "root", "evaluation": None, "status": "pending", "metadata": {}}
    request = make_message("explorer", "generator", "generate_thoughts", {
        "parent_node": node, "generation_strategy": "sequential_proposal", "num_candidates": 5,
        "context": {"problem": "4 9 10 13", "goal": "24", "constraints": []}}, "t-1")
    assert check_message(request)["num_candidates"] == 5
    request["payload"]["generation_strategy"] = "beam"
    with pytest.raises(ToTError, match="^payload.generation_strategy: expected one of"):
        check_message(request)
    request["payload"]["generation_strategy"] = "sequential_proposal"
    request["payload"]["parent_node"]["status"] = "open"
    with pytest.raises(ToTError, match="^payload.parent_node.status"):
        check_message(request)
