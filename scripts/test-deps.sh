#!/usr/bin/env bash
# What the test suites need from the machine beyond npm's packages, in one place: `npm test`
# and .ci/run both run this first. Missing Debian packages are installed when this runs as
# root with apt; otherwise it stops before any suite starts and prints the one command to run.
# (A command here is what a suite runs: the PostgreSQL fence starts its own servers, the
# status-page and browser tests drive headless Chromium, the security tests make
# certificates with openssl, the deployment test makes network namespaces with ip, the
# README's curl story needs curl and jq, the clients' tests build Go and install Python into
# a fresh virtualenv offline, and the alert test runs Prometheus and promtool.)
set -euo pipefail

# command-or-test : Debian package
need=(
  "initdb|ls /usr/lib/postgresql/*/bin/initdb:postgresql"
  "chromium:chromium"
  "openssl:openssl"
  "ip:iproute2"
  "curl:curl"
  "jq:jq"
  "go:golang-go"
  "mypy:mypy"
  "promtool:prometheus"
  "ls /usr/share/python-wheels/wheel-*.whl:python3-wheel-whl"
  "python3 -c 'import venv, ensurepip':python3-venv"
  "python3 -c 'import setuptools':python3-setuptools"
)

has() {
  local probe=$1 alt
  IFS='|' read -r probe alt <<<"$1"
  if [[ "$probe" == *" "* ]]; then eval "$probe" >/dev/null 2>&1 && return 0; else command -v "$probe" >/dev/null 2>&1 && return 0; fi
  [ -n "${alt:-}" ] && eval "$alt" >/dev/null 2>&1
}

# TEST_DEPS_EXTRA adds "probe:package" entries (its test checks the refusal with one).
[ -n "${TEST_DEPS_EXTRA:-}" ] && need+=("$TEST_DEPS_EXTRA")
missing=()
for entry in "${need[@]}"; do
  pkg=${entry##*:}
  probe=${entry%:*}
  has "$probe" || missing+=("$pkg")
done
# systemd-analyze checks the unit file when present; its test says it skipped otherwise.
command -v systemd-analyze >/dev/null 2>&1 || optional=(systemd)

[ ${#missing[@]} -eq 0 ] && [ -z "${optional:-}" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: installing ${missing[*]} ${optional[*]:-}" >&2
  apt-get update -qq >/dev/null
  [ ${#missing[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  [ -z "${optional:-}" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null || true
  exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "The tests need these Debian packages, which are not installed: ${missing[*]}" >&2
echo "Install them, then run the tests again:" >&2
echo "  sudo apt-get install -y ${missing[*]}" >&2
exit 1
