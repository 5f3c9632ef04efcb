"""ThoughtNode and ThoughtTree: the seed's shapes, the status state machine, reading back."""
import pytest

from engine.tot import SearchState, ThoughtNode, ThoughtTree, ToTError

SEED_NODE_KEYS = ["id", "parent_id", "children_ids", "depth", "content", "action_type", "evaluation", "status",
                  "metadata"]
SEED_TREE_KEYS = ["task_id", "problem", "task_type", "search_config", "nodes", "root_id", "search_state"]
CONFIG = {"strategy": "BFS", "max_depth": 3, "branching_factor": 5, "pruning_threshold": 3.0}


def small_tree() -> ThoughtTree:
    tree = ThoughtTree(task_id="t-1", problem="4 9 10 13", task_type="math_reasoning", search_config=dict(CONFIG),
                       root_id="root")
    tree.add(ThoughtNode(id="root", parent_id=None, depth=0, content="4 9 10 13", action_type="root"))
    child = tree.add(ThoughtNode(id="node_1_1", parent_id="root", depth=1, content="13 - 9 = 4 (left: 4 4 10)",
                                 action_type="subtraction", metadata={"left": ["4", "4", "10"]}))
    child.evaluation = {"score": 7.5, "confidence": 0.8, "reasoning": "产生了4的倍数"}
    tree.search_state = SearchState(current_depth=1, frontier=["node_1_1"], best_path=["root", "node_1_1"])
    return tree


def test_it_gives_a_node_exactly_the_seed_shape():
    shape = small_tree().nodes["node_1_1"].as_dict()
    assert list(shape) == SEED_NODE_KEYS
    assert shape == {"id": "node_1_1", "parent_id": "root", "children_ids": [], "depth": 1,
                     "content": "13 - 9 = 4 (left: 4 4 10)", "action_type": "subtraction",
                     "evaluation": {"score": 7.5, "confidence": 0.8, "reasoning": "产生了4的倍数"},
                     "status": "pending", "metadata": {"left": ["4", "4", "10"]}}
    assert small_tree().root.as_dict()["evaluation"] is None


def test_it_gives_a_tree_exactly_the_seed_shape_and_reads_it_back():
    tree = small_tree()
    shape = tree.as_dict()
    assert list(shape) == SEED_TREE_KEYS
    assert list(shape["search_state"]) == ["current_depth", "frontier", "best_path"]
    assert shape["nodes"]["root"]["children_ids"] == ["node_1_1"]
    assert ThoughtTree.from_dict(shape).as_dict() == shape


def test_it_hands_out_copies_that_never_alias_the_tree():
    tree = small_tree()
    shape = tree.as_dict()
    shape["nodes"]["node_1_1"]["metadata"]["left"].append("99")
    shape["nodes"]["root"]["children_ids"].clear()
    assert tree.nodes["node_1_1"].metadata["left"] == ["4", "4", "10"]
    assert tree.root.children_ids == ["node_1_1"]


@pytest.mark.parametrize("settled", ["expanded", "pruned", "terminal"])
def test_it_lets_a_pending_node_settle_once(settled):
    node = small_tree().nodes["node_1_1"]
    node.mark(settled)
    assert node.status == settled
    for status in ("pending", "expanded", "pruned", "terminal"):
        with pytest.raises(ValueError, match=f"cannot go from {settled} to {status}"):
            node.mark(status)


def test_it_refuses_an_unknown_status():
    with pytest.raises(ValueError, match="cannot go from pending to done"):
        small_tree().nodes["node_1_1"].mark("done")


def test_it_paths_from_the_root_down():
    tree = small_tree()
    assert tree.path_to("node_1_1") == ["root", "node_1_1"]
    with pytest.raises(ValueError, match="already in the tree"):
        tree.add(ThoughtNode(id="node_1_1", parent_id="root", depth=1, content="again", action_type="x"))


def broken(change):
    shape = small_tree().as_dict()
    change(shape)
    return shape


@pytest.mark.parametrize("change, named", [
    (lambda t: t["nodes"]["node_1_1"].update(status="done"), "tree.nodes.node_1_1.status: expected one of"),
    (lambda t: t["nodes"]["node_1_1"]["evaluation"].update(score=11), "tree.nodes.node_1_1.evaluation.score"),
    (lambda t: t["nodes"]["node_1_1"]["evaluation"].update(confidence=-0.1),
     "tree.nodes.node_1_1.evaluation.confidence"),
    (lambda t: t["nodes"]["node_1_1"]["evaluation"].pop("reasoning"), "tree.nodes.node_1_1.evaluation.reasoning"),
    (lambda t: t["nodes"]["node_1_1"].update(depth="1"), "tree.nodes.node_1_1.depth: expected an integer"),
    (lambda t: t["nodes"]["node_1_1"].update(depth=2), "tree.nodes.node_1_1.depth: is 2"),
    (lambda t: t["nodes"]["node_1_1"].update(id="node_9"), "tree.nodes.node_1_1.id"),
    (lambda t: t["nodes"]["node_1_1"].pop("metadata"), "tree.nodes.node_1_1.metadata: is required"),
    (lambda t: t["nodes"]["node_1_1"].update(parent_id=None), "tree.nodes.node_1_1.parent_id: only the root"),
    (lambda t: t["nodes"]["root"].update(children_ids=[]), "tree.nodes.node_1_1.parent_id"),
    (lambda t: t["nodes"]["root"]["children_ids"].append("node_1_7"), "tree.nodes.root.children_ids[1]"),
    (lambda t: t.update(root_id="node_0"), "tree.root_id: names no node"),
    (lambda t: t["search_state"]["frontier"].append("node_5_5"), "tree.search_state.frontier[1]"),
    (lambda t: t["search_state"].pop("best_path"), "tree.search_state.best_path: is required"),
    (lambda t: t["search_config"].update(strategy="A*"), "tree.search_config.strategy"),
    (lambda t: t["search_config"].update(pruning_threshold=12), "tree.search_config.pruning_threshold"),
    (lambda t: t.update(nodes=[]), "tree.nodes: expected an object"),
])
def test_it_refuses_a_malformed_tree_naming_the_field(change, named):
    with pytest.raises(ToTError) as caught:
        ThoughtTree.from_dict(broken(change))
    assert caught.value.code == "INVALID_FORMAT"
    assert named in caught.value.message, caught.value.message
