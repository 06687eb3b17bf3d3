#!/usr/bin/env bash
# Installs FerretDB 1.24.0 (MongoDB wire protocol on SQLite) into $(go env GOPATH)/bin when no
# usable mongod/ferretdb is present. Used by .ci/run; safe to run again (a working binary is kept).
#
# Why not just `go install …@v1.24.0`: on this network the Go proxy refuses the module's version
# list (`@v/list: 403`), which `go install` reads for deprecation notices, and a binary built from
# the module cache panics at start because build/version/version.txt is generated upstream and not
# part of the module. So: download the module, copy it to a writable folder, write version.txt,
# build there (the Go build cache makes a second build take seconds).
#
# One-line fix applied to the source (docs/ferretdb.md): FerretDB 1.24's SQLite backend creates the
# `_id` index on `_ferretdb_sjson->"_id"` but filters on `_ferretdb_sjson->'$._id'`, a different
# expression, so SQLite never uses the index: every find/update/delete by `_id` scans the whole
# table (3.4 s per update at 40k resources). The fix makes the filter use the index's expression
# (same value, same semantics; upstream's PostgreSQL twin of the bug: FerretDB issue #4646).
# The patched build reports version $VERSION-$PATCH; an unpatched binary in GOPATH/bin is rebuilt.
set -euo pipefail
VERSION=v1.24.0
PATCH=fhir.1
BIN_DIR="$(go env GOPATH)/bin"
BIN="$BIN_DIR/ferretdb"

works() { "$1" --version >/dev/null 2>&1; }
patched() { "$1" --version 2>/dev/null | grep -q -- "$VERSION-$PATCH"; }

if [ -n "${FERRETDB_BIN:-}" ] && works "$FERRETDB_BIN"; then echo "ferretdb: using FERRETDB_BIN=$FERRETDB_BIN"; exit 0; fi
if command -v ferretdb >/dev/null 2>&1 && patched "$(command -v ferretdb)"; then echo "ferretdb: found on PATH"; exit 0; fi
if [ -x "$BIN" ] && patched "$BIN"; then echo "ferretdb: found $BIN ($VERSION-$PATCH)"; exit 0; fi

start=$(date +%s)
dir=$(go mod download -json "github.com/FerretDB/FerretDB@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { echo "ferretdb: go mod download failed" >&2; exit 1; }
work=$(mktemp -d)
cp -r "$dir/." "$work/"
chmod -R u+w "$work"
echo "$VERSION-$PATCH" > "$work/build/version/version.txt"
metadata="$work/internal/backends/sqlite/metadata/metadata.go"
sed -i "s|IDColumn = DefaultColumn + \"->'\\$._id'\"|IDColumn = DefaultColumn + \"->\\\\\"_id\\\\\"\"|" "$metadata"
grep -q 'IDColumn = DefaultColumn + "->\\"_id\\""' "$metadata" || { echo "ferretdb: the _id index fix did not apply" >&2; exit 1; }
mkdir -p "$BIN_DIR"
(cd "$work" && go build -o "$BIN" ./cmd/ferretdb)
rm -rf "$work"
works "$BIN" || { echo "ferretdb: built binary does not start" >&2; exit 1; }
echo "ferretdb: built $VERSION-$PATCH from source in $(( $(date +%s) - start ))s"
