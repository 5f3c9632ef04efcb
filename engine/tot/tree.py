"""ThoughtNode and ThoughtTree (tot-protocol "核心数据结构"), exactly the seed's shapes.

A node's status is a small state machine: every node is born `pending`, and the explorer
settles it once — `expanded` (its children were asked for), `pruned` (cut: a low score,
no score, or not among the b best) or `terminal` (a leaf that ends a path). Any other
change is refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import fields as f

PENDING, EXPANDED, PRUNED, TERMINAL = "pending", "expanded", "pruned", "terminal"
STATUSES = (PENDING, EXPANDED, PRUNED, TERMINAL)
ALLOWED = {PENDING: {EXPANDED, PRUNED, TERMINAL}}


def plain(value: Any) -> Any:
    """A copy of JSON-like data, so what is handed out never aliases the tree."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


@dataclass
class ThoughtNode:
    id: str
    parent_id: str | None
    depth: int
    content: str
    action_type: str
    children_ids: list[str] = field(default_factory=list)
    evaluation: dict[str, Any] | None = None  # {"score": 0-10, "confidence": 0-1, "reasoning": str}
    status: str = PENDING
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def score(self) -> float | None:
        return None if self.evaluation is None else self.evaluation["score"]

    def mark(self, status: str) -> None:
        if status not in ALLOWED.get(self.status, ()):
            raise ValueError(f"node {self.id}: cannot go from {self.status} to {status}")
        self.status = status

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "children_ids": list(self.children_ids),
            "depth": self.depth,
            "content": self.content,
            "action_type": self.action_type,
            "evaluation": None if self.evaluation is None else dict(self.evaluation),
            "status": self.status,
            "metadata": plain(self.metadata),
        }

    @classmethod
    def from_dict(cls, raw: Any, where: str = "node") -> ThoughtNode:
        """A node from its seed shape; a malformed one is an INVALID_FORMAT naming the field."""
        f.an_object(raw, where)
        parent_id = f.field(raw, "parent_id", where)
        if parent_id is not None and not isinstance(parent_id, str):
            raise f.refuse(f"{where}.parent_id", f"expected a node id or null, got {f.show(parent_id)}")
        evaluation = f.field(raw, "evaluation", where)
        if evaluation is not None:
            at = f"{where}.evaluation"
            f.an_object(evaluation, at)
            evaluation = {
                "score": f.a_number(evaluation, "score", at, low=0, high=10),
                "confidence": f.a_number(evaluation, "confidence", at, low=0, high=1),
                "reasoning": f.a_string(evaluation, "reasoning", at),
            }
        return cls(
            id=f.a_string(raw, "id", where, empty=False),
            parent_id=parent_id,
            children_ids=list(f.strings(raw, "children_ids", where)),
            depth=f.a_number(raw, "depth", where, low=0, high=None, integer=True),
            content=f.a_string(raw, "content", where),
            action_type=f.a_string(raw, "action_type", where),
            evaluation=evaluation,
            status=f.one_of(raw, "status", where, STATUSES),
            metadata=plain(f.an_object_field(raw, "metadata", where)),
        )


@dataclass
class SearchState:
    current_depth: int = 0
    frontier: list[str] = field(default_factory=list)  # nodes still to expand, next first
    best_path: list[str] = field(default_factory=list)  # root … best node so far

    def as_dict(self) -> dict[str, Any]:
        return {"current_depth": self.current_depth, "frontier": list(self.frontier),
                "best_path": list(self.best_path)}


