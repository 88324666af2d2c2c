# Sourced by the measuring scripts: starts and stops a throwaway engram.
# Needs $work (a scratch directory) and $engram (the binary to run).

server=

# The release binaries to measure: $ENGRAM_BIN and $LOADTESTS_BIN when both
# are given (e.g. built from another commit), else this tree's, built now.
release_binaries() {
  if [ -z "${ENGRAM_BIN:-}" ] || [ -z "${LOADTESTS_BIN:-}" ]; then
    cargo build --release --quiet -p engram -p loadtests
  fi
  engram=${ENGRAM_BIN:-target/release/engram}
  loadtests=${LOADTESTS_BIN:-target/release/loadtests}
}

stop() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  server=
}

# Starts engram on a new database in $work/$1; sets $url.
start() {
  stop
  mkdir -p "$work/$1"
  ENGRAM_LISTEN=127.0.0.1:0 ENGRAM_DB_PATH="$work/$1/engram.db" RUST_LOG=info \
    "$engram" >"$work/$1/server.log" 2>&1 &
  server=$!
  listening "$work/$1/server.log"
}

# Waits until the engram logging to $1 listens; sets $url.
listening() {
  local addr=
  for _ in $(seq 1 100); do
    addr=$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$1" | head -n 1 | cut -d= -f2 || true)
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "engram did not start:"; cat "$1"; exit 1; }
  url="http://$addr"
}
