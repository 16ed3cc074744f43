# minikafka: the two commands of the quick start are `make run` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# uv may be on PATH, or only importable as a module after `pip install --user uv`.
UV := $(shell command -v uv 2>/dev/null || echo python3 -m uv)
export UV_PYTHON_DOWNLOADS := never
RUN := $(UV) run --frozen --all-packages --quiet
# Let Python keep the modules it compiles (__pycache__/, git-ignored). An environment that
# sets PYTHONDONTWRITEBYTECODE makes every process compile every module it imports from
# source again: kio's 479 protocol modules and all of minikafka, 4.3 s of a broker's
# start-up against 2.5 s with them kept (`python -m minikafka.broker --help`, median of 5,
# on the 2-core machine), paid by each broker, tool and notebook kernel the tests start.
unexport PYTHONDONTWRITEBYTECODE

PORT ?= 9092
DATA ?= ./data
# `make run` traces each run into a directory of its own under $(TRACES), named by its
# start time (UTC); `minikafka trace summary $(TRACES)` summarizes the newest (--all: each).
TRACES ?= ./traces
CLUSTER ?= ./cluster
# `make cluster CONTROLLERS=3`: a Raft quorum of three controllers (9090, 9089, 9088) and
# brokers numbered after them; it applies when the cluster is first laid out.
CONTROLLERS ?= 1
# `make cluster MODE=zk`: ZooKeeper mode (a ZooKeeper on 127.0.0.1:2181, three brokers that
# elect their controller through it); with MODE=kraft (the default) the cluster is KRaft's.
# Both apply when the cluster is first laid out (in $(CLUSTER)).
MODE ?= kraft
ifeq ($(MODE),zk)
CLUSTER_FLAGS = --zookeeper
else ifeq ($(MODE),kraft)
CLUSTER_FLAGS = --controllers $(CONTROLLERS)
else
$(error MODE must be kraft or zk, not $(MODE))
endif
# `make cluster TLS=1`: every listener (clients', brokers', controllers') speaks TLS with a
# throw-away CA under $(CLUSTER)/pki; SASL=1: SCRAM-SHA-512 logins (both: SASL_SSL). The
# client settings to use are printed and written to $(CLUSTER)/client.properties.
TLS ?=
SASL ?=
CLUSTER_FLAGS += $(if $(TLS),--tls) $(if $(SASL),--sasl)

.PHONY: help bootstrap sync run test lint typecheck pytest book book-full notebooks bench lab grade course cluster cluster-down chaos clean mypyc test-mypyc

help:
	@echo "make run    - a broker on 127.0.0.1:$(PORT) (data in $(DATA))"
	@echo "make test   - install what is missing, then lint, type-check, test and build the book"
	@echo "make lint   - ruff, ruff format --check, import-linter"
	@echo "make book   - build the book for reading (Python only; cells that need Java, ZooKeeper"
	@echo "              or broker processes say they run in the full build)"
	@echo "make book FULL=1 - the full build (make book-full): every cell, then each page in Chromium"
	@echo "make notebooks - the book's chapters and labs as notebooks in ./notebooks, run and ready"
	@echo "make bench  - run the benchmarks under bench/"
	@echo "make mypyc  - the optional build: the hot sans-IO modules compiled with mypyc (build/mypyc);"
	@echo "              MINIKAFKA_BUILD=mypyc make run|bench|pytest|cluster runs on it"
	@echo "make test-mypyc - build it, then the log's and the network's tests and the fuzz suite on it"
	@echo "make lab N  - check your work on lab N (labs/NN-*); EX=name for one exercise"
	@echo "make grade  - every lab's checks against your work, as a score table"
	@echo "make course DEST=dir - a learner's checkout (no answers) in dir"
	@echo "make run LAB=N - the broker running your code of build lab N in place of its own"
	@echo "make cluster - a controller and three brokers on 127.0.0.1:9092-9094 (data in $(CLUSTER));"
	@echo "               CONTROLLERS=3 for a Raft quorum of controllers on 9090, 9089, 9088;"
	@echo "               MODE=zk for ZooKeeper mode (ZooKeeper on 2181, brokers 0-2 on 9092-9094)"
	@echo "               TLS=1 and/or SASL=1: every listener SSL, SASL_PLAINTEXT or SASL_SSL (a throw-away CA)"
	@echo "make cluster-down - stop them (brokers first, under controlled shutdown)"
	@echo "make chaos  - a seeded chaos run (kills, pauses) with real clients, then its checker;"
	@echo "              DURATION=300 SEED=N MODE=kraft|zk CONTROLLERS=1|3 FAULTS=k,..."
	@echo "              LINKS=auto|namespaces|proxies (chaos/README.md; partitions are between"
	@echo "              namespaces as root, else on TCP fault proxies; disk-full needs root)"

