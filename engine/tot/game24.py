"""The Game of 24 (tot-protocol "使用示例"): exact arithmetic and the builtin roles.

Every value is a `fractions.Fraction`: 8 ÷ 3 is 8/3, never 2.666…, so 8 ÷ (3 - 8 ÷ 3)
is exactly 24. A state is the list of numbers still to use; a step takes two of them
and puts back "a op b".

The builtin roles behave like the ToT paper's prompts, deterministically:
- the decomposer returns the seed's decomposition (one equation per step);
- the generator proposes steps like the paper's "propose" prompt
  ("13 - 9 = 4 (left: 4 4 10)");
- the evaluator judges states like the paper's "value" prompt — sure / likely /
  impossible — exactly for one or two numbers, and by a heuristic for three or more
  (a few quick tries and a bound, not a search: see `judge`), so a benchmark measures
  the search rather than an oracle;
- the synthesizer replays the path's steps into one expression and checks it with
  `verify`.
"""
from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from fractions import Fraction
from functools import lru_cache
from typing import Any

from .errors import INVALID_FORMAT, ToTError
from .messages import make_message

TARGET = Fraction(24)
ACTIONS = {"+": "addition", "-": "subtraction", "×": "multiplication", "÷": "division"}
OPERATORS = {"+": "+", "-": "-", "−": "-", "*": "×", "x": "×", "×": "×", "/": "÷", "÷": "÷"}
MAX_EXPRESSION = 500
MAX_NESTING = 50


# ---------------------------------------------------------------- numbers and steps

def show(value: Fraction) -> str:
    """8/3 for a fraction, 4 for a whole number."""
    return str(value)


def apply(a: Fraction, op: str, b: Fraction) -> Fraction:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "×":
        return a * b
    if b == 0:
        raise ZeroDivisionError(f"{show(a)} ÷ 0")
    return a / b


def parse_numbers(problem: str) -> list[Fraction]:
    """The numbers of a puzzle written "4 9 10 13" (spaces, commas or 、 between them)."""
    parts = [part for part in re.split(r"[\s,，、]+", problem.strip()) if part]
    if len(parts) < 2 or not all(re.fullmatch(r"[0-9]+", part) for part in parts):
        raise ValueError(f"expected whole numbers separated by spaces, like '4 9 10 13'; got {problem!r}")
    return [Fraction(int(part)) for part in parts]


def as_numbers(numbers: Iterable[Any] | str) -> list[Fraction]:
    if isinstance(numbers, str):
        return parse_numbers(numbers)
    return [Fraction(number) for number in numbers]


_NUMBER = r"-?[0-9]+(?:/[0-9]+)?"
_STEP = re.compile(rf"^\s*({_NUMBER})\s*([-+*/x×÷−])\s*({_NUMBER})\s*=\s*({_NUMBER})")
_LEFT = re.compile(r"\(\s*left\s*:\s*([^)]*)\)")


def parse_step(text: str) -> tuple[Fraction, str, Fraction, Fraction]:
    """(a, op, b, result) of a step written "13 - 9 = 4" (op normalised to + - × ÷);
    ValueError when the text is not a step or its arithmetic is wrong."""
    match = _STEP.match(text)
    if match is None:
        raise ValueError(f"not a step like '13 - 9 = 4': {text!r}")
    try:
        a, op, b, claimed = Fraction(match[1]), OPERATORS[match[2]], Fraction(match[3]), Fraction(match[4])
        result = apply(a, op, b)
    except ZeroDivisionError:
        raise ValueError(f"division by zero in {text!r}") from None
    if result != claimed:
        raise ValueError(f"{show(a)} {op} {show(b)} is {show(result)}, not {show(claimed)}")
    return a, op, b, result


def take_step(state: list[Fraction], text: str) -> list[Fraction]:
    """The state after the step `text` (its operands must be in `state`); ValueError otherwise."""
    a, _, b, result = parse_step(text)
    left = list(state)
    for operand in (a, b):
        if operand not in left:
            raise ValueError(f"{show(operand)} is not among the numbers left ({' '.join(map(show, state))})")
        left.remove(operand)
    return sorted(left + [result])


