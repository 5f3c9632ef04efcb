"""`manage.py check --deploy` passes with the HTTPS settings and can fail."""
import os
import secrets
import string
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Variables that would change the outcome if they leaked in from the developer's shell.
SECURITY_VARIABLES = (
    "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER",
)

HTTPS_SETTINGS = {
    "DEBUG": "0",
    "ALLOWED_HOSTS": "switchyard.example.com",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
}


def random_secret_key(length: int = 60) -> str:
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    return "".join(secrets.choice(alphabet) for _ in range(length))


def check_deploy(**variables: str) -> subprocess.CompletedProcess:
    # DJANGO_ALLOW_ASYNC_UNSAFE is the browser tests' (tests/pages/conftest.py), never a deployment's.
    env = {key: value for key, value in os.environ.items()
           if key not in SECURITY_VARIABLES and key != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(variables, DJANGO_SETTINGS_MODULE="project.settings")
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


def test_it_passes_check_deploy_with_https_settings():
    completed = check_deploy(**HTTPS_SETTINGS, SECRET_KEY=random_secret_key())

    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_it_refuses_the_development_secret_key_with_debug_off():
    from project.settings import DEVELOPMENT_SECRET_KEY

    completed = check_deploy(**HTTPS_SETTINGS, SECRET_KEY=DEVELOPMENT_SECRET_KEY)

    assert completed.returncode != 0
    assert "SECRET_KEY is a development key, which is refused with DEBUG off" in completed.stderr


def test_it_generates_a_secret_key_once_in_the_data_folder(tmp_path):
    data_dir = tmp_path / "data"

    first = check_deploy(**HTTPS_SETTINGS, SWITCHYARD_DATA_DIR=str(data_dir))
    key_file = data_dir / "secret_key"
    key = key_file.read_text()
    second = check_deploy(**HTTPS_SETTINGS, SWITCHYARD_DATA_DIR=str(data_dir))

    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0, second.stdout + second.stderr
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert len(key.strip()) >= 50
    assert key_file.read_text() == key  # kept, not made anew at each start
    assert [p.name for p in data_dir.iterdir() if p.name.startswith(".secret_key")] == []


def test_it_uses_the_development_key_only_with_debug_on(tmp_path, monkeypatch):
    from project.settings import DEVELOPMENT_SECRET_KEY, secret_key

    monkeypatch.delenv("SECRET_KEY", raising=False)

    assert secret_key(True, tmp_path) == DEVELOPMENT_SECRET_KEY
    assert not (tmp_path / "secret_key").exists()
    assert secret_key(False, tmp_path) != DEVELOPMENT_SECRET_KEY


def test_debug_is_off_unless_asked_for():
    env = {key: value for key, value in os.environ.items() if key != "DEBUG"}
    completed = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.DEBUG)"],
        cwd=ROOT, env=dict(env, DJANGO_SETTINGS_MODULE="project.settings"), capture_output=True, text=True, timeout=60,
    )

    assert completed.stdout.strip() == "False", completed.stderr
