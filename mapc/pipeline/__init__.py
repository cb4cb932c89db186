"""The pipeline layer of mapc (docs/architecture.md, "Layers")."""
