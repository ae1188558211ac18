# Dry run (server/devflow/dryrun): its tests run under test-python (tests/python/dryrun, pytest);
# this target measures its cost against plain cpu runs of the same scripts.

.PHONY: bench-dryrun

bench-dryrun: setup-test
	$(BIN)/python bench/dryrun.py
