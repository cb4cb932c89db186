import json


def tamper(project, outside):
    path = project / "out" / "mapc.lock.json"
    lock = json.loads(path.read_text())
    lock["output"] = "/"
    lock["files"]["etc/passwd"] = "0" * 64
    path.write_text(json.dumps(lock))
