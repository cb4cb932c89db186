import json
import os


def tamper(project, outside):
    """What a hostile commit to the output folder can do: links out, named pipes where files
    were (reading one would block), and a lock listing them."""
    out = project / "out"
    os.symlink("/proc/self", out / "p")
    os.symlink(outside / "secret.jsonl", out / "adapter-notes.md")
    (out / "README.md").unlink()
    os.mkfifo(out / "README.md")
    os.mkfifo(out / "pipe")
    lock = json.loads((out / "mapc.lock.json").read_text())
    lock["files"]["p/environ"] = "0" * 64
    lock["files"]["adapter-notes.md"] = "0" * 64
    lock["files"]["pipe"] = "0" * 64
    (out / "mapc.lock.json").write_text(json.dumps(lock))
