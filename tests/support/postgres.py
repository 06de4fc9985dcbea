"""A throwaway PostgreSQL server for the gradebook tests: ``tools/throwaway_postgres.py``, shared with the scale benchmark."""

from tools.throwaway_postgres import DATABASE, MISSING, USER, server_bindir, throwaway_server

__all__ = ["DATABASE", "MISSING", "USER", "server_bindir", "throwaway_server"]
