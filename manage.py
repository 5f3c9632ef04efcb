#!/usr/bin/env python
"""Django's command-line utility for Switchyard."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    from django.core.management import execute_from_command_line

    from core.audit import acting

    with acting("command", sys.argv[1] if len(sys.argv) > 1 else ""):  # what a command changes is on the audit trail as its own
        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
