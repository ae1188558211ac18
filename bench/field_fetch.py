#!/usr/bin/env python3
"""Make the local checkouts that bench/field.py reads, from git directories already on this machine.

    python3 bench/field_fetch.py --mirror /work/.mirror [--out .cache/field] [--pin]

For each `owner/name@commit scope...` line of bench/field.txt, finds a git directory of the
repository under MIRROR (`MIRROR/owner+name/repo`, `MIRROR/owner+name.git`, `MIRROR/owner+name`
with a `.git` folder, or any git directory named like the repository) and writes the `.py` and
`.ipynb` files of the pinned commit inside the scope (tests left out, as the bench does), and the
root's pyproject.toml / setup.cfg (project markers for import resolution), to OUT/owner+name/<path>. Only those files: data, images and weights are never extracted (snapshots may
lack their largest blobs anyway). It downloads nothing; how the git directories were obtained is in
bench/field_fetch.md. `--pin` prints field.txt with each commit replaced by the mirror's HEAD,
to update the pins after fetching newer snapshots.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from field import FIELD_TXT, Repo, in_scope, read_field  # noqa: E402

# Project markers: with them an engine that follows imports finds the repository's import root
# (`from llava.model import ...` in llava/train/train.py). Configuration only, never code.
MARKERS = ("pyproject.toml", "setup.cfg")


def find_git_dir(mirror: Path, repo: Repo) -> Path | None:
    slug = repo.slug
    for candidate in (mirror / slug / "repo", mirror / f"{slug}.git", mirror / slug / ".git", mirror / slug):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def git(git_dir: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], input=input, capture_output=True,
                          check=True).stdout


def extract(git_dir: Path, repo: Repo, commit: str, out: Path) -> tuple[int, int]:
    """(files written, files whose blob the snapshot lacks)."""
    listing = git(git_dir, "ls-tree", "-r", "-z", commit).split(b"\0")
    wanted = []
    for entry in listing:
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        name = path.decode("utf-8", "surrogateescape")
        if kind == b"blob" and mode != b"120000" and (in_scope(name, repo.scopes) or name in MARKERS):
            wanted.append((name, sha.decode()))
    if not wanted:
        return 0, 0
    # One `cat-file --batch` for all blobs: `<sha> blob <size>\n<data>\n`, or `<sha> missing\n`.
    raw = git(git_dir, "cat-file", "--batch", input="".join(f"{sha}\n" for _, sha in wanted).encode())
    written = missing = 0
    pos = 0
    for name, sha in wanted:
        end = raw.index(b"\n", pos)
        header = raw[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            missing += 1
            continue
        size = int(header[2])
        data = raw[pos:pos + size]
        pos += size + 1
        dest = out / repo.slug / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        written += 1
    return written, missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, required=True, help="folder holding the repositories' git directories")
    ap.add_argument("--out", type=Path, default=Path(".cache/field"), help="checkout folder (default .cache/field)")
    ap.add_argument("--field", type=Path, default=FIELD_TXT)
    ap.add_argument("--pin", action="store_true", help="print field.txt pinned to each mirror's HEAD, extract nothing")
    args = ap.parse_args()
    repos = read_field(args.field)
    if args.pin:
        for line in args.field.read_text().splitlines():
            repo = next((r for r in repos if line.startswith(r.name + "@")), None)
            git_dir = repo and find_git_dir(args.mirror, repo)
            if repo and git_dir:
                head = git(git_dir, "rev-parse", "HEAD").decode().strip()
                line = line.replace(f"@{repo.commit}", f"@{head}", 1)
            print(line)
        return 0
    status = 0
    for repo in repos:
        git_dir = find_git_dir(args.mirror, repo)
        if git_dir is None:
            print(f"{repo.name}: no git directory under {args.mirror}", file=sys.stderr)
            status = 1
            continue
        try:
            written, missing = extract(git_dir, repo, repo.commit, args.out)
        except subprocess.CalledProcessError as e:
            print(f"{repo.name}: git failed: {e.stderr.decode(errors='replace').strip()}", file=sys.stderr)
            status = 1
            continue
        note = f", {missing} blobs missing from the snapshot" if missing else ""
        print(f"{repo.name}@{repo.commit[:10]}: {written} files{note}")
    return status


if __name__ == "__main__":
    sys.exit(main())
