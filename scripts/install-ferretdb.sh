#!/usr/bin/env bash
# Installs FerretDB 1.24.0 (MongoDB wire protocol on SQLite) into $(go env GOPATH)/bin when no
# usable mongod/ferretdb is present. Used by .ci/run; safe to run again (a working binary is kept).
#
# Why not just `go install …@v1.24.0`: on this network the Go proxy refuses the module's version
# list (`@v/list: 403`), which `go install` reads for deprecation notices, and a binary built from
# the module cache panics at start because build/version/version.txt is generated upstream and not
# part of the module. So: download the module, copy it to a writable folder, write version.txt,
# build there (the Go build cache makes a second build take seconds).
set -euo pipefail
VERSION=v1.24.0
BIN_DIR="$(go env GOPATH)/bin"
BIN="$BIN_DIR/ferretdb"

works() { "$1" --version >/dev/null 2>&1; }

if [ -n "${FERRETDB_BIN:-}" ] && works "$FERRETDB_BIN"; then echo "ferretdb: using FERRETDB_BIN=$FERRETDB_BIN"; exit 0; fi
if command -v ferretdb >/dev/null 2>&1 && works "$(command -v ferretdb)"; then echo "ferretdb: found on PATH"; exit 0; fi
if [ -x "$BIN" ] && works "$BIN"; then echo "ferretdb: found $BIN"; exit 0; fi

start=$(date +%s)
if go install "github.com/FerretDB/FerretDB/cmd/ferretdb@$VERSION" 2>/tmp/ferretdb-go-install.log && works "$BIN"; then
  echo "ferretdb: go install $VERSION in $(( $(date +%s) - start ))s"; exit 0
fi
echo "ferretdb: go install failed or gave an unusable binary ($(tail -n 1 /tmp/ferretdb-go-install.log)); building from the module source"
dir=$(go mod download -json "github.com/FerretDB/FerretDB@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { echo "ferretdb: go mod download failed" >&2; exit 1; }
work=$(mktemp -d)
cp -r "$dir/." "$work/"
chmod -R u+w "$work"
echo "$VERSION" > "$work/build/version/version.txt"
mkdir -p "$BIN_DIR"
(cd "$work" && go build -o "$BIN" ./cmd/ferretdb)
rm -rf "$work"
works "$BIN" || { echo "ferretdb: built binary does not start" >&2; exit 1; }
echo "ferretdb: built $VERSION from source in $(( $(date +%s) - start ))s"
