# The two commands: `make demo` and `make test`. Both install what is missing, then build.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all deps configure build demo test test-asan test-tsan fuzz soak bench clean python

all: build

deps:
	@scripts/deps.sh

$(BUILD_DIR)/CMakeCache.txt:
	cmake -S . -B $(BUILD_DIR) $(GENERATOR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: $(BUILD_DIR)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# DE-Word2Vec on Brown, scored on the similarity set the repository carries, then gensim's score
# on the same tokens beside it (scripts/demo_peer.sh).
demo: deps build
	scripts/fetch_brown.sh $(BUILD_DIR)/data
	$(BUILD_DIR)/apps/darcy demo --corpus $(BUILD_DIR)/data/brown --checkpoint $(BUILD_DIR)/demo-checkpoint --store $(BUILD_DIR)/demo-store
	scripts/demo_peer.sh $(BUILD_DIR)

test: deps build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 300 \
	  || { $(CURDIR)/scripts/failure_summary.sh . ; exit 1; }

# The seeded random-kill soak: SEEDS seeds (default 10) of each job; figures in docs/reliability.md.
soak: deps build
	scripts/soak.sh $(BUILD_DIR) $(SEEDS)

# The whole suite under ASan + UBSan, and under TSan, each in a build directory of its own.
test-asan: deps
	scripts/sanitize.sh address

test-tsan: deps
	scripts/sanitize.sh thread

# Each libFuzzer target (tests/fuzz/) for FUZZ_SECONDS, built with clang in build-fuzz.
FUZZ_SECONDS ?= 60
fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)

# Makes Debian's /usr/bin/python3 import the package built here (docs/python.md): a .pth
# file in the user's site-packages that names $(BUILD_DIR)/python.
python: build
	@site=$$(/usr/bin/python3 -m site --user-site) && mkdir -p "$$site" && \
	  echo "$(abspath $(BUILD_DIR))/python" > "$$site/darcy.pth" && \
	  echo "python: /usr/bin/python3 imports darcy from $(abspath $(BUILD_DIR))/python"

clean:
	rm -rf $(BUILD_DIR)