@dataclass
class ThoughtTree:
    task_id: str
    problem: str
    task_type: str
    search_config: dict[str, Any]
    root_id: str
    nodes: dict[str, ThoughtNode] = field(default_factory=dict)
    search_state: SearchState = field(default_factory=SearchState)

    @property
    def root(self) -> ThoughtNode:
        return self.nodes[self.root_id]

    def add(self, node: ThoughtNode) -> ThoughtNode:
        """Register a node under its parent (the parent lists it among its children)."""
        if node.id in self.nodes:
            raise ValueError(f"node {node.id} is already in the tree")
        if node.parent_id is not None:
            self.nodes[node.parent_id].children_ids.append(node.id)
        self.nodes[node.id] = node
        return node

    def path_to(self, node_id: str) -> list[str]:
        """The ids from the root down to `node_id`."""
        path = []
        current: str | None = node_id
        while current is not None:
            path.append(current)
            current = self.nodes[current].parent_id
        return path[::-1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "problem": self.problem,
            "task_type": self.task_type,
            "search_config": plain(self.search_config),
            "nodes": {node_id: node.as_dict() for node_id, node in self.nodes.items()},
            "root_id": self.root_id,
            "search_state": self.search_state.as_dict(),
        }

    @classmethod
    def from_dict(cls, raw: Any, where: str = "tree") -> ThoughtTree:
        """A tree from its seed shape, its links checked: every node is listed under its own
        id, children point back at their parent one level down, and the search state names
        nodes of the tree."""
        f.an_object(raw, where)
        config_where = f"{where}.search_config"
        config = f.an_object_field(raw, "search_config", where)
        f.one_of(config, "strategy", config_where, ("BFS", "DFS"))
        f.a_number(config, "max_depth", config_where, low=1, high=None, integer=True)
        f.a_number(config, "branching_factor", config_where, low=1, high=None, integer=True)
        f.a_number(config, "pruning_threshold", config_where, low=0, high=10)
        raw_nodes = f.an_object_field(raw, "nodes", where)
        nodes = {}
        for node_id, raw_node in raw_nodes.items():
            node = ThoughtNode.from_dict(raw_node, f"{where}.nodes.{node_id}")
            if node.id != node_id:
                raise f.refuse(f"{where}.nodes.{node_id}.id", f"is {node.id!r}, not the key it is listed under")
            nodes[node_id] = node
        root_id = f.a_string(raw, "root_id", where, empty=False)
        if root_id not in nodes:
            raise f.refuse(f"{where}.root_id", f"names no node of the tree: {root_id!r}")
        for node in nodes.values():
            at = f"{where}.nodes.{node.id}"
            if (node.parent_id is None) != (node.id == root_id):
                raise f.refuse(f"{at}.parent_id", "only the root has no parent")
            if node.parent_id is not None:
                parent = nodes.get(node.parent_id)
                if parent is None or node.id not in parent.children_ids:
                    raise f.refuse(f"{at}.parent_id", f"{node.parent_id!r} does not list this node among its children")
                if node.depth != parent.depth + 1:
                    raise f.refuse(f"{at}.depth", f"is {node.depth}, one below its parent would be {parent.depth + 1}")
        for node in nodes.values():
            at = f"{where}.nodes.{node.id}"
            for index, child_id in enumerate(node.children_ids):
                if child_id not in nodes or nodes[child_id].parent_id != node.id:
                    raise f.refuse(f"{at}.children_ids[{index}]", f"{child_id!r} is not a child of this node")
        state_where = f"{where}.search_state"
        state = f.an_object_field(raw, "search_state", where)
        search_state = SearchState(
            current_depth=f.a_number(state, "current_depth", state_where, low=0, high=None, integer=True),
            frontier=list(f.strings(state, "frontier", state_where)),
            best_path=list(f.strings(state, "best_path", state_where)),
        )
        for key in ("frontier", "best_path"):
            for index, node_id in enumerate(getattr(search_state, key)):
                if node_id not in nodes:
                    raise f.refuse(f"{state_where}.{key}[{index}]", f"names no node of the tree: {node_id!r}")
        return cls(
            task_id=f.a_string(raw, "task_id", where),
            problem=f.a_string(raw, "problem", where),
            task_type=f.a_string(raw, "task_type", where),
            search_config=plain(config),
            root_id=root_id,
            nodes=nodes,
            search_state=search_state,
        )
