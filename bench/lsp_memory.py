"""Server memory over many identical edits: RSS of the real `devflow serve` process (from
/proc/PID/status) every 500 of 3,000 didChange notifications, each alternately inserting and
deleting the same line of a small training script and waiting for its publishDiagnostics.

A leak shows as RSS still rising after the first thousand edits; the figures are printed, not
asserted with a tight bound (RSS is noisy: allocator arenas, the server's own forced collections).

Usage: python bench/lsp_memory.py [--edits 3000] [--every 500] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

SOURCE = (Path(__file__).resolve().parents[1] / "samples" / "01_head_replaced_after_move.py").read_text()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def measure(edits: int, every: int) -> list[tuple[int, float]]:
    client = LanguageClient("devflow-memory-bench", "1")
    waiters: dict[int, asyncio.Future] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams):
        fut = waiters.pop(params.version, None)
        if fut and not fut.done():
            fut.set_result(len(params.diagnostics))

    await client.start_io(sys.executable, "-m", "devflow", "serve")
    pid = client._server.pid  # the server process pygls started
    caps = types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)))
    await client.initialize_async(types.InitializeParams(
        capabilities=caps, initialization_options={"settings": {"debounceMs": 0}}))
    client.initialized(types.InitializedParams())
    uri = "file:///bench/memory/train.py"
    loop = asyncio.get_running_loop()

    async def published(version: int) -> int:
        fut = waiters[version] = loop.create_future()
        return await asyncio.wait_for(fut, 60)

    first = published(1)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)))
    n_diags = await first
    at = next(i for i, line in enumerate(SOURCE.split("\n")) if line.startswith("def "))
    rows = [(0, rss_mb(pid))]
    for k in range(edits):
        version = k + 2
        if k % 2 == 0:  # the same line inserted, then deleted: every other text is identical
            change = types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(at, 0), types.Position(at, 0)), text="z = torch.zeros(2)\n")
        else:
            change = types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(at, 0), types.Position(at + 1, 0)), text="")
        done = published(version)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]))
        assert await done == n_diags
        if (k + 1) % every == 0:
            rows.append((k + 1, rss_mb(pid)))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edits", type=int, default=3000)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = asyncio.run(measure(args.edits, args.every))
    print(f"devflow LSP memory: server RSS over {args.edits} identical edits ({time.perf_counter() - t0:.0f} s)")
    for n, mb in rows:
        print(f"  after {n:>5} edits: {mb:6.1f} MB")
    base = next((mb for n, mb in rows if n >= 1000), rows[0][1])
    print(f"growth from edit 1,000 to the end: {rows[-1][1] - base:+.1f} MB; from the start: {rows[-1][1] - rows[0][1]:+.1f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
