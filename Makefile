# make run   - create .venv if missing, install, run the main job on 8 ranks
# make test  - same venv, run the test suite
# make docs  - the manual (docs/, mkdocs.yml) built into site/, any warning an error
#
# MPI=embedded (default) installs Open MPI 5 from PyPI; MPI=mpich installs the MPICH
# wheel from PyPI into .venv-mpich (its own environment: mpi4py loads the MPI it finds);
# MPI=site builds mpi4py against the mpicc found on PATH (a cluster's own MPI, Open MPI
# or any of the MPICH family).

PYTHON ?= python3
MPI ?= embedded
ifeq ($(MPI),mpich)
VENV ?= .venv-mpich
endif
VENV ?= .venv
NP ?= 8
# Empty: every run gets a fresh mpibench-out/<UTC time>-<kind>-seed<S>/ (and mpibench-out/latest).
OUT ?=
# The repeated-run tests (marker slow, minutes each) run with `make test-slow`.
# Two pytest workers: most tests wait on an mpirun job, so two at a time take half the time of
# one at a time on 2 cores. Single tests are spread (--dist loadgroup), so no long file bounds
# the run; tests sharing a module-scoped fixture stay on one worker (tests/conftest.py). More
# workers would oversubscribe the ranks of the 8-rank jobs further; PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?= -m "not slow" --durations=15 $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadgroup)

BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP := $(VENV)/.installed-$(MPI)

ifeq ($(MPI),embedded)
EXTRAS := test,docs,embedded-mpi
MPIRUN := $(BIN)/mpirun
# Oversubscribe: 8 ranks on a laptop with fewer cores; ULFM: the kill scenarios.
# state_base_recoverable: a respawned replacement that a later scenario kills is a
# recoverable failure, not one that makes mpirun exit 137 after a clean run.
MPIRUN_FLAGS ?= --oversubscribe --with-ft ulfm --prtemca state_base_recoverable 1
else ifeq ($(MPI),mpich)
# MPICH's hydra starts more ranks than cores as is; this MPI has no process-fault
# tolerance here, so the job leaves the kill and cut cases out and exits 4 (partial).
EXTRAS := test,docs,mpich-mpi
MPIRUN := $(BIN)/mpiexec
MPIRUN_FLAGS ?=
else
EXTRAS := test,docs
MPIRUN ?= mpirun
MPIRUN_FLAGS ?=
endif

ifeq ($(shell id -u),0)
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
endif
# Idle ranks yield the CPU: without it, more ranks than cores run hundreds of times slower.
export OMPI_MCA_mpi_yield_when_idle ?= 1
export MPIBENCH_MPIEXEC ?= $(abspath $(MPIRUN)) $(MPIRUN_FLAGS)

.PHONY: run test test-slow bench sweep soak venv clean system-deps docs

# Debian packages the full test suite needs: headless Chromium for the report's
# browser test; munge + Slurm daemons for the job-script tests; iproute2, nftables and
# util-linux (unshare) for the multi-host testbed (hosts as network namespaces); SimGrid
# (libsimgrid-dev: smpicc, smpirun; python3-simgrid) for the SMPI cross-check of predict.
SYSTEM_PACKAGES ?= chromium slurmctld slurmd slurm-client munge libpmix-dev iproute2 nftables util-linux libsimgrid-dev python3-simgrid


venv: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
ifeq ($(MPI),site)
	$(PY) -m pip install -q --force-reinstall --no-deps --no-binary=mpi4py mpi4py
endif
	touch $@

# The launcher's exit status is not the verdict (mpirun can exit 0 after a violation
# under ULFM): bad usage (2) stops here, otherwise the checker's verdict is the status,
# and a pass of a job that left cases out (4: the launch could not run them) stays 4.
# A launch that ended with a status none of the job's own (0-4) before the job wrote its
# run.json began nothing (Open MPI: "The PMIx server's listener thread failed to start",
# exit 213, under load): it is tried again after 2 s and after 6 s more
# (MPIBENCH_LAUNCH_RETRY_PAUSES_S), one line each; three times is "could not run" (3).
# File times lag the clock by up to a tick, so the mark the run.json must be newer than is
# set 1 s back (a run.json written that fast by the job would otherwise look old).
RETRY_PAUSES_S = $(or $(MPIBENCH_LAUNCH_RETRY_PAUSES_S),2 6)
RUN_JOB = $(MPIRUN) -n $(NP) $(MPIRUN_FLAGS) $(PY) -m mpibench $(if $(OUT),--out $(OUT)) </dev/null
run: $(STAMP)
	@status=0; since=$$(mktemp); out='$(or $(OUT),mpibench-out/latest)'; \
	touch -d "$$(date -d '-1 second' '+%Y-%m-%d %H:%M:%S.%N' 2>/dev/null)" $$since 2>/dev/null; \
	unbegun() { [ $$status -gt 4 ] && [ -z "$$(find "$$out/run.json" -newer $$since 2>/dev/null)" ]; }; \
	$(RUN_JOB) || status=$$?; \
	for pause in $(RETRY_PAUSES_S); do if unbegun; then \
		echo "make run: the launcher ended with status $$status before the job began (no run.json was written); trying again in $$pause s" >&2; \
		sleep $$pause; status=0; $(RUN_JOB) || status=$$?; fi; done; \
	if unbegun; then rm -f $$since; \
		echo "make run: could not run: the launcher ended with status $$status before the job began, three times" >&2; exit 3; fi; \
	rm -f $$since; \
	if [ $$status = 2 ]; then exit 2; fi; \
	$(PY) -m mpibench check --confirm $(or $(OUT),mpibench-out/latest) || exit $$?; \
	if [ $$status = 4 ]; then exit 4; fi

# The system packages first (quick when present; as root, apt-get installs what is missing),
# and the MPICH environment the launch-matrix tests run under (.venv-mpich, from PyPI):
# tests that still lack something are named with the reason in pytest's closing summary.
test: $(STAMP)
	-@$(MAKE) --no-print-directory system-deps
	-@$(MAKE) --no-print-directory venv MPI=mpich
	$(PY) -m pytest $(PYTEST_ARGS)

# The manual, with the CLI reference generated from the click commands (mkdocs-click) and
# the measured tables it shows read from their CSV files. make test builds it too
# (tests/test_docs_site.py), and runs every shell block of it (tests/test_doc_commands.py).
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

test-slow: $(STAMP)
	$(PY) -m pytest -m slow

bench: $(STAMP)
	$(MPIRUN) -n $(NP) $(MPIRUN_FLAGS) $(PY) -m mpibench bench $(if $(OUT),--out $(OUT))

# Installs SYSTEM_PACKAGES with apt-get when running as root and any is missing.
system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "system packages present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "missing system packages (tests that need them skip): $$missing"; fi

sweep: $(STAMP)
	$(PY) -m mpibench sweep $(if $(OUT),--out $(OUT)) $(SWEEP_ARGS)

# Long-haul: swarm cases (random schedule, strategy, recovery, knobs) until SOAK_MIN minutes pass.
SOAK_MIN ?= 10
soak: $(STAMP)
	$(PY) -m mpibench sweep --swarm --time-budget $(SOAK_MIN) --workers 2,3,4,5,8 --jobs 2 \
		$(if $(OUT),--out $(OUT)/soak) $(SOAK_ARGS)

clean:
	rm -rf $(VENV) mpibench-out $(OUT) build site *.egg-info
