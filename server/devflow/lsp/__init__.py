"""devflow's language server (pygls 2 + lsprotocol): `devflow serve` / `python -m devflow.lsp`."""
