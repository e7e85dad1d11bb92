"""Helpers for the tests and benchmarks (not part of the product): ``support.libreoffice``."""
