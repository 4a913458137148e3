#!/usr/bin/env bash
# A real IRC network on loopback for the PIRCAN bridge's tests: InspIRCd 3
# with Anope 2.0 services, from Debian's packages (install them with
# `apt-get install --no-install-recommends inspircd anope openssl`; this
# script installs nothing).
#
#   network.sh start DIR [PORT_BASE]   configs, a self-signed certificate and
#                                      both daemons under DIR (created); ports
#                                      PORT_BASE (plaintext clients), +1 (TLS
#                                      clients), +2 (services link). Default
#                                      base 16667. Prints KEY=VALUE lines
#                                      (also written to DIR/env) and returns
#                                      once NickServ answers.
#   network.sh stop DIR                stops both daemons of DIR.
#   network.sh stop-ircd DIR           stops InspIRCd only (Anope retries the link).
#   network.sh start-ircd DIR          starts InspIRCd again with DIR's config.
#
# Exit status 3: the packages are not installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|stop-ircd|start-ircd DIR [PORT_BASE]" >&2; exit 2; }

for bin in /usr/sbin/inspircd /usr/sbin/anope openssl; do
  command -v "$bin" >/dev/null 2>&1 || { echo "network.sh: $bin missing: apt-get install --no-install-recommends inspircd anope openssl" >&2; exit 3; }
done

# Run the daemons as user irc when we are root (InspIRCd refuses root
# without --runasroot, Anope as root sleeps 3 s at start).
as_irc=()
if [ "$(id -u)" = 0 ] && id irc >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
  as_irc=(setpriv --reuid=irc --regid=irc --clear-groups)
fi

stop_pid() { # pidfile
  local f="$1" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"; rm -f "$f"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do
    # Gone or a zombie: stopped.
    state="$(ps -o stat= -p "$pid" 2>/dev/null || true)"
    case "$state" in ""|Z*) return 0;; esac
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

wait_port() { # port
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "network.sh: nothing listens on 127.0.0.1:$1" >&2; return 1
}

port_free() { # port: fails, saying so, when something already listens on it
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    echo "network.sh: 127.0.0.1:$1 is already in use (another test network? stop it: network.sh stop DIR), or pass another base port" >&2
    return 1
  fi
}

start_ircd() {
  # shellcheck disable=SC1091
  . "$dir/env"
  ulimit -c 0 # InspIRCd with gnutls segfaults on SIGTERM; no core files.
  "${as_irc[@]}" /usr/sbin/inspircd --config="$dir/inspircd.conf" --nofork --nopid \
    >>"$dir/inspircd.out" 2>&1 </dev/null &
  echo $! >"$dir/inspircd.run"
  wait_port "$IRC_PLAIN_PORT"
}

case "$cmd" in
start)
  base="${3:-16667}"
  for p in "$base" "$((base+1))" "$((base+2))"; do port_free "$p" || exit 1; done
  mkdir -p "$dir/db"
  dir="$(cd "$dir" && pwd)"
  link_pass="link-$RANDOM$RANDOM"; bridge_pass="bridge-$RANDOM$RANDOM"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" >/dev/null 2>&1
  for f in inspircd anope; do
    sed -e "s|@DIR@|$dir|g" -e "s|@PLAIN_PORT@|$base|g" -e "s|@TLS_PORT@|$((base+1))|g" \
        -e "s|@LINK_PORT@|$((base+2))|g" -e "s|@LINK_PASS@|$link_pass|g" -e "s|@BRIDGE_PASS@|$bridge_pass|g" \
        "$here/$f.conf.in" >"$dir/$f.conf"
  done
  echo "PIRCAN test network" >"$dir/services.motd"
  cat >"$dir/env" <<ENV
IRC_PLAIN_PORT=$base
IRC_TLS_PORT=$((base+1))
IRC_CA_FILE=$dir/cert.pem
IRC_BRIDGE_PASS=$bridge_pass
IRC_DIR=$dir
ENV
  if [ ${#as_irc[@]} -gt 0 ]; then chown -R irc:irc "$dir"; fi
  start_ircd
  wait_port "$((base+1))"
  "${as_irc[@]}" /usr/sbin/anope --confdir="$dir" --config=anope.conf --dbdir="$dir/db" --logdir="$dir" \
    --modulesdir=/usr/lib/anope --localedir=/usr/share/anope/locale --nofork \
    >>"$dir/anope.out" 2>&1 </dev/null &
  echo $! >"$dir/anope.run"
  # Ready when services have linked and synced (Anope logs it).
  for _ in $(seq 1 200); do
    if grep -q "services.test.local .* is done syncing" "$dir/anope.out" 2>/dev/null; then
      cat "$dir/env"; exit 0
    fi
    sleep 0.05
  done
  echo "network.sh: services did not link; see $dir/anope.out and $dir/services.log*" >&2
  exit 1
  ;;
stop)
  stop_pid "$dir/anope.run"
  stop_pid "$dir/inspircd.run"
  ;;
stop-ircd)
  stop_pid "$dir/inspircd.run"
  ;;
start-ircd)
  start_ircd
  ;;
*)
  echo "network.sh: unknown command $cmd" >&2; exit 2;;
esac
