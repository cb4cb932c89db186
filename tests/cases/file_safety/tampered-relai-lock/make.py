import hashlib
import json


def tamper(project, outside):
    lock_path = project / ".relai" / "custom-adaptor" / "tampered-relai-lock" / "mapc.lock.json"
    lock = json.loads(lock_path.read_text())
    for name in ("main.py", "README.md"):
        lock["files"][name] = hashlib.sha256((project / name).read_bytes()).hexdigest()
    lock["files"]["../outside/secret.jsonl"] = hashlib.sha256((outside / "secret.jsonl").read_bytes()).hexdigest()
    lock_path.write_text(json.dumps(lock))


def tamper_wrong_hashes(project, outside):
    """Edited files listed in the lock: what `--force` used to delete."""
    lock_path = project / ".relai" / "custom-adaptor" / "tampered-relai-lock" / "mapc.lock.json"
    lock = json.loads(lock_path.read_text())
    for name in ("main.py", "README.md"):
        lock["files"][name] = "0" * 64
    lock_path.write_text(json.dumps(lock))
