"""RELAI's custom-adapter contract, checked without RELAI.

- :mod:`.catalog` — catalog rules (``relai.custom_adapter.v1``);
- :mod:`.manifest` — runtime-manifest rules and the simulator environment;
- :mod:`.atif` — ATIF step rules for ``trace.steps``;
- :mod:`.result` — runner-result rules (``relai.custom_run.v1``) and task scores;
- :mod:`.suite` — running ``prepare`` and the runner as RELAI does, and the suite report.

The rules are those of ``shared/seeds/relai-custom-adapters.txt`` (RELAI's own
document); ``tests/relai`` shows each one rejecting a bad example.
"""
