"""Tests of the rlviz target (a package, so its conftest does not shadow others')."""
