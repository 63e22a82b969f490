# The verbs a newcomer needs. Every recipe runs with the project's Node.js 24
# (the npm package `node`, installed by `make setup`) first on the PATH.
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:/usr/local/go/bin:$(PATH)

.PHONY: setup deps build lint typecheck test test-unit e2e bench bench-inject bench-sets bench-webhook bench-tail bench-parse bench-controller chaos fuzz \
        cluster-build cluster-up cluster-down clean manifests demo demo-down images packages

## setup: install Node.js 24 and the dependencies, the real node's packages (as root, on Debian),
## build the local control plane and the images, build the code
setup: deps packages cluster-build images build

## packages: containerd, runc, CNI plugins, iptables, conntrack, buildah, debootstrap (e2e/cluster/packages.sh)
packages:
	@bash e2e/cluster/packages.sh

# npm itself runs on the first `node` on the PATH. When the system's is older than the project's,
# the project's Node.js (the version package-lock.json pins) is fetched first into .bootstrap/,
# so that `npm ci` runs on it and prints no engine warning.
BOOTSTRAP := $(CURDIR)/.bootstrap
deps:
	@if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 24 ? 0 : 1)' 2>/dev/null; then \
	  version=$$(sed -n '/"node_modules\/node": {/,/}/s/.*"version": "\(.*\)".*/\1/p' package-lock.json | head -1); \
	  echo "the system's Node.js is older than 24: fetching Node.js $$version for npm first"; \
	  npm install --prefix $(BOOTSTRAP) --no-save --no-package-lock --no-audit --no-fund --loglevel=error node@$$version; \
	fi
	PATH=$(BOOTSTRAP)/node_modules/.bin:$$PATH npm ci --no-audit --no-fund

build:
	npm run build

typecheck:
	npm run typecheck

## lint: eslint (type-aware), prettier, and the TypeScript compiler
lint: typecheck
	npm run lint

## test: lint and typecheck, every unit suite, then the end-to-end suites on the local control plane
test: lint test-unit e2e

test-unit:
	# One worker per core: jest's default on two cores is one, and the suites mostly wait
	npx jest --selectProjects shared kube testkit webhook controller cli --passWithNoTests --maxWorkers=2

e2e:
	npx jest -c e2e/jest.config.js --runInBand

bench: bench-inject bench-webhook

bench-inject: build
	node shared/dist/bench/inject.bench.js

## bench-sets: what the sidecar sets' waves add to a controller wave step's planning (BENCH_OWNERS, default 2000)
bench-sets: build
	node shared/dist/bench/set-waves.bench.js

cluster-build:
	bash e2e/cluster/build.sh

## images: the real node's images, built by buildah into ~/.cache/outrigger/images (pause, demo proxy, CoreDNS, Outrigger from the Dockerfile); prints Outrigger's reference
images: packages
	@bash e2e/cluster/images.sh

## demo: the local control plane, Outrigger installed from the chart, a namespace opted in and a wave (README)
demo: cluster-build images build
	node e2e/dist/demo/demo.js

## demo-down: stop the demo's processes and the local control plane
demo-down:
	-for f in $${OUTRIGGER_CACHE:-$$HOME/.cache/outrigger}/demo/*.pid; do p="$$(cat "$$f" 2>/dev/null)"; case "$$p" in ''|0|-*|*[!0-9]*) ;; *) kill "$$p" 2>/dev/null;; esac; rm -f "$$f"; done
	bash e2e/cluster/down.sh

## manifests: render manifests/install.yaml from the Helm chart (e2e/test/install.test.ts keeps them in sync)
manifests: cluster-build
	bash manifests/render.sh

cluster-up:
	bash e2e/cluster/up.sh

cluster-down:
	bash e2e/cluster/down.sh

clean:
	rm -rf */dist

bench-webhook: build
	node webhook/dist/bench/webhook.bench.js

## bench-tail: the webhook's p99 over a bare HTTPS server's, at 1,000 req/s and at 80 % of the bare server's saturation (BENCH_ROUNDS, default 6)
bench-tail: build
	node webhook/dist/bench/tail.js

## bench-parse: what one body of up to 64 KiB costs the main thread to parse, by shape (nested, side by side, realistic)
bench-parse: build
	node webhook/dist/bench/parse-cost.js

## fuzz: 100,000 hostile and valid requests (FUZZ_REQUESTS) against the webhook binary; prints its figures
fuzz: build
	node webhook/dist/bench/fuzz.js

## bench-controller: the controller at BENCH_SIZES workloads (default 1000,5000,10000) on the local control plane
bench-controller: build
	node e2e/dist/bench/controller.bench.js

## chaos: the controller's chaos loop for CHAOS_MINUTES (default 10): leader kills, API server restarts, a refused owner
chaos: cluster-build build
	node e2e/dist/bench/chaos.js