# What each target needs from the system beyond uv and the workspace (scripts/bootstrap.sh
# installs what is missing): a learner running the broker, the book or a lab installs only
# that; `make test` installs everything the tests use. Prerequisites inherit the value.
NEEDS :=
# `make book EDITION=instructor` prints the labs' reference answers (book/_ext/edition.py).
EDITION ?= student
test pytest: NEEDS := kcat java zookeeper chromium reference librdkafka-tests
# `make book` is the reader build: only the Python workspace (book/_ext/reader.py leaves
# out the cells that need Java, ZooKeeper or broker processes, and the page check).
# FULL=1 (and `make test`) is the full build: every cell, then the page check.
FULL ?=
book: NEEDS = $(if $(FULL),java zookeeper chromium reference)
lab: NEEDS := java kcat
cluster: NEEDS := $(if $(filter zk,$(MODE)),zookeeper)

bootstrap:
	@scripts/bootstrap.sh $(NEEDS)

# The optional mypyc build (scripts/build_mypyc.py): the hot, typed, sans-IO modules (the
# batch header, the record checks, framing, request headers, the bounds check's helpers)
# compiled to C extensions in build/mypyc/, beside a copy of the rest of their packages
# (minikafka.log, minikafka.net); the source tree stays pure Python, what the book shows
# and what runs by default. MINIKAFKA_BUILD=mypyc puts the build first on PYTHONPATH for
# run, bench, pytest and cluster (and builds it when a source file is newer); the broker
# processes they start inherit it, and each benchmark names the build it measured.
MINIKAFKA_BUILD ?= pure
MYPYC_DIR := $(CURDIR)/build/mypyc
MYPYC_MANIFEST := $(MYPYC_DIR)/manifest.json
MYPYC_SOURCES := $(wildcard packages/log/src/minikafka/log/*.py packages/net/src/minikafka/net/*.py packages/net/src/minikafka/net/_zk_schemas/*) scripts/build_mypyc.py
ifeq ($(MINIKAFKA_BUILD),mypyc)
run bench pytest cluster: export PYTHONPATH := $(MYPYC_DIR)$(if $(PYTHONPATH),:$(PYTHONPATH))
run bench pytest cluster: $(MYPYC_MANIFEST)
else ifneq ($(MINIKAFKA_BUILD),pure)
$(error MINIKAFKA_BUILD must be pure or mypyc, not $(MINIKAFKA_BUILD))
endif

$(MYPYC_MANIFEST): $(MYPYC_SOURCES) | sync
	@scripts/bootstrap.sh mypyc
	$(RUN) python scripts/build_mypyc.py

mypyc: $(MYPYC_MANIFEST)

# Both builds pass the same tests: the compiled modules' packages' tests, and the fuzz
# suite's brokers (which inherit PYTHONPATH), on the build (scripts/build_mypyc.py --check
# first: the build is current and is what imports). Not part of `make test`: it needs a C
# compiler and Python's headers, and the whole of it took 3.7 min (220 s: the build 50 s,
# the tests 127 s) on the two-core machine under other sessions' load (README).
test-mypyc: export PYTHONPATH := $(MYPYC_DIR)$(if $(PYTHONPATH),:$(PYTHONPATH))
test-mypyc: $(MYPYC_MANIFEST)
	$(RUN) python scripts/build_mypyc.py --check
	$(PYTEST) -n $(PYTEST_WORKERS) --dist loadgroup packages/log/tests packages/net/tests tests/fuzz $(PYTEST_ARGS)

# --compile-bytecode: the environment's modules compiled once, on both cores, when they are
# installed (16 s on the 2-core machine; a sync with nothing to do stays under a second),
# rather than by each of the first test run's workers at its first import of them (each
# paid about 12 s of CPU collecting the tests with nothing compiled).
sync: bootstrap
	@$(UV) sync --frozen --all-packages --quiet --compile-bytecode

# A single-node broker (KRaft combined mode) for any Kafka client; Ctrl-C stops it cleanly
# (and writes out the last of its trace events).
# LAB=N: the broker runs the code you wrote for build lab N (labs/switch).
LAB_ENV = $(if $(filter-out lab,$(firstword $(MAKECMDGOALS))),$(if $(LAB),$(shell $(RUN) python -m minikafka.labs switch $(LAB))))
run: sync
	@mkdir -p $(DATA)
	$(LAB_ENV) $(RUN) minikafka broker --override listeners=PLAINTEXT://127.0.0.1:$(PORT) --override log.dirs=$(DATA) \
		--trace-dir $(TRACES)/$$(date -u +%Y%m%dT%H%M%SZ)

lint: sync
	$(RUN) ruff check .
	$(RUN) ruff format --check .
	$(RUN) lint-imports
	$(RUN) python scripts/check_no_issue_numbers.py

typecheck: sync
	$(RUN) mypy conftest.py packages/*/src packages/*/tests tests labs/src labs/tests labs/conftest.py labs/switch/sitecustomize.py $(wildcard bench/*.py) $(wildcard chaos/*.py) $(wildcard reference/*.py) $(wildcard scripts/*.py) book/_ext/excerpt.py book/_ext/edition.py book/_ext/lab_answers.py book/_ext/reader.py book/_ext/reader_guard.py book/_ext/parallel.py
	@# The book's figure modules import diagrams from book/.
	MYPYPATH=book $(RUN) mypy book/diagrams.py book/raft_figures.py book/replication_figures.py book/broker_figures.py book/client_figures.py book/bench_goals.py
	@# Each lab's modules are checked on their own: every lab has a scenario.py.
	@for lab in $(wildcard labs/[0-9][0-9]-*); do $(RUN) mypy $$lab/*.py || exit 1; done

# The tests run on PYTEST_WORKERS pytest-xdist workers (they mostly wait on processes and
# sockets, so more workers than the two cores), then those marked serial on SERIAL_WORKERS,
# each module whole on one worker (conftest.py says which and why; SERIAL_WORKERS=1: one
# after another). In both runs the groups known to take minutes start first, longest
# first (conftest.py's LONGEST_FIRST, from MINIKAFKA_TEST_TIMES=FILE's per-test times:
# keep it in order as tests are added), so no worker runs a long one alone at the end
# (the last fresh run's times scheduled again: the serial run's groups end on its two
# workers at 830 and 849 s of their tests' own time, 755 and 773 with what was cut
# since; an earlier run's, in xdist's own order, the groups with most tests first,
# ended them at 745 and 865, the chaos run and the soak last on one worker). A fresh
# clone's whole `make test` took 31.1 min on the 2-core machine before that cut (the
# non-serial run 648 s, the serial run 992 s);
# PYTEST_WORKERS=0 runs them all in one process. PYTEST_ARGS go to both
# runs (paths, -k, -x). Each run ends with its ten slowest tests; pytest's exit 5
# (nothing collected: no serial test among the paths) is not a failure. The two runs go
# one after the other: the serial tests' clusters take every cycle they are given (their
# producers write as fast as they may), so the other run beside them, even under
# `nice -n 19`, starves (JVMs miss their fixtures' two-minute timeout).
PYTEST_WORKERS ?= 4
SERIAL_WORKERS ?= 2
PYTEST_ARGS ?=
PYTEST = $(RUN) pytest -q --durations=10
pytest: sync
ifeq ($(PYTEST_WORKERS),0)
	$(PYTEST) $(PYTEST_ARGS)
else
	@status=0; \
	$(RUN) python -m compileall -q -j 0 conftest.py packages labs chaos tests reference bench; \
	echo "pytest: the tests not marked serial, on $(PYTEST_WORKERS) workers"; \
	$(PYTEST) -n $(PYTEST_WORKERS) --dist loadgroup -m "not serial" $(PYTEST_ARGS) || { s=$$?; [ $$s -eq 5 ] || status=$$s; }; \
	echo "pytest: the serial tests, each module whole, on $(SERIAL_WORKERS) workers"; \
	$(PYTEST) $(if $(filter-out 0 1,$(SERIAL_WORKERS)),-n $(SERIAL_WORKERS) --dist loadgroup) -m serial $(PYTEST_ARGS) || { s=$$?; [ $$s -eq 5 ] || status=$$s; }; \
	exit $$status
endif

book: sync
	@# A chapter that names a module, function or configuration key that does not exist,
	@# or shows a listing over 40 lines unfolded.
	$(RUN) python scripts/check_book_names.py
	$(RUN) python scripts/check_listings.py
	rm -rf book/_build
	MINIKAFKA_BOOK=$(if $(FULL),full,reader) MINIKAFKA_EDITION=$(EDITION) $(RUN) python scripts/build_book.py build book --warningiserror --nitpick --keep-going
	@# Each page in headless Chromium at 1280 px: nothing wider than the page, no stderr.
	$(if $(FULL),$(RUN) python scripts/check_pages.py,@echo "book: the reader build; make book FULL=1 runs every cell and checks the pages in Chromium")
	@# The student edition prints no rebuild lab's answer (book/_ext/lab_answers.py).
	$(if $(filter student,$(EDITION)),$(RUN) python scripts/check_student_edition.py)

book-full:
	@$(MAKE) --no-print-directory book FULL=1

# Every chapter and lab page as the notebook the book's build executed (outputs kept), in
# ./notebooks (git-ignored), laid out as book/ is, so a cell's relative paths still hold;
# `make notebooks FULL=1` for the full build's (the reader build's leave some cells unrun).
# Open them in the workspace's kernel: uv run --all-packages --with jupyterlab jupyter lab notebooks
notebooks: book
	rm -rf notebooks
	mkdir -p notebooks
	cd book/_build/jupyter_execute && find . -name '*.ipynb' -exec cp --parents {} ../../../notebooks/ \;
	@echo "notebooks: $$(find notebooks -name '*.ipynb' | wc -l) in ./notebooks"

# The trace labs' tests keep their scenario runs, and the book's lab pages reuse them: each
# scenario runs once per `make test`, and the book shows the run the checks passed on. So
# lint (seconds) and the tests go first, then mypy beside the book's build: the book waits
# on its notebooks' kernels and mypy runs on one core, so together they fill two cores.
test: export MINIKAFKA_LAB_RUNS = $(CURDIR)/labs/.runs/make-test
test: FULL := 1
test: lint pytest
	@$(MAKE) --no-print-directory -j2 --output-sync=target FULL=1 typecheck book
book: export MINIKAFKA_LAB_REUSE = $(if $(MINIKAFKA_LAB_RUNS),1)

bench: NEEDS := reference
bench: sync
	$(RUN) python -m bench

# `make lab 8`: the number is a second goal; take it as the lab's number and make it a no-op.
ifeq (lab,$(firstword $(MAKECMDGOALS)))
LAB := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
$(eval $(LAB):;@:)
endif

# Checks your work on lab N (labs/NN-*): a trace lab's exercises.py, or the code a build
# lab has you write, switched in for minikafka's own. EX=name checks one exercise;
# REUSE=1 reuses a trace lab's last scenario run (labs/.runs/) instead of running it again.
EX ?=
REUSE ?=
lab: sync
	@if [ -z "$(LAB)" ]; then echo "usage: make lab N [EX=name]   (labs: $$($(RUN) python -m minikafka.labs list | cut -d' ' -f1 | tr '\n' ' '))" >&2; exit 2; fi
	@$(RUN) python -m minikafka.labs run $(LAB) $(if $(EX),--exercise $(EX)) $(if $(REUSE),--reuse)

# Every exercise of every lab against your files, as a score table.
grade: NEEDS := java kcat
grade: sync
	@$(RUN) python -m minikafka.labs grade

# A learner's checkout in DEST: the repository without labs/instructor/ (the labs'
# answers and wrong answers), as a teacher hands it out.
DEST ?=
course:
	@if [ -z "$(DEST)" ]; then echo "usage: make course DEST=dir" >&2; exit 2; fi
	@scripts/course_checkout.sh $(DEST)

# One controller (127.0.0.1:9090) and three brokers (9092-9094), data, logs and traces
# under ./cluster/; `minikafka cluster status|kill N|restart N|down` manage it after.
cluster: sync
	@$(RUN) minikafka cluster up --dir $(CLUSTER) $(CLUSTER_FLAGS)

cluster-down: sync
	@$(RUN) minikafka cluster down --dir $(CLUSTER)

# One chaos run (chaos/README.md): a cluster of MODE (kraft or zk; CONTROLLERS=1 or 3 in
# KRaft) laid out under CHAOS_RUNS/MODE-cCONTROLLERS-sSEED, real clients writing through
# the faults SEED's schedule draws over DURATION seconds, then the checker; a summary
# table, and exit 1 on any anomaly. SEED=N replays a run; by default a new one each time.
# FAULTS=kill,pause,kill-active-controller,partition adds partitions (between network
# namespaces as root, else on TCP fault proxies between the nodes; LINKS=proxies asks for
# the proxies, LINKS=namespaces for namespaces or a refusal); disk-full, a broker's log
# dir on a small tmpfs filled, needs root; membership adds brokers added and removed;
# CLIENTS=confluent-kafka,kafka-python,minikafka the producers' clients; CHURN=S a topic
# created, written and deleted every S seconds; TRANSACTIONS=N consume-transform-produce
# workers, transactional, from the topic to chaos-out.
DURATION ?= 300
ifndef SEED
SEED := $(shell date +%s)
endif
CHAOS_RUNS ?= ./chaos-runs
chaos: NEEDS := $(if $(filter zk,$(MODE)),zookeeper)
chaos: sync
	@$(RUN) python -m chaos run --seed $(SEED) --duration $(DURATION) --mode $(MODE) \
		--controllers $(CONTROLLERS) $(if $(FAULTS),--faults $(FAULTS)) \
		$(if $(CLIENTS),--clients $(CLIENTS)) $(if $(CHURN),--churn $(CHURN)) \
		$(if $(TRANSACTIONS),--transactions $(TRANSACTIONS)) $(if $(LINKS),--links $(LINKS)) \
		--out $(CHAOS_RUNS)/$(MODE)-c$(CONTROLLERS)-s$(SEED)

clean:
	rm -rf book/_build .mypy_cache .ruff_cache .pytest_cache build/mypyc
