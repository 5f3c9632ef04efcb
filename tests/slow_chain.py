"""A chain of nodes that take their time, for the fault tests: each node runs an agent whose
`command` backend sleeps before answering, so a test can act while a node is running."""
import sys


def slow_argv(seconds: float) -> list[str]:
    """The command backend's argv: read the prompt, sleep, answer `{"done": true}`."""
    return [sys.executable, "-c", f"import json, sys, time; sys.stdin.read(); time.sleep({seconds}); "
                                  "print(json.dumps({'done': True}))"]


SLOW_CHAIN_DOCUMENTS = [
    {"agent_id": "Slow", "name": "Slow", "version": "1.0.0", "type": "business", "status": "active",
     "prompt_config": {"system_prompt": "Take your time."}, "capabilities": {"skills": ["wait"]},
     "runtime": {"backend": "command"}},
    {"workflow_id": "slow_chain", "name": "Slow chain", "topology": "seq",
     "nodes": [{"id": f"step_{i}", "agent_ref": "Slow"} for i in range(3)],
     "error_handling": {"retry_count": 0}},
]
