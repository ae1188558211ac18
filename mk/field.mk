# Precision on real application code (issue 11): bench/field.py checks the repositories of
# bench/field.txt (and the held-out bench/field_holdout.txt) from local checkouts; it never downloads.
# bench/field_fetch.md says how the checkouts are made.
#   make bench-field FIELD=/work/field_checkouts [FIELD_ARGS="--brief --repo karpathy/nanoGPT"]
#   make bench-field-holdout FIELD=/work/field_checkouts
#   make bench-field-holdout2 FIELD=...   (the second held-out field, bench/field_holdout2.txt)
#   make bench-field-holdout3 FIELD=...   (a third, fresh after holdout2's fixes: bench/field_holdout3.txt)
#   make bench-field-holdout4 FIELD=...   (a fourth, session 13: bench/field_holdout4.txt)
#   make field-checkouts MIRROR=/work/.mirror FIELD=...   (extract the pinned commits from git directories)

.PHONY: bench-field bench-field-holdout bench-field-holdout2 bench-field-holdout3 bench-field-holdout4 field-checkouts

FIELD ?= $(CACHE)/field
FIELD_ARGS ?=
MIRROR ?=

bench-field: setup
	$(BIN)/python bench/field.py $(FIELD) $(FIELD_ARGS)

bench-field-holdout: setup
	$(BIN)/python bench/field.py $(FIELD) --field bench/field_holdout.txt $(FIELD_ARGS)

bench-field-holdout2: setup
	$(BIN)/python bench/field.py $(FIELD) --field bench/field_holdout2.txt $(FIELD_ARGS)

bench-field-holdout3: setup
	$(BIN)/python bench/field.py $(FIELD) --field bench/field_holdout3.txt $(FIELD_ARGS)

bench-field-holdout4: setup
	$(BIN)/python bench/field.py $(FIELD) --field bench/field_holdout4.txt $(FIELD_ARGS)

field-checkouts:
	@test -n "$(MIRROR)" || { echo "MIRROR=<folder with the repositories' git directories> is required (bench/field_fetch.md)"; exit 2; }
	python3 bench/field_fetch.py --mirror $(MIRROR) --out $(FIELD)
	python3 bench/field_fetch.py --mirror $(MIRROR) --out $(FIELD) --field bench/field_holdout.txt
	python3 bench/field_fetch.py --mirror $(MIRROR) --out $(FIELD) --field bench/field_holdout2.txt
	python3 bench/field_fetch.py --mirror $(MIRROR) --out $(FIELD) --field bench/field_holdout3.txt
	python3 bench/field_fetch.py --mirror $(MIRROR) --out $(FIELD) --field bench/field_holdout4.txt
