"""Sending a task after commit when the broker is away."""
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SEND = """
import time
import django
django.setup()
from core.tasks import ping, send_after_commit
started = time.monotonic()
send_after_commit(ping, "hello")
print(f"returned after {time.monotonic() - started:.1f} s")
"""


def test_it_logs_a_send_to_an_unreachable_broker_fast_instead_of_raising(tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # DATABASE_URL unset: an empty SQLite file in the data folder is enough for on_commit.
    env = {key: value for key, value in os.environ.items()
           if key not in {"CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DATABASE_URL"}}
    env.update(REDIS_URL=f"redis://127.0.0.1:{port}/0", DJANGO_SETTINGS_MODULE="project.settings",
               SWITCHYARD_DATA_DIR=str(tmp_path))

    completed = subprocess.run([sys.executable, "-c", SEND], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=60)

    assert completed.returncode == 0, completed.stderr
    assert "could not send core.tasks.ping('hello',) to the queue" in completed.stderr
    seconds = float(completed.stdout.split()[2])
    assert seconds < 5, f"a send to an unreachable broker took {seconds} s"
