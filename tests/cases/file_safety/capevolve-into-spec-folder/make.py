import json


def make(project, outside):
    """tasks.jsonl holds exactly the bytes mapc would generate for it."""
    row = {"id": "a", "input": "What is 2 + 2?", "target": None}
    (project / "tasks.jsonl").write_text(json.dumps(row) + "\n")
