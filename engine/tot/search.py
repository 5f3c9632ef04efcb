"""The search (tot-protocol "搜索策略说明", "生成策略说明", "评估策略说明", "使用示例").

`run_tot` plays the orchestrator and the explorer; the decomposer, generator, evaluator
and synthesizer are callables `role(request message) -> reply message` — the builtin
Game-of-24 roles, or adapters that send the request to a model and parse its answer.
Every message sent and received is kept, in order, in the seed's base shape; whatever
goes wrong on the way is in the seed's `error` field of the message concerned.
"""
from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.errors import reraise_interrupt

from .errors import BUDGET_EXHAUSTED, EVALUATION_TIMEOUT, GENERATION_FAILED, INVALID_FORMAT, SEARCH_EXHAUSTED, ToTError
from .messages import EVALUATION_STRATEGIES, GENERATION_STRATEGIES, check_reply, make_message
from .tree import EXPANDED, PENDING, PRUNED, TERMINAL, ThoughtNode, ThoughtTree, plain

Role = Callable[[dict[str, Any]], dict[str, Any]]
ROLE_NAMES = ("decomposer", "generator", "evaluator", "synthesizer")
EVALUATION_CRITERIA = ["correctness", "progress", "feasibility"]


@dataclass(frozen=True)
class TaskDefaults:
    """One row of the seed's task-type table (任务类型映射)."""
    thought_granularity: str
    depth: tuple[int, int | None]  # the recommended depth; None: no bound (不定)
    strategy: str
    evaluation_strategy: str
    # Not a column of the table: "生成策略说明" gives sequential proposal to constrained
    # tasks (maths, logic) and independent sampling to open ones (writing, brainstorming).
    generation_strategy: str


TASK_TYPES = {
    "math_reasoning": TaskDefaults("equation", (3, 4), "BFS", "independent_scoring", "sequential_proposal"),
    "creative_writing": TaskDefaults("paragraph", (2, 3), "BFS", "comparative_voting", "independent_sampling"),
    "planning": TaskDefaults("action_step", (3, 5), "DFS", "independent_scoring", "sequential_proposal"),
    "debugging": TaskDefaults("hypothesis", (1, None), "DFS", "independent_scoring", "sequential_proposal"),
    "architecture_design": TaskDefaults("component", (2, 3), "BFS", "comparative_voting", "independent_sampling"),
}


