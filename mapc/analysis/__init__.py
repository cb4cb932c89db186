"""The analysis layer of mapc (docs/architecture.md, "Layers")."""
