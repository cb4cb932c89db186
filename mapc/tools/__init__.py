"""The tools layer of mapc (docs/architecture.md, "Layers")."""
