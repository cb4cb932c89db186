"""RLViz's checks, re-implemented so mapc can validate adapters without RLViz.

- :mod:`.schemas` — RLViz's published JSON Schemas (Apache-2.0, see NOTICE.md);
- :mod:`.records` — canonical record checks (schema + relational stream rules);
- :mod:`.manifest` — the manifest YAML subset RLViz parses, and its rules;
- :mod:`.digest` — the plugin content digest RLViz binds trust to;
- :mod:`.host` — running a plugin the way RLViz does (snapshot, request, limits);
- :mod:`.validate` — ``rlviz plugin validate`` itself, with RLViz-shaped reports;
- :mod:`.cli` — ``mapc-rlviz plugin validate --json``, a stand-in for ``rlviz``.
"""
