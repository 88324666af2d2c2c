#!/usr/bin/env bash
# A private PostgreSQL cluster for engram's tests, from the PostgreSQL
# binaries installed on the machine (15 or newer): made in a temporary
# directory, listening on 127.0.0.1 at a free port, trusted for local
# connections only, and removed afterwards. No system service is used.
#
#   bash tests/postgres.sh run CMD...   start a cluster, run CMD with
#                                       ENGRAM_TEST_DATABASE_URL set to it,
#                                       stop and remove the cluster; exits
#                                       with CMD's status
#   bash tests/postgres.sh start DIR    start a cluster in DIR (made if
#                                       missing) and print its URL
#   bash tests/postgres.sh stop DIR     stop it and remove DIR
#   bash tests/postgres.sh restart DIR  start its server again (after it
#                                       was killed), on the same port
#
# The cluster also speaks TLS, with a certificate for 127.0.0.1 signed by
# a test authority made with it: DIR/ca.crt (ENGRAM_TEST_DATABASE_CA
# under `run`).
#
# PG_SHARED_BUFFERS sets the cluster's shared_buffers (default 128MB; the
# load scripts give it more, as an operator would).
#
# `initdb` refuses to run as root: as root, the cluster belongs to the
# unprivileged user `engram-pg`, made when missing.
set -euo pipefail

# Returns give 0 explicitly: called from the EXIT trap after a failed command, a bare
# `return` would answer that command's status and, under `set -e`, end
# the cleanup before the cluster is stopped.
bindir() {
  local dir
  for dir in "${PG_BINDIR:-}" $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
      echo "$dir"
      return 0
    fi
  done
  if command -v initdb >/dev/null; then
    dirname "$(command -v initdb)"
    return 0
  fi
  if [ -z "${PG_INSTALLED:-}" ] && command -v apt-get >/dev/null; then
    # Debian's server package (PostgreSQL 15 on bookworm); its own
    # cluster is not used.
    echo "installing PostgreSQL (Debian's postgresql package)" >&2
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
    PG_INSTALLED=1 bindir
    return 0
  fi
  echo "no PostgreSQL server binaries (initdb, pg_ctl) found; install postgresql or set PG_BINDIR" >&2
  exit 1
}

# Runs a command as the cluster's owner.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u engram-pg -- "$@"
  else
    "$@"
  fi
}

# A certificate authority and a server certificate for 127.0.0.1 it
# signed, in DIR (the server's key readable by the cluster's owner only).
certificates() {
  local dir=$1
  if ! command -v openssl >/dev/null; then
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openssl >&2
  fi
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  as_owner openssl req -x509 "${ec[@]}" -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 7 \
    -subj "/CN=engram test authority" 2>/dev/null
  as_owner openssl req "${ec[@]}" -keyout "$dir/server.key" -out "$dir/server.csr" \
    -subj "/CN=127.0.0.1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' \
    | as_owner tee "$dir/server.ext" >/dev/null
  as_owner openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -out "$dir/server.crt" -days 7 -extfile "$dir/server.ext" 2>/dev/null
  as_owner chmod 600 "$dir/server.key" "$dir/ca.key"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local dir=$1 bin port
  bin=$(bindir)
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    id engram-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin engram-pg
    chown engram-pg "$dir"
  fi
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  certificates "$dir"
  port=$(free_port)
  echo "$port" >"$dir/port"
  serve "$dir"
  echo "postgres://postgres@127.0.0.1:$port/postgres"
}

# Starts the server of the cluster in DIR on its port.
serve() {
  local dir=$1 bin port
  bin=$(bindir)
  port=$(cat "$dir/port")
  # Settings for tests: durability kept (fsync on), but no checkpoint
  # storms on a small machine; many short-lived test databases.
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=400 -c shared_buffers=${PG_SHARED_BUFFERS:-128MB} -c max_wal_size=2GB -c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key" \
    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
}

stop() {
  local dir=$1 bin
  bin=$(bindir)
  if [ -d "$dir/data" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start)
    [ $# -eq 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }
    start "$2"
    ;;
  stop)
    [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
    stop "$2"
    ;;
  restart)
    # After the server was killed: crash recovery, then the same port.
    [ $# -eq 2 ] || { echo "usage: $0 restart DIR" >&2; exit 2; }
    serve "$2"
    ;;
  run)
    shift
    [ $# -ge 1 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
    dir=$(mktemp -d /tmp/engram-pg.XXXXXX)
    trap 'stop "$dir"' EXIT
    trap 'exit 130' INT TERM HUP
    url=$(start "$dir")
    echo "PostgreSQL test cluster at $url" >&2
    status=0
    ENGRAM_TEST_DATABASE_URL=$url ENGRAM_TEST_DATABASE_CA=$dir/ca.crt "$@" || status=$?
    exit $status
    ;;
  *)
    echo "usage: $0 run CMD... | start DIR | stop DIR | restart DIR" >&2
    exit 2
    ;;
esac
