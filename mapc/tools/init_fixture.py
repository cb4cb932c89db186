"""Where a `mapc init` draft reads its sample from: a fixture inside the spec's folder.

mapc reads a spec's files only inside the spec's folder (D60), so a draft written to
``specs/my.yaml`` that named ``../sample.jsonl`` failed its first build with
`file_outside_spec`. When the spec is written, a sample outside its folder is copied next
to it (with the folder named after the sample's stem beside it, where session logs keep
their subagents' files), bounded, never over a different file; a sample too large to copy
stays where it is and the next commands carry `--allow-read`.
"""

from __future__ import annotations

import filecmp
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

MAX_COPY_BYTES = 16 * 1024 * 1024  # a sample (and its sidecar folder) larger than this is not copied
MAX_SIDECAR_FILES = 256


class FixtureError(ValueError):
    """The sample cannot be placed beside the spec (a one-line reason)."""


@dataclass
class Placement:
    """The fixture path the spec names (relative to its folder) and what writing it copies."""

    fixture: str
    copies: list[tuple[Path, Path]] = field(default_factory=list)  # (from, to), files only
    allow_read: Path | None = None  # a folder the next commands must allow (the sample's)
    note: str | None = None


def place(sample: Path, spec_dir: Path, *, copy: bool) -> Placement:
    """Plan the fixture of a draft for ``sample`` whose spec goes in ``spec_dir``.

    ``copy``: the spec is written, so a sample outside its folder may be copied there.
    """
    from mapc.core import safeio

    sample, spec_dir = sample.resolve(), spec_dir.resolve()
    folder = sample.parent
    if safeio.within(folder, spec_dir):
        return Placement(os.path.relpath(sample, spec_dir))
    outside = Placement(os.path.relpath(sample, spec_dir), allow_read=folder)
    if not copy:
        outside.note = (f"the sample is outside the spec's folder: copy it next to the spec, or build and test "
                        f"with `--allow-read {folder}` (mapc reads a spec's files only inside its folder)")
        return outside
    copies = [(sample, spec_dir / sample.name)] + _sidecar(sample, spec_dir)
    size = sum(src.stat().st_size for src, _ in copies)
    if size > MAX_COPY_BYTES:
        outside.note = (f"the sample is outside the spec's folder and too large to copy next to it "
                        f"({size // (1024 * 1024)} MiB): the next commands read it with `--allow-read {folder}`")
        return outside
    for src, dest in copies:
        if dest.exists() and not (dest.is_file() and filecmp.cmp(src, dest, shallow=False)):
            raise FixtureError(f"{os.path.relpath(dest)} exists and is not the sample {sample.name}: the draft's "
                               "fixture goes next to the spec; move that file or write the spec in another folder")
    shown = os.path.relpath(spec_dir / sample.name)
    extra = f" (and the {len(copies) - 1} file(s) of the folder {sample.stem}/ beside it)" if len(copies) > 1 else ""
    return Placement(sample.name, copies, None,
                     f"copied the sample to {shown}{extra}: the spec's fixture, next to the spec "
                     "(mapc reads a spec's files only inside its folder)")


def _sidecar(sample: Path, spec_dir: Path) -> list[tuple[Path, Path]]:
    """The regular files of the folder named after the sample's stem beside it (a session's
    subagent transcripts), if it has one and it is small: (from, to) pairs."""
    side = sample.parent / sample.stem
    if side.is_symlink() or not side.is_dir():
        return []
    found = []
    for root, dirs, files in os.walk(side):
        dirs[:] = sorted(d for d in dirs if not (Path(root) / d).is_symlink())
        for name in sorted(files):
            src = Path(root) / name
            if src.is_symlink() or not src.is_file():
                continue
            found.append((src, spec_dir / src.relative_to(sample.parent)))
            if len(found) > MAX_SIDECAR_FILES:
                return []  # not a sample's sidecar folder: leave it
    return found


def copy_all(placement: Placement) -> None:
    """Copy what ``placement`` plans (a file already there is the same file: kept)."""
    for src, dest in placement.copies:
        if dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