@dataclass(frozen=True)
class SearchConfig:
    strategy: str = "BFS"
    # None: the decomposer's depth_estimate, kept within the task type's recommended depth.
    max_depth: int | None = None
    branching_factor: int = 5  # k: candidates asked per expansion (the seed's example: 5)
    breadth: int = 3  # b: nodes BFS keeps per level (the seed's example keeps the top 3)
    pruning_threshold: float = 3.0  # 0-10: a node scoring below is pruned
    generation_strategy: str = "sequential_proposal"
    evaluation_strategy: str = "independent_scoring"
    evaluation_timeout_s: float | None = None
    max_nodes: int = 1000  # a safety bound on the size of the tree

    def __post_init__(self) -> None:
        def bad(name: str, expected: str) -> ValueError:
            return ValueError(f"search_config.{name}: expected {expected}, got {getattr(self, name)!r}")

        def whole(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        if self.strategy not in ("BFS", "DFS"):
            raise bad("strategy", "BFS or DFS")
        if self.max_depth is not None and not (whole(self.max_depth) and self.max_depth >= 1):
            raise bad("max_depth", "a whole number of at least 1")
        for name in ("branching_factor", "breadth", "max_nodes"):
            if not (whole(getattr(self, name)) and getattr(self, name) >= 1):
                raise bad(name, "a whole number of at least 1")
        threshold = self.pruning_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 10:
            raise bad("pruning_threshold", "a number from 0 to 10")
        if self.generation_strategy not in GENERATION_STRATEGIES:
            raise bad("generation_strategy", " or ".join(GENERATION_STRATEGIES))
        if self.evaluation_strategy not in EVALUATION_STRATEGIES:
            raise bad("evaluation_strategy", " or ".join(EVALUATION_STRATEGIES))
        timeout = self.evaluation_timeout_s
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise bad("evaluation_timeout_s", "a positive number of seconds or null")

    @classmethod
    def for_task(cls, task_type: str, **overrides: Any) -> SearchConfig:
        """The seed's task-type table's defaults for `task_type`, with `overrides` on top."""
        if task_type not in TASK_TYPES:
            raise ValueError(f"unknown task type {task_type!r} (known: {', '.join(TASK_TYPES)})")
        unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown search setting(s): {', '.join(unknown)}")
        row = TASK_TYPES[task_type]
        defaults = {"strategy": row.strategy, "evaluation_strategy": row.evaluation_strategy,
                    "generation_strategy": row.generation_strategy}
        return cls(**{**defaults, **overrides})

    def with_depth(self, task_type: str, depth_estimate: int | None) -> SearchConfig:
        """This config with a max_depth: its own, else the decomposer's estimate kept within
        the task type's recommended depth (the lower end when there is no estimate)."""
        if self.max_depth is not None:
            return self
        low, high = TASK_TYPES[task_type].depth if task_type in TASK_TYPES else (1, None)
        depth = low if depth_estimate is None else max(low, depth_estimate)
        return dataclasses.replace(self, max_depth=depth if high is None else min(depth, high))

    def as_dict(self) -> dict[str, Any]:
        """The seed's search_config (its four fields first), with this engine's other settings."""
        names = ("strategy", "max_depth", "branching_factor", "pruning_threshold", "breadth",
                 "generation_strategy", "evaluation_strategy", "evaluation_timeout_s", "max_nodes")
        return {name: getattr(self, name) for name in names}


@dataclass
class ToTRun:
    tree: ThoughtTree
    messages: list[dict[str, Any]]
    final_solution: dict[str, Any] | None
    error: ToTError | None
    stats: dict[str, Any]  # the seed's: total_nodes, total_backtracks, llm_calls
    calls_by_role: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {
            "tree": self.tree.as_dict(),
            "messages": self.messages,
            "final_solution": self.final_solution,
            "error": None if self.error is None else self.error.as_dict(),
            "stats": dict(self.stats),
            "calls_by_role": dict(self.calls_by_role),
        }


def run_tot(*, problem: str, task_type: str, task_id: str, roles: dict[str, Role],
            config: SearchConfig | None = None, clock: Callable[[], float] = time.monotonic) -> ToTRun:
    """One whole Tree-of-Thoughts run (the seed's "完整流程"):

    1. orchestrator → decomposer: decompose_task; the decomposition_result fixes the depth
       (when the config does not) and gives the generator its goal and constraints.
    2. orchestrator → explorer: initialize_search (recorded: the explorer is this function).
    3. The explorer searches (BFS or DFS below), exchanging generate_thoughts /
       generated_thoughts with the generator and evaluate_thoughts / evaluation_results
       with the evaluator; it assigns the ids, statuses, scores, frontier and best path.
    4. explorer → synthesizer: synthesize_solution for each terminal node, best first,
       until one final_solution verifies; then for the other terminal nodes of the tree,
       whose verified answers are its alternative_solutions.
    5. explorer → orchestrator: search_complete (best path, tree, stats), then the
       final_solution — or no solution and the error that says why (`failure`).

    Never raises a ToTError: what went wrong is in the run (`error`, the messages and the
    nodes). An exception that is not part of the protocol (a bug in a role) propagates.
    """
    missing = [name for name in ROLE_NAMES if not callable(roles.get(name))]
    if missing:
        raise ValueError(f"roles: no callable for {', '.join(missing)}")
    config = config or SearchConfig.for_task(task_type)
    return _Explorer(problem, task_type, task_id, roles, config, clock).run()


class _Explorer:
    def __init__(self, problem: str, task_type: str, task_id: str, roles: dict[str, Role], config: SearchConfig,
                 clock: Callable[[], float]) -> None:
        self.problem, self.task_type, self.task_id = problem, task_type, task_id
        self.roles, self.config, self.clock = roles, config, clock
        self.messages: list[dict[str, Any]] = []
        self.calls: Counter[Any] = Counter()
        self.incidents: Counter[Any] = Counter()  # error codes met on the way
        self.backtracks = 0
        self.numbering: Counter[Any] = Counter()  # depth → nodes numbered so far
        self.rank: dict[str, int] = {}  # node id → its place in the evaluator's ranking
        self.suggested: set[str] = set()  # node ids the evaluator suggested pruning
        self.budget_spent = False
        self.solution: dict[str, Any] | None = None
        self.solution_node: ThoughtNode | None = None
        self.synthesized: set[str] = set()  # terminal nodes whose path went to the synthesizer
        # From the decomposition: the default action_type, and the generator's goal and constraints.
        self.granularity, self.goal = "", ""
        self.constraints: list[str] = []
        self.tree = ThoughtTree(task_id=task_id, problem=problem, task_type=task_type,
                                search_config=config.with_depth(task_type, None).as_dict(), root_id="root")
        self.tree.add(ThoughtNode(id="root", parent_id=None, depth=0, content=problem, action_type="root"))
        self.state = self.tree.search_state
        self.state.frontier = ["root"]
        self.state.best_path = ["root"]

    # ------------------------------------------------------------ the run

    def run(self) -> ToTRun:
        decomposition, error = self.ask("orchestrator", "decomposer", "decompose_task",
                                        {"problem": self.problem, "task_type": self.task_type},
                                        "decomposition_result")
        if error is not None:
            return self.result(ToTError(error.code, f"decomposition failed: {error.message}"))
        assert decomposition is not None  # ask gives a reply or an error
        self.config = self.config.with_depth(self.task_type, decomposition["depth_estimate"])
        self.tree.search_config = self.config.as_dict()
        self.granularity = decomposition["thought_granularity"]
        self.goal = decomposition["success_criteria"]
        self.constraints = list(decomposition["constraints"])
        self.record(make_message("orchestrator", "explorer", "initialize_search", {
            "problem": self.problem, "task_type": self.task_type, "search_config": self.config.as_dict(),
            "decomposition_result": plain(decomposition)}, self.task_id))
        if self.config.strategy == "BFS":
            self.bfs()
        else:
            self.dfs()
        return self.complete()

    def bfs(self) -> None:
        """BFS, keeping the b best nodes per level ("搜索策略说明"; "使用示例" steps 4-9).

        1. The frontier starts as the root.
        2. Each frontier node, best first, is expanded: its candidates are generated,
           evaluated and settled (pruned below the threshold, terminal when they end a
           path, pending otherwise).
        3. The level's terminal nodes go to the synthesizer, best first; the first
           verified solution ends the search.
        4. The b best pending nodes of the level are the next frontier; the others are
           pruned as "not among the b best".
        5. Repeat down to max_depth, or until the frontier is empty.
        """
        frontier = [self.tree.root]
        for depth in range(1, self.depth_limit() + 1):
            self.state.current_depth = depth
            level: list[ThoughtNode] = []
            for node in frontier:
                level += self.expand(node)
            ranked = self.best_first(level)
            unexpanded = [node for node in frontier if node.status == PENDING]
            if self.offer([node for node in ranked if node.status == TERMINAL]):
                frontier = unexpanded + [node for node in ranked if node.status == PENDING]
                break
            pending = [node for node in ranked if node.status == PENDING]
            for node in pending[self.config.breadth:]:
                self.prune(node, f"not among the {self.config.breadth} best of depth {depth}")
            frontier = unexpanded + pending[: self.config.breadth]
            self.state.frontier = [node.id for node in frontier]
            if self.budget_spent or not frontier:
                break
        self.state.frontier = [node.id for node in frontier if node.status == PENDING]

    def dfs(self) -> None:
        """DFS with backtracking ("搜索策略说明": one path to the end, back up when it fails).

        1. A stack (the frontier) holds the nodes still to try; it starts with the root.
        2. The top node is taken. A terminal node goes to the synthesizer: a verified
           solution ends the search.
        3. Any other node is expanded: its candidates are generated, evaluated and settled
           (pruned below the threshold); the survivors are pushed, the best on top.
        4. Taking a node that is not a child of the node expanded last is a backtrack
           (counted in total_backtracks): the branch below has failed.
        5. The search ends with a solution, an empty stack, or the node budget spent.
        """
        stack = [self.tree.root]
        last_expanded: ThoughtNode | None = None
        while stack:
            node = stack.pop()
            if last_expanded is not None and node.parent_id != last_expanded.id:
                self.backtracks += 1
            self.state.current_depth = node.depth
            if node.status == TERMINAL:
                if self.offer([node]):
                    break
                continue
            children = self.expand(node)
            if self.budget_spent and node.status == PENDING:
                stack.append(node)
                break
            last_expanded = node
            survivors = [child for child in self.best_first(children) if child.status in (PENDING, TERMINAL)]
            stack.extend(reversed(survivors))
            self.state.frontier = [node.id for node in reversed(stack)]
        self.state.frontier = [node.id for node in reversed(stack) if node.status == PENDING]

    # ------------------------------------------------------------ one expansion

    def expand(self, node: ThoughtNode) -> list[ThoughtNode]:
        """The node's new children, generated, evaluated and settled (the node is expanded)."""
        if len(self.tree.nodes) >= self.config.max_nodes:
            self.budget_spent = True
            return []
        node.mark(EXPANDED)
        candidates, error = self.generate(node)
        depth = node.depth + 1
        children = []
        for candidate in candidates:
            if len(self.tree.nodes) >= self.config.max_nodes:
                self.budget_spent = True
                break
            self.numbering[depth] += 1
            metadata = plain(candidate.get("metadata") or {})
            metadata["temp_id"] = candidate["temp_id"]
            children.append(self.tree.add(ThoughtNode(
                id=f"node_{depth}_{self.numbering[depth]}", parent_id=node.id, depth=depth,
                content=candidate["content"], action_type=candidate.get("action_type") or self.granularity,
                metadata=metadata)))
        if not children:
            if error is not None:
                node.metadata["error"] = error.as_dict()
            return []
        self.evaluate(children)
        for child in children:
            self.settle(child)
        return children

    def generate(self, node: ThoughtNode) -> tuple[list[dict[str, Any]], ToTError | None]:
        """independent_sampling: k calls of one candidate each (sample_index 0 … k-1);
        sequential_proposal: one call for k candidates ("生成策略说明"). A call that raises
        or gives no candidate is a GENERATION_FAILED on its reply; the explorer goes on
        with what the other calls gave. Candidates with the same content are one."""
        k = self.config.branching_factor
        base = {"parent_node": node.as_dict(), "generation_strategy": self.config.generation_strategy,
                "context": {"problem": self.problem, "goal": self.goal, "constraints": list(self.constraints)}}
        if self.config.generation_strategy == "sequential_proposal":
            asks = [({**base, "num_candidates": k}, k)]
        else:
            asks = [({**base, "num_candidates": 1, "sample_index": index}, 1) for index in range(k)]
        found: list[dict[str, Any]] = []
        seen: set[str] = set()
        error = None
        for payload, wanted in asks:
            reply, failure = self.ask("explorer", "generator", "generate_thoughts", payload, "generated_thoughts",
                                      failure=GENERATION_FAILED)
            if reply is not None and not reply["candidates"]:
                failure = ToTError(GENERATION_FAILED, f"the generator gave no candidate for {node.id}",
                                   recoverable=True)
                self.flag_last(failure)
            if failure is not None:
                error = failure
                continue
            assert reply is not None  # ask gives a reply or an error
            for candidate in reply["candidates"][:wanted]:
                if candidate["content"] not in seen:
                    seen.add(candidate["content"])
                    found.append(candidate)
        return found, error

    def evaluate(self, children: list[ThoughtNode]) -> None:
        """independent_scoring: one evaluator call per candidate; comparative_voting: one
        call for all of them ("评估策略说明"). A call slower than evaluation_timeout_s is an
        EVALUATION_TIMEOUT: its nodes get no score (and are pruned)."""
        if self.config.evaluation_strategy == "independent_scoring":
            batches = [[child] for child in children]
        else:
            batches = [children]
        context = {"problem": self.problem, "goal": self.goal, "current_depth": children[0].depth,
                   "max_depth": self.config.max_depth}
        for batch in batches:
            payload = {"candidates": [node.as_dict() for node in batch],
                       "evaluation_strategy": self.config.evaluation_strategy,
                       "evaluation_criteria": list(EVALUATION_CRITERIA), "context": dict(context)}
            reply, error = self.ask("explorer", "evaluator", "evaluate_thoughts", payload, "evaluation_results",
                                    timeout=self.config.evaluation_timeout_s)
            if reply is not None:  # ask gives a reply or an error
                error = self.take_evaluations(batch, reply)
            if error is not None:
                for node in batch:
                    node.metadata["error"] = error.as_dict()

    def take_evaluations(self, batch: list[ThoughtNode], reply: dict[str, Any]) -> ToTError | None:
        """Scores onto the nodes; an INVALID_FORMAT (on the reply) when the evaluations do
        not match the candidates asked about one for one."""
        asked = {node.id: node for node in batch}
        entries: dict[str, dict[str, Any]] = {}
        for index, entry in enumerate(reply["evaluations"]):
            if entry["node_id"] not in asked or entry["node_id"] in entries:
                problem = "is not one of the candidates" if entry["node_id"] not in asked else "is evaluated twice"
                return self.flag_last(ToTError(
                    INVALID_FORMAT, f"payload.evaluations[{index}].node_id: {entry['node_id']!r} {problem}",
                    recoverable=True))
            entries[entry["node_id"]] = entry
        for key in ("ranking", "pruning_suggestions"):
            for index, node_id in enumerate(reply[key]):
                if node_id not in asked:
                    return self.flag_last(ToTError(
                        INVALID_FORMAT, f"payload.{key}[{index}]: {node_id!r} is not one of the candidates",
                        recoverable=True))
        unscored = [node_id for node_id in asked if node_id not in entries]
        if unscored:
            return self.flag_last(ToTError(
                INVALID_FORMAT, f"payload.evaluations: no evaluation for {', '.join(unscored)}", recoverable=True))
        for node_id, entry in entries.items():
            node = asked[node_id]
            node.evaluation = {"score": entry["score"], "confidence": entry["confidence"],
                               "reasoning": entry["reasoning"]}
            node.metadata.update(plain(entry.get("metadata") or {}))
            if "dimension_scores" in entry:
                node.metadata["dimension_scores"] = dict(entry["dimension_scores"])
        for place, node_id in enumerate(reply["ranking"]):
            self.rank.setdefault(node_id, place)
        self.suggested.update(reply["pruning_suggestions"])
        return None

    def settle(self, node: ThoughtNode) -> None:
        """pruned (no score, below the threshold, or suggested by the evaluator), terminal (solved, or at
        max_depth without the evaluator saying it failed), or still pending."""
        solved = node.metadata.get("solved")
        score = node.score  # None: not evaluated
        if score is None:
            self.prune(node, "no evaluation")
        elif score < self.config.pruning_threshold:
            self.prune(node, f"score {score:g} is below the pruning threshold {self.config.pruning_threshold:g}")
        elif node.id in self.suggested:
            self.prune(node, "the evaluator suggested pruning it")
        elif solved is True:
            node.mark(TERMINAL)
        elif node.depth >= self.depth_limit():
            if solved is False:
                self.prune(node, "max_depth reached without meeting the success criterion")
            else:
                node.mark(TERMINAL)

    def prune(self, node: ThoughtNode, reason: str) -> None:
        node.mark(PRUNED)
        node.metadata["pruned_reason"] = reason

    def best_first(self, nodes: list[ThoughtNode]) -> list[ThoughtNode]:
        """Highest score first, then the evaluator's ranking, then the order of generation."""
        return sorted(nodes, key=lambda node: (-(node.score if node.score is not None else -1),
                                               self.rank.get(node.id, len(self.rank))))

    # ------------------------------------------------------------ synthesis

    def offer(self, terminals: list[ThoughtNode]) -> bool:
        """The terminal nodes to the synthesizer, in order, until one answer verifies.
        An answer whose verification fails is never the solution."""
        for node in terminals:
            reply = self.synthesize(node)
            if reply is not None:
                self.solution, self.solution_node = reply, node
                return True
        return False

    def synthesize(self, node: ThoughtNode) -> dict[str, Any] | None:
        """The synthesizer's final_solution for the path to `node` when its answer verifies,
        else None (why is on the node: the reply's error, or the validation errors)."""
        self.synthesized.add(node.id)
        path = self.tree.path_to(node.id)
        payload = {"best_path": [self.tree.nodes[node_id].as_dict() for node_id in path],
                   "problem": self.problem, "task_type": self.task_type}
        reply, error = self.ask("explorer", "synthesizer", "synthesize_solution", payload, "final_solution")
        if error is not None:
            node.metadata["error"] = error.as_dict()
            return None
        assert reply is not None  # ask gives a reply or an error
        verification = reply["verification"]
        if not verification["is_valid"]:
            node.metadata["validation_errors"] = list(verification.get("validation_errors") or
                                                      ["the synthesizer's answer did not verify"])
            return None
        solution: dict[str, Any] = plain(reply)
        return solution

    def alternatives(self) -> list[str]:
        """The other terminal nodes of the tree, best first, to the synthesizer: the answers
        that verify, each once, other than the solution's (the seed's alternative_solutions)."""
        solution = self.solution
        assert solution is not None, "alternatives are looked for once there is a solution"
        answers: list[str] = []
        others = [node for node in self.tree.nodes.values()
                  if node.status == TERMINAL and node.id not in self.synthesized]
        for node in self.best_first(others):
            reply = self.synthesize(node)
            if reply is not None and reply["answer"] != solution["answer"] and reply["answer"] not in answers:
                answers.append(reply["answer"])
        return answers

    # ------------------------------------------------------------ messages

    def depth_limit(self) -> int:
        """The config's max_depth, which it always has once the decomposer has answered
        (SearchConfig.with_depth)."""
        assert self.config.max_depth is not None
        return self.config.max_depth

    def ask(self, sender: str, role: str, type: str, payload: dict[str, Any], reply_type: str, *,
            timeout: float | None = None, failure: str | None = None) -> tuple[dict[str, Any] | None, ToTError | None]:
        """Send a request to a role and check its reply: (payload, None) or (None, error),
        the error recorded on the reply. The role gets a copy, so the record stays as sent.
        `failure` is the code of a role that raises; TimeoutError from the evaluator is an
        EVALUATION_TIMEOUT."""
        self.record(make_message(sender, role, type, payload, self.task_id))
        self.calls[role] += 1
        started = self.clock()
        try:
            reply = self.roles[role](plain(self.messages[-1]))
        except ToTError as error:
            return None, self.reply_failed(role, sender, reply_type, None, error)
        except TimeoutError as error:
            if role != "evaluator":
                raise
            return None, self.reply_failed(role, sender, reply_type, None, ToTError(
                EVALUATION_TIMEOUT, f"the evaluator timed out: {error}", recoverable=True))
        except Exception as error:
            reraise_interrupt(error)
            if failure is None:
                raise
            return None, self.reply_failed(role, sender, reply_type, None, ToTError(
                failure, f"the {role} failed: {type_name(error)}: {error}", recoverable=True))
        elapsed = self.clock() - started
        if timeout is not None and elapsed > timeout:
            return None, self.reply_failed(role, sender, reply_type, reply, ToTError(
                EVALUATION_TIMEOUT, f"the evaluator answered after {elapsed:.3g} s, more than the "
                f"evaluation_timeout_s of {timeout:g} s", recoverable=True))
        try:
            payload = check_reply(reply, reply_type, from_=role, to=sender, task_id=self.task_id)
        except ToTError as error:
            return None, self.reply_failed(role, sender, reply_type, reply, error)
        self.record(dict(reply))
        return payload, None

    def reply_failed(self, role: str, sender: str, reply_type: str, reply: Any, error: ToTError) -> ToTError:
        """Record the reply (or, when there was none to keep, an empty one) carrying the error."""
        if isinstance(reply, dict):
            self.record({**reply, "error": error.as_dict()})
        else:
            self.record(make_message(role, sender, reply_type, {}, self.task_id, error=error))
        self.incidents[error.code] += 1
        return error

    def flag_last(self, error: ToTError) -> ToTError:
        """Put `error` on the reply just recorded (a well-formed reply the explorer cannot use)."""
        self.messages[-1]["error"] = error.as_dict()
        self.incidents[error.code] += 1
        return error

    def record(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    # ------------------------------------------------------------ the end

    def best_node(self) -> ThoughtNode:
        """The solution, else the deepest best-scored node evaluated (the "current best path")."""
        if self.solution_node is not None:
            return self.solution_node
        scored = [node for node in self.tree.nodes.values() if node.evaluation is not None]
        if not scored:
            return self.tree.root
        return max(scored, key=lambda node: (node.depth, node.score))

    def stats(self) -> dict[str, Any]:
        return {"total_nodes": len(self.tree.nodes), "total_backtracks": self.backtracks,
                "llm_calls": sum(self.calls.values())}

    def complete(self) -> ToTRun:
        """The other verified answers, then search_complete to the orchestrator and the
        final_solution — or, when there is none, the error that says why."""
        self.state.best_path = self.tree.path_to(self.best_node().id)
        error = None
        if self.solution is None:
            error = self.failure()
        else:
            self.solution["alternative_solutions"] = self.alternatives()
        payload = {"best_path": [self.tree.nodes[node_id].as_dict() for node_id in self.state.best_path],
                   "tree": self.tree.as_dict(), "stats": self.stats()}
        self.record(make_message("explorer", "orchestrator", "search_complete", payload, self.task_id, error=error))
        if self.solution is not None:
            self.record(make_message("explorer", "orchestrator", "final_solution", plain(self.solution),
                                     self.task_id))
        return self.result(error)

    def failure(self) -> ToTError:
        """Why the search ends without a solution:

        1. BUDGET_EXHAUSTED: the node budget (max_nodes) was spent.
        2. The code of the errors, when they are why it failed: every terminal node's
           synthesis failed on one (a malformed synthesizer reply is INVALID_FORMAT), or,
           with no terminal node, every branch ended on one (a malformed generator reply,
           a generator that gave nothing, an evaluator that timed out). The most frequent
           code, the latest on a tie.
        3. SEARCH_EXHAUSTED otherwise: the branches were judged (pruned, or their answer
           did not verify) and none met the success criterion.
        """
        deepest = max(node.depth for node in self.tree.nodes.values())
        details = [f"{len(self.tree.nodes)} nodes searched down to depth {deepest}"]
        details += [f"{count} × {code}" for code, count in sorted(self.incidents.items())]
        summary = "; ".join(details)
        if self.budget_spent:
            return ToTError(BUDGET_EXHAUSTED, f"the node budget (max_nodes {self.config.max_nodes}) was spent "
                                              f"before a solution was found ({summary})")
        ends = [node for node in self.tree.nodes.values() if node.status == TERMINAL] or self.dead_ends()
        if ends and all("error" in node.metadata for node in ends):
            errors = [node.metadata["error"] for node in ends]
            codes = Counter(error["code"] for error in errors)
            code = max(reversed([error["code"] for error in errors]), key=codes.__getitem__)
            last = next(error for error in reversed(errors) if error["code"] == code)
            return ToTError(code, f"every branch ended on an error, the last: {last['message']} ({summary})")
        return ToTError(SEARCH_EXHAUSTED, f"no terminal node meets the success criterion ({summary})")

    def dead_ends(self) -> list[ThoughtNode]:
        """The nodes where a branch ended, in the order they were made: pruned, or
        expanded into nothing."""
        return [node for node in self.tree.nodes.values()
                if node.status == PRUNED or (node.status == EXPANDED and not node.children_ids)]

    def result(self, error: ToTError | None) -> ToTRun:
        return ToTRun(tree=self.tree, messages=self.messages, final_solution=self.solution, error=error,
                      stats=self.stats(), calls_by_role={role: self.calls[role] for role in ROLE_NAMES})


def type_name(error: BaseException) -> str:
    return type(error).__name__
