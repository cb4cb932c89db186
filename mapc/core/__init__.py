"""The core layer of mapc (docs/architecture.md, "Layers")."""
