# Sourced by the scripts that test engram from outside (schemathesis, the
# MCP SDKs, the generated clients, the dashboard): a Python virtual
# environment or npm packages under target/, and a live server on a new
# database with an admin key.

# Makes the virtual environment target/$1 hold exactly the pinned packages
# that follow ("name==version"); installs them only when one differs.
python_env() {
  venv=target/$1
  shift
  local wanted have
  wanted=$(printf '%s\n' "$@" | tr '[:upper:]_' '[:lower:]-' | sort)
  have=$("$venv/bin/python" - "$@" 2>/dev/null <<'EOF' || true
import importlib.metadata as m, sys
for pin in sys.argv[1:]:
    name = pin.split("==")[0]
    try:
        print(f"{name}=={m.version(name)}")
    except m.PackageNotFoundError:
        pass
EOF
)
  have=$(printf '%s\n' "$have" | tr '[:upper:]_' '[:lower:]-' | sort)
  if [ "$wanted" != "$have" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
  fi
}

# Makes target/$1 hold the npm packages that follow ("name@version"):
# installs them when one is missing or of another version.
node_env() {
  local dir=target/$1
  shift
  local pin name
  for pin in "$@"; do
    name=${pin%@*}
    if [ "$(node -p "require('./$dir/node_modules/$name/package.json').version" 2>/dev/null)" != "${pin##*@}" ]; then
      mkdir -p "$dir"
      npm install --silent --no-audit --no-fund --prefix "$dir" "$@"
      return
    fi
  done
}

# Builds engram, makes an admin key (rate $2, default 1000 a second) in a
# new database under a scratch directory and starts the server on it; sets
# $url and $secret, and stops the server and removes the directory on exit.
live_server() {
  cargo build --locked --quiet -p engram
  engram=target/debug/engram
  work=$(mktemp -d)
  . loadtests/server.sh
  trap 'stop; rm -rf "$work"' EXIT
  mkdir -p "$work/$1"
  secret=$(ENGRAM_DB_PATH="$work/$1/engram.db" "$engram" keys create --name "$1-admin" \
    --role admin --max-sensitivity hyper --rate "${2:-1000}" | tail -n 1)
  start "$1"
}
