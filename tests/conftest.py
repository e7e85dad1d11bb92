"""Puts tests/ on sys.path (pytest's prepend import mode) so tests/hostile can import ``files``."""
