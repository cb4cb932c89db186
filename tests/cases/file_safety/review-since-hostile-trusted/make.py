import json
import os
import shutil


def tamper(project, outside):
    """`trusted/` poses as the build a person reviewed: its lock lists files outside it, its
    adapter.py is a symlink to a secret, its runtime a FIFO; a mapc.lock.json symlink would
    send the lock-file form elsewhere."""
    out, trusted = project / "out", project / "trusted"
    shutil.copytree(out, trusted)
    lock = json.loads((trusted / "mapc.lock.json").read_text())
    lock["files"]["../../outside/secret.jsonl"] = "0" * 64
    lock["files"]["/etc/passwd"] = "0" * 64
    lock["files"]["etc/passwd"] = "0" * 64
    lock["runtime"] = {"path": "/etc/passwd", "sha256": "0" * 64}
    lock["spec"] = "../../outside/secret.jsonl"
    (trusted / "mapc.lock.json").write_text(json.dumps(lock))
    (trusted / "adapter.py").unlink()
    os.symlink(outside / "secret.jsonl", trusted / "adapter.py")
    (trusted / "mapc_runtime" / "stream.py").unlink()
    os.mkfifo(trusted / "mapc_runtime" / "stream.py")
    os.symlink("/etc", trusted / "etc")
    os.symlink(outside / "secret.jsonl", project / "lock-link.json")
