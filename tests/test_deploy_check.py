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


def test_it_fails_check_deploy_with_the_development_secret_key():
    completed = check_deploy(**HTTPS_SETTINGS)  # no SECRET_KEY: the settings' development default

    assert completed.returncode != 0
    assert "security.W009" in completed.stdout + completed.stderr
