"""Derive requests (core-data-structures §6), all of them: raising, deciding, the derived
child agent, their API, pages, commands, admin and tasks. See README.md here."""
