from engine.dataflow import dataflow_warnings, last_nodes


def node(node_id, **inputs):
    extra = {key: inputs.pop(key) for key in ("output_mapping", "compress") if key in inputs}
    return {"id": node_id, "agent_ref": "agent", "input_mapping": inputs, **extra}


def workflow(topology, nodes, transitions=()):
    return {"workflow_id": "wf", "name": "wf", "topology": topology, "nodes": nodes, "transitions": list(transitions)}


def warned(document):
    return [(w["where"], w["code"]) for w in dataflow_warnings(document)]


def test_it_warns_of_an_edge_no_mapping_uses_and_of_the_output_nothing_reads():
    nodes = [node("code", repository="$.input.repository"), node("docs"), node("report", code="$.nodes.code.summary")]
    document = workflow("dag", nodes, [{"from": "code", "to": "report"}, {"from": "docs", "to": "report"}])
    [unread, unused] = dataflow_warnings(document)
    assert (unread["where"], unread["node"], unread["code"]) == ("nodes[docs]", "docs", "OUTPUT_UNREAD")
    assert "nothing reads the output of 'docs'" in unread["message"]
    assert (unused["where"], unused["transition"], unused["code"]) == ("transitions[1]", 1, "EDGE_UNUSED")
    assert unused["message"].startswith("(docs → report) passes nothing: 'report' waits for 'docs'")


def test_it_counts_every_way_a_node_reads_another():
    transitions = [{"from": "a", "to": "b"}]
    reads = [
        node("b", x="$.nodes.a"),
        node("b", x="$.nodes['a'].items[0]"),
        node("b", x="$.nodes[*]"),  # every node's
        node("b", data_references=[{"ref_type": "task_output", "task_id": "a"}]),
        node("b", compress=True),
    ]
    for reader in reads:
        assert warned(workflow("dag", [node("a"), reader], transitions)) == [], reader
    # Through the state: a key the source sets, or the whole state.
    for path in ("$.state.draft", "$.state['draft']", "$.state"):
        writer = node("a", output_mapping={"draft": "$.text"})
        assert warned(workflow("dag", [writer, node("b", x=path)], transitions)) == [], path
    # A key the source does not set, a constant, or another node: nothing of `a`.
    for value in ("$.state.other", "$.nodes.ab", "$.input.a", "nodes.a"):
        writer = node("a", output_mapping={"draft": "$.text"})
        assert warned(workflow("dag", [writer, node("b", x=value)], transitions)) == [
            ("transitions[0]", "EDGE_UNUSED")], value


def test_it_takes_a_last_nodes_output_for_the_runs_result():
    assert last_nodes(workflow("seq", [node("a"), node("b")])) == {"b"}
    assert last_nodes(workflow("par", [node("a"), node("b")])) == {"a", "b"}
    assert last_nodes(workflow("dag", [node("a"), node("b"), node("c")], [{"from": "a", "to": "b"}])) == {"b", "c"}
    machine = workflow("state_machine", [node("a"), node("b"), node("c"), node("d")], [
        {"from": "a", "to": "b"}, {"from": "b", "to": "c", "condition": "state.n > 1"},
        {"from": "c", "to": "d", "on_success": "end"}])
    assert last_nodes(machine) == {"b", "c", "d"}  # b: its only transition may not hold
    assert warned(workflow("seq", [node("a"), node("b")])) == [("nodes[a]", "OUTPUT_UNREAD")]


def test_it_warns_of_no_transition_in_a_state_machine_and_reads_outputs_through_conditions():
    nodes = [node("draft", output_mapping={"draft": "$.text"}), node("review"), node("publish", x="$.state.draft")]
    transitions = [{"from": "draft", "to": "review"}, {"from": "review", "to": "publish", "condition": "output.ok"},
                   {"from": "review", "to": "draft", "condition": "not output.ok"}]
    assert warned(workflow("state_machine", nodes, transitions)) == []
    transitions[1:] = [{"from": "review", "to": "publish"}]  # nothing reads what review said
    assert warned(workflow("state_machine", nodes, transitions)) == [("nodes[review]", "OUTPUT_UNREAD")]


def test_it_leaves_dangling_and_looping_transitions_to_validation():
    nodes = [node("a"), node("b", x="$.nodes.a")]
    assert warned(workflow("dag", nodes, [{"from": "a", "to": "b"}, {"from": "a", "to": "ghost"},
                                          {"from": "b", "to": "b"}])) == []


def test_it_warns_of_an_input_that_reads_a_node_it_does_not_wait_for():
    nodes = [node("a"), node("b"), node("c", x="$.nodes.a.text")]
    [warning] = dataflow_warnings(workflow("dag", nodes))
    assert (warning["where"], warning["node"], warning["code"]) == ("nodes[c].input_mapping.x", "c", "READ_NOT_AWAITED")
    assert warning["message"] == ("input 'x' reads $.nodes.a, but it does not wait for 'a' (connect a → c): "
                                  "it may run first and find nothing there")
    # Waiting for it through another node is waiting for it.
    chained = warned(workflow("dag", nodes, [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}]))
    assert "READ_NOT_AWAITED" not in [code for _, code in chained]
    assert warned(workflow("seq", nodes)) == [("nodes[b]", "OUTPUT_UNREAD")]  # a comes before c
    assert ("nodes[a].input_mapping.x", "READ_NOT_AWAITED") in warned(
        workflow("seq", [node("a", x="$.nodes.c"), node("b"), node("c")]))
    assert warned(workflow("par", nodes)) == [("nodes[c].input_mapping.x", "READ_NOT_AWAITED")]
    assert warned(workflow("state_machine", nodes, [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}])) == [
        ("nodes[b]", "OUTPUT_UNREAD")]


def test_it_takes_waiting_for_a_gate_for_the_gates_purpose():
    gate = {**node("approve", draft="$.nodes.draft"), "gate": {"prompt": "Publish?"}}
    nodes = [node("draft"), gate, node("publish", draft="$.nodes.draft")]
    transitions = [{"from": "draft", "to": "approve"}, {"from": "approve", "to": "publish"}]
    assert warned(workflow("dag", nodes, transitions)) == []
    # Not a gate: nothing reads what it said, and the edge after it passes nothing.
    nodes[1] = node("approve", draft="$.nodes.draft")
    assert warned(workflow("dag", nodes, transitions)) == [("nodes[approve]", "OUTPUT_UNREAD"),
                                                           ("transitions[1]", "EDGE_UNUSED")]
