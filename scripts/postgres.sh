#!/usr/bin/env bash
# PostgreSQL for the fence tests and benchmark, which start throwaway servers of their own.
#
#   scripts/postgres.sh ensure   install the server binaries (Debian package postgresql) if missing
#   scripts/postgres.sh serve    start a throwaway server in a temp dir and print its URL;
#                                Ctrl-C stops it and deletes its data
set -euo pipefail
cd "$(dirname "$0")/.."

have_binaries() {
  command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

case "${1:-}" in
  ensure)
    if have_binaries; then
      echo "PostgreSQL server binaries present"
    else
      apt-get update
      DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql
    fi
    ;;
  serve)
    exec node --import tsx test/support/postgres.ts
    ;;
  *)
    echo "usage: $0 ensure|serve" >&2
    exit 2
    ;;
esac