def state_of(node: dict[str, Any], problem: str = "") -> list[Fraction]:
    """The numbers left at a node: its metadata "left", else the "(left: …)" of its content,
    else (the root) the puzzle's numbers."""
    left = (node.get("metadata") or {}).get("left")
    if left is None:
        match = _LEFT.search(node.get("content", ""))
        if not match:
            return parse_numbers(node.get("content") or problem)
        left = match[1].replace(",", " ").split()
    try:
        return [Fraction(value) for value in left]
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError(f"the numbers left are not numbers: {left!r}") from None


def proposals(state: list[Fraction]) -> list[dict[str, Any]]:
    """Every distinct next step from `state`, in the order the builtin proposer offers them.

    Like the paper's proposer (which writes "larger - smaller"), it never proposes a
    negative number or a division by zero. Two steps that leave the same numbers are one
    proposal. The order is the proposer's taste:
    1. a step that finishes — it leaves 24, or two numbers that make 24 in one operation
       (what a person sees at a glance; nothing deeper is looked at);
    2. then the other steps, results up to 24 before larger ones, the pairs of larger
       numbers first, and + - × ÷ — every third of them a step whose result is a
       fraction (while there are any), so that a few proposals hold fractional steps too:
       3 3 8 8 needs 8 ÷ 3 = 8/3 first.
    """
    finishing, whole, fractional = [], [], []
    for step, left in sorted(_steps(state), key=lambda pair: pair[0][3] > TARGET):  # stable
        a, op, b, result = step
        text = f"{show(a)} {op} {show(b)} = {show(result)}"
        proposal = {"content": f"{text} (left: {' '.join(map(show, left))})", "action_type": ACTIONS[op],
                    "metadata": {"left": [show(value) for value in left], "step": text}}
        if _at_a_glance(left):
            finishing.append(proposal)
        elif result.denominator == 1:
            whole.append(proposal)
        else:
            fractional.append(proposal)
    return finishing + _every_third(whole, fractional)


def _steps(state: list[Fraction]) -> list[tuple[tuple[Fraction, str, Fraction, Fraction], list[Fraction]]]:
    """((a, op, b, result), the numbers left) of each distinct step, the pairs of larger
    numbers first; each step leaves numbers no earlier step left."""
    seen = set()
    found = []
    ordered = sorted(state, reverse=True)
    for i, j in itertools.combinations(range(len(ordered)), 2):
        a, b = ordered[i], ordered[j]  # a >= b
        rest = ordered[:i] + ordered[i + 1:j] + ordered[j + 1:]
        for op, x, y in (("+", a, b), ("-", a, b), ("×", a, b), ("÷", a, b), ("÷", b, a)):
            if y == 0:
                continue
            result = apply(x, op, y)
            left = sorted(rest + [result])
            if tuple(left) not in seen:
                seen.add(tuple(left))
                found.append(((x, op, y, result), left))
    return found


def _at_a_glance(left: list[Fraction]) -> bool:
    """Whether the numbers left are 24, or two numbers one operation makes 24 of."""
    if len(left) == 1:
        return left[0] == TARGET
    return len(left) == 2 and judge(left)["judgement"] == "sure"


