# The two set-up commands: `make serve` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint bench clean compat-peers

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/logwright serve --data-dir ./data --listen 127.0.0.1:9092

test: $(STAMP)
	$(BIN)/python -m pytest -q

# kafka-python's own integration suite against a logwright broker (sdist fetched into peers/.cache).
$(VENV)/.peers-installed: $(STAMP)
	$(BIN)/pip install -q -e '.[test,peers]'
	touch $@

compat-peers: $(VENV)/.peers-installed
	$(BIN)/python peers/kafka_python.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python tools/typecheck.py

bench: $(STAMP)
	$(BIN)/python bench/eventstore.py

clean:
	rm -rf $(VENV) build *.egg-info
