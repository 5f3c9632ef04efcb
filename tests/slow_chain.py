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


def counted_argv(seconds: float, calls: str, *, again: float | None = None) -> list[str]:
    """`slow_argv`, writing a line to the file `calls` as each call begins: its pid, and the
    SWITCHYARD_ATTEMPT, SWITCHYARD_DISPATCH and SWITCHYARD_IDEMPOTENCY_KEY it was given.
    `again`: how long a call of a later dispatch takes (default: as long as the first)."""
    again = seconds if again is None else again
    return [sys.executable, "-c",
            "import json, os, sys, time\n"
            f"with open({calls!r}, 'a') as calls:\n"
            "    calls.write(' '.join([str(os.getpid())] + [os.environ.get('SWITCHYARD_' + name, '-') for name in "
            "('ATTEMPT', 'DISPATCH', 'IDEMPOTENCY_KEY')]) + '\\n')\n"
            "sys.stdin.read()\n"
            f"time.sleep({seconds} if os.environ.get('SWITCHYARD_DISPATCH', '1') == '1' else {again})\n"
            "print(json.dumps({'done': True}))"]


def calls_made(calls) -> list[list[str]]:
    """The calls `counted_argv` wrote down, each as [pid, attempt, dispatch, key]."""
    try:
        return [line.split() for line in open(calls).read().splitlines()]
    except FileNotFoundError:
        return []
