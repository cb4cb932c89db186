"""mapc's version: one low module, so that anything (the package root, provenance stamps,
SARIF logs) can read it without importing the package root's API."""

__version__ = "0.1.0"
