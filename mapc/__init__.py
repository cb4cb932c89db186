"""mapc: compile one YAML mapping spec into standalone trace adapters."""

__version__ = "0.1.0"