def _every_third(whole: list[dict[str, Any]], fractional: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The whole-number steps with a fractional one in every third place, the rest after."""
    merged = []
    whole_left, fractional_left = iter(whole), iter(fractional)
    for place in itertools.count(1):
        pick = next(fractional_left, None) if place % 3 == 0 else next(whole_left, None)
        if pick is None:
            break
        merged.append(pick)
    return merged + list(whole_left) + list(fractional_left)


# ---------------------------------------------------------------- solving and verifying

def _splits(values: tuple[Fraction, ...]) -> Iterator[tuple[tuple[Fraction, ...], tuple[Fraction, ...]]]:
    """Every way to cut a multiset into two non-empty parts, each once."""
    n = len(values)
    seen = set()
    for mask in range(1, (1 << n) - 1):
        left = tuple(values[i] for i in range(n) if mask >> i & 1)
        right = tuple(values[i] for i in range(n) if not mask >> i & 1)
        key = (left, right) if left <= right else (right, left)
        if key not in seen:
            seen.add(key)
            yield key


def _wrap(text: str) -> str:
    return text if re.fullmatch(r"[0-9]+", text) else f"({text})"


@lru_cache(maxsize=4096)
def _reach(values: tuple[Fraction, ...]) -> dict[Fraction, str]:
    """Every value the numbers (sorted) can make, each with one expression making it."""
    if len(values) == 1:
        return {values[0]: show(values[0])}
    made: dict[Fraction, str] = {}
    for left, right in _splits(values):
        for a, ea in _reach(left).items():
            for b, eb in _reach(right).items():
                wa, wb = _wrap(ea), _wrap(eb)
                made.setdefault(a + b, f"{wa} + {wb}")
                made.setdefault(a * b, f"{wa} × {wb}")
                made.setdefault(a - b, f"{wa} - {wb}")
                made.setdefault(b - a, f"{wb} - {wa}")
                if b:
                    made.setdefault(a / b, f"{wa} ÷ {wb}")
                if a:
                    made.setdefault(b / a, f"{wb} ÷ {wa}")
    return made


def solve(numbers: Iterable[Any] | str) -> str | None:
    """An expression using each number once that makes exactly 24, or None: brute force
    over every way of cutting the numbers in two, asking of each half-value `a` which
    value `x` of the other half would finish the job (24 - a, 24 ÷ a, a - 24, …)."""
    values = tuple(sorted(as_numbers(numbers)))
    if len(values) == 1:
        return show(values[0]) if values[0] == TARGET else None
    for left, right in _splits(values):
        others = _reach(right)
        for a, ea in _reach(left).items():
            wa = _wrap(ea)
            wanted = [(TARGET - a, "{a} + {x}"), (a - TARGET, "{a} - {x}"), (TARGET + a, "{x} - {a}")]
            if a:
                wanted += [(TARGET / a, "{a} × {x}"), (a / TARGET, "{a} ÷ {x}"), (TARGET * a, "{x} ÷ {a}")]
            for x, form in wanted:
                if x in others:
                    return form.format(a=wa, x=_wrap(others[x]))
    return None


class _Parser:
    """expression := term (("+" | "-") term)*;  term := factor (("×" | "÷") factor)*;
    factor := whole number | "(" expression ")". No unary minus, no eval."""

    TOKEN = re.compile(r"\s*(?:([0-9]+)|([-+*/x×÷−])|([()])|(\S))")

    def __init__(self, text: str):
        self.tokens: list[tuple[str, Any]] = []
        for match in self.TOKEN.finditer(text):
            if match[4] is not None:
                raise ValueError(f"unexpected {match[4]!r} at position {match.start(4) + 1}")
            if match[1] is not None:
                self.tokens.append(("number", Fraction(int(match[1]))))
            elif match[2] is not None:
                self.tokens.append(("op", OPERATORS[match[2]]))
            elif match[3] is not None:
                self.tokens.append((match[3], match[3]))
        self.position = 0
        self.nesting = 0
        self.used: list[Fraction] = []

    def peek(self) -> tuple[str, Any] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def parse(self) -> Fraction:
        if not self.tokens:
            raise ValueError("the expression is empty")
        value = self.expression()
        if (extra := self.peek()) is not None:
            raise ValueError(f"unexpected {extra[1]!s} after a complete expression")
        return value

    def expression(self) -> Fraction:
        value = self.term()
        while (token := self.peek()) and token[0] == "op" and token[1] in "+-":
            self.position += 1
            value = apply(value, token[1], self.term())
        return value

    def term(self) -> Fraction:
        value = self.factor()
        while (token := self.peek()) and token[0] == "op" and token[1] in "×÷":
            self.position += 1
            right = self.factor()
            if token[1] == "÷" and right == 0:
                raise ValueError("division by zero")
            value = apply(value, token[1], right)
        return value

    def factor(self) -> Fraction:
        token = self.peek()
        if token is None:
            raise ValueError("the expression ends where a number was expected")
        self.position += 1
        if token[0] == "number":
            number: Fraction = token[1]
            self.used.append(number)
            return number
        if token[0] == "(":
            self.nesting += 1
            if self.nesting > MAX_NESTING:
                raise ValueError(f"more than {MAX_NESTING} nested parentheses")
            value = self.expression()
            if (closing := self.peek()) is None or closing[0] != ")":
                raise ValueError("a parenthesis is not closed")
            self.position += 1
            self.nesting -= 1
            return value
        if token[0] == "op" and token[1] == "-":
            raise ValueError("a unary minus is not allowed: only the four operations between the numbers")
        raise ValueError(f"unexpected {token[1]!s} where a number was expected")


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def verify(expression: str, numbers: Iterable[Any] | str) -> list[str]:
    """What is wrong with `expression` as an answer for `numbers` (empty: it is right).

    The expression (optionally followed by "= 24") is parsed, never evaluated by Python:
    operators + - − × x * ÷ / and parentheses; each given number must be used exactly
    once; the value, computed exactly with fractions, must be 24.
    """
    given = Counter(as_numbers(numbers))
    if not isinstance(expression, str):
        return [f"the answer must be text, got {type(expression).__name__}"]
    if len(expression) > MAX_EXPRESSION:
        return [f"the expression is longer than {MAX_EXPRESSION} characters"]
    left, equals, right = expression.partition("=")
    if equals:
        if "=" in right:
            return ["more than one '='"]
        if right.strip() != "24":
            return [f"the right-hand side must be 24, got {right.strip()!r}"]
    try:
        parser = _Parser(left)
        value = parser.parse()
    except (ValueError, ZeroDivisionError) as error:
        return [f"cannot read the expression: {error}"]
    errors = []
    used = Counter(parser.used)
    for number in sorted(set(used) | set(given)):
        if used[number] == given[number]:
            continue
        if given[number] == 0:
            errors.append(f"uses {show(number)}, which is not one of the numbers")
        elif used[number] == 0:
            errors.append(f"does not use {show(number)}")
        else:
            errors.append(f"uses {show(number)} {_times(used[number])} but it is given {_times(given[number])}")
    if value != TARGET:
        errors.append(f"makes {show(value)}, not 24")
    return errors


# ---------------------------------------------------------------- the evaluator's judgement

def _quick_tries(state: list[Fraction]) -> dict[Fraction, str]:
    """What a person tries first (the paper's value prompt does the same): with three
    numbers a+b+c, a×b×c, a×b+c, a×b-c, (a+b)×c, (a-b)×c in every order; with more, the
    sum and the product. No division, no search."""
    tries: dict[Fraction, str] = {}
    if len(state) != 3:
        total, product = sum(state, Fraction(0)), Fraction(1)
        for value in state:
            product *= value
        return {total: " + ".join(map(show, state)), product: " × ".join(map(show, state))}
    for a, b, c in itertools.permutations(state):
        sa, sb, sc = show(a), show(b), show(c)
        tries.setdefault(a + b + c, f"{sa} + {sb} + {sc}")
        tries.setdefault(a * b * c, f"{sa} × {sb} × {sc}")
        tries.setdefault(a * b + c, f"{sa} × {sb} + {sc}")
        tries.setdefault(a * b - c, f"{sa} × {sb} - {sc}")
        tries.setdefault((a + b) * c, f"({sa} + {sb}) × {sc}")
        tries.setdefault((a - b) * c, f"({sa} - {sb}) × {sc}")
    return tries


def judge(state: list[Fraction]) -> dict[str, Any]:
    """The evaluator's verdict on a state: judgement, score (0-10), confidence, reasoning.

    1. One number: exact — 24 is solved (10), anything else impossible (0).
    2. Two numbers: exact — sure (9) if one operation makes 24, else impossible (0).
    3. Three or more: a heuristic, like the paper's value prompt:
       - sure (8) if one of the quick tries makes 24;
       - impossible (1) if there are three whole numbers and even the largest quick try
         is below 24 (with whole numbers, + and × make the largest values, and the
         quick tries hold every way of combining three with + and ×);
       - otherwise likely: 4 to 7 by how close the nearest quick try comes to 24, one
         less when a fraction is left (fractions are hard to finish with).
       It can be wrong: "likely" states may be dead ends, and tries with division are
       never made.
    """
    numbers = " ".join(map(show, state))
    if len(state) == 1:
        if state[0] == TARGET:
            return {"judgement": "sure", "score": 10.0, "confidence": 1.0, "reasoning": "24 reached"}
        return {"judgement": "impossible", "score": 0.0, "confidence": 1.0,
                "reasoning": f"{numbers} is not 24"}
    if len(state) == 2:
        a, b = state
        for x, op, y in ((a, "+", b), (a, "×", b), (a, "-", b), (b, "-", a), (a, "÷", b), (b, "÷", a)):
            if (op != "÷" or y != 0) and apply(x, op, y) == TARGET:
                return {"judgement": "sure", "score": 9.0, "confidence": 1.0,
                        "reasoning": f"{show(x)} {op} {show(y)} = 24"}
        return {"judgement": "impossible", "score": 0.0, "confidence": 1.0,
                "reasoning": f"no operation on {numbers} makes 24"}
    tries = _quick_tries(state)
    if TARGET in tries:
        return {"judgement": "sure", "score": 8.0, "confidence": 0.9, "reasoning": f"{tries[TARGET]} = 24"}
    whole = all(value.denominator == 1 and value >= 1 for value in state)
    largest = max(tries)
    if whole and len(state) == 3 and largest < TARGET:
        return {"judgement": "impossible", "score": 1.0, "confidence": 0.8,
                "reasoning": f"{numbers} are all too small: at most {show(largest)}"}
    nearest = min(tries, key=lambda value: (abs(value - TARGET), value))
    score = 7.0 - min(3.0, float(abs(nearest - TARGET)) / 3.0) - (0.0 if whole else 1.0)
    return {"judgement": "likely", "score": round(max(score, 3.0), 1), "confidence": 0.5,
            "reasoning": f"{tries[nearest]} = {show(nearest)}; within reach of 24"}


# ---------------------------------------------------------------- the builtin roles

def _reply(request: dict[str, Any], role: str, type: str, payload: dict[str, Any]) -> dict[str, Any]:
    return make_message(role, request["from"], type, payload, request["task_id"])


def _numbers_of(problem: str) -> list[Fraction]:
    try:
        return parse_numbers(problem)
    except ValueError as error:
        raise ToTError(INVALID_FORMAT, f"payload.problem: {error}") from None


def builtin_decomposer(request: dict[str, Any]) -> dict[str, Any]:
    """The seed's example decomposition: one equation per step, depth = numbers - 1."""
    numbers = _numbers_of(request["payload"]["problem"])
    steps = [f"Step {n}: combine two of the numbers with + - × ÷" if n == 1 else
             f"Step {n}: combine the result with another number" for n in range(1, len(numbers) - 1)]
    steps.append(f"Step {len(numbers) - 1}: reach the target number 24")
    return _reply(request, "decomposer", "decomposition_result", {
        "thought_granularity": "equation",
        "intermediate_steps": steps,
        "depth_estimate": len(numbers) - 1,
        "constraints": ["use every number exactly once", "only + - × ÷"],
        "success_criteria": "the final result equals 24",
    })


def builtin_generator(request: dict[str, Any]) -> dict[str, Any]:
    """Proposals from the parent's state: the first `num_candidates` of `proposals` for a
    sequential_proposal; for an independent_sampling call, the proposal at its
    `sample_index`, so k calls give k different proposals (as many as there are)."""
    payload = request["payload"]
    state = state_of(payload["parent_node"], payload["context"]["problem"])
    offered = proposals(state)
    if payload["generation_strategy"] == "independent_sampling" and offered:
        offered = [offered[payload.get("sample_index", 0) % len(offered)]]
    else:
        offered = offered[: payload["num_candidates"]]
    candidates = [{"temp_id": f"cand_{n}", **proposal} for n, proposal in enumerate(offered, 1)]
    return _reply(request, "generator", "generated_thoughts", {"candidates": candidates})


def builtin_evaluator(request: dict[str, Any]) -> dict[str, Any]:
    """Each candidate's state judged by `judge`; the impossible ones are suggested for pruning.
    A step whose arithmetic is wrong (possible when a model wrote it) scores 0."""
    payload = request["payload"]
    problem, max_depth = payload["context"]["problem"], payload["context"]["max_depth"]
    evaluations = []
    for node in payload["candidates"]:
        step = (node.get("metadata") or {}).get("step")
        try:
            if step is not None:
                parse_step(step)
            state = state_of(node, problem)
        except ValueError as error:
            verdict = {"judgement": "impossible", "score": 0.0, "confidence": 1.0, "reasoning": str(error)}
            correct, state = False, []
        else:
            verdict, correct = judge(state), True
        progress = min(10.0, 10.0 * node["depth"] / max_depth) if correct and max_depth else 0.0
        evaluations.append({
            "node_id": node["id"],
            "score": verdict["score"],
            "confidence": verdict["confidence"],
            "reasoning": f"{verdict['judgement']}: {verdict['reasoning']}",
            "dimension_scores": {"correctness": 10.0 if correct else 0.0, "progress": round(progress, 1),
                                 "feasibility": verdict["score"]},
            "metadata": {"judgement": verdict["judgement"], "solved": state == [TARGET]},
        })
    ranking = [entry["node_id"] for entry in sorted(evaluations, key=lambda entry: -entry["score"])]
    prune = [entry["node_id"] for entry in evaluations if entry["metadata"]["judgement"] == "impossible"]
    return _reply(request, "evaluator", "evaluation_results",
                  {"evaluations": evaluations, "ranking": ranking, "pruning_suggestions": prune})


def replay(numbers: list[Fraction], steps: list[str]) -> tuple[str, Fraction | None, list[str]]:
    """The one expression a path's steps build, its value, and what went wrong replaying them."""
    pool: list[tuple[Fraction, str]] = [(value, show(value)) for value in numbers]
    for n, text in enumerate(steps, 1):
        try:
            a, op, b, result = parse_step(text)
        except ValueError as error:
            return "", None, [f"step {n}: {error}"]
        operands = []
        for operand in (a, b):
            # The newest number of that value: "10 - 4" after "13 - 9 = 4" means that 4.
            index = next((i for i in reversed(range(len(pool))) if pool[i][0] == operand), None)
            if index is None:
                return "", None, [f"step {n}: {show(operand)} is not among the numbers left"]
            operands.append(pool.pop(index)[1])
        pool.append((result, f"{_wrap(operands[0])} {op} {_wrap(operands[1])}"))
    if len(pool) != 1:
        return "", None, [f"the steps leave {len(pool)} numbers, not one"]
    return pool[0][1], pool[0][0], []


def builtin_synthesizer(request: dict[str, Any]) -> dict[str, Any]:
    """The path's steps replayed into one expression, checked by `verify`."""
    payload = request["payload"]
    numbers = _numbers_of(payload["problem"])
    path = payload["best_path"]
    steps = [(node.get("metadata") or {}).get("step") or node["content"].split("(left")[0] for node in path[1:]]
    expression, value, errors = replay(numbers, steps)
    answer = f"{expression} = {show(value)}" if expression and value is not None else "; ".join(steps) or "(no steps)"
    errors = errors or verify(expression, numbers)
    return _reply(request, "synthesizer", "final_solution", {
        "answer": answer,
        "reasoning_trace": [f"Step {n}: {node['content']}" for n, node in enumerate(path[1:], 1)],
        "confidence": 0.0 if errors else 1.0,
        "verification": {"is_valid": not errors, "validation_errors": errors},
        "alternative_solutions": [],
    })


def check_final_solution(payload: dict[str, Any], numbers: Iterable[Any] | str) -> dict[str, Any]:
    """A final_solution payload whose verification is recomputed by `verify` — for a
    synthesizer (a model) whose own claim of validity is not to be trusted."""
    errors = verify(payload.get("answer", ""), numbers)
    return {**payload, "verification": {"is_valid": not errors, "validation_errors": errors}}


def builtin_roles() -> dict[str, Any]:
    return {"decomposer": builtin_decomposer, "generator": builtin_generator,
            "evaluator": builtin_evaluator, "synthesizer": builtin_synthesizer}
