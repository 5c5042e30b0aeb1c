#!/usr/bin/env bash
# The transports part of the harness: what the ssh, libssh, tls, tcp and session-socket tests
# (internal/backend/libvirt/transport_test.go) connect to. tools/libvirt-up.sh sources this file and
# calls its functions in order: transports_pki and transports_libvirtd_conf before it starts libvirtd
# (a libvirtd told to listen for TLS does not start without its certificates), then transports_sshd
# and transports_session. Every step checks first and says what it did; nothing listens beyond
# 127.0.0.1. The session daemons are also the extra hosts of the multi-host acceptance tests:
# host "default" is the system daemon qemu:///system, "h2" and "h3" are session daemons of two
# other users, each with a dir pool "virt" of its own.
#
#   bash tools/transports-up.sh stop              stops the harness's sshd and session daemons (under the lock)
#   bash tools/transports-up.sh host-stop h2|h3   stops that host's session daemon (SIGTERM), waits until
#                                                 its socket no longer answers
#   bash tools/transports-up.sh host-start h2|h3  starts it again, waits until it answers with its pool running
#   (host-stop and host-start do not take the lock: the acceptance tests that call them hold it)
#
# What it makes, and where (the tests name the same paths):
#   system libvirtd  TCP 127.0.0.1:16509 (auth_tcp "none"), TLS 127.0.0.1:16514, from a marked block
#                    in /etc/libvirt/libvirtd.conf; libvirt-up.sh starts it with --listen
#   certificates     CA /etc/pki/CA/cacert.pem (its key in /var/lib/virt-harness/ca/cakey.pem), server
#                    /etc/pki/libvirt/servercert.pem + private/serverkey.pem (localhost, 127.0.0.1),
#                    root's client certificate where libvirt looks for root's (/etc/pki/libvirt/
#                    clientcert.pem + private/clientkey.pem) and again, with the CA, in the pkipath
#                    directory /var/lib/virt-harness/pki
#   sshd             /usr/sbin/sshd -f /var/lib/virt-harness/ssh/sshd_config on 127.0.0.1:16522 and
#                    127.0.0.1:16523, root by key only, Ed25519 and ECDSA host keys; root's key
#                    /var/lib/virt-harness/ssh/id_ed25519; a known_hosts file for it,
#                    /var/lib/virt-harness/ssh/known_hosts; marked lines in root's ~/.ssh/known_hosts
#                    (see transports_known_hosts)
#   session daemons  libvirtd --daemon run as user virt-session (host h2), XDG_RUNTIME_DIR=/run/virt-session;
#                    root reaches it at qemu+unix:///session?socket=/run/virt-session/libvirt/libvirt-sock;
#                    and as user virt-session3 (host h3), /run/virt-session3, the same way. Each has a
#                    running, autostarted dir pool "virt" in ~/virt-pool (/var/lib/virt-session[3]/virt-pool)

HARNESS_DIR=/var/lib/virt-harness
TCP_PORT=16509
TLS_PORT=16514
SSH_PORT=16522
# The same sshd also answers here; root's known_hosts holds a wrong key for this address, so that
# the qemu+ssh transport, which only reads ~/.ssh/known_hosts, can be shown to refuse a host whose
# key does not match.
SSH_MISMATCH_PORT=16523
SSH_DIR=$HARNESS_DIR/ssh
SSHD_CONFIG=$SSH_DIR/sshd_config
SSHD_PID=/run/virt-harness-sshd.pid
SSHD_LOG=/var/log/virt-harness-sshd.log
CA_DIR=$HARNESS_DIR/ca
PKI_DIR=$HARNESS_DIR/pki
CA_CERT=/etc/pki/CA/cacert.pem
SERVER_CERT=/etc/pki/libvirt/servercert.pem
SERVER_KEY=/etc/pki/libvirt/private/serverkey.pem
CLIENT_CERT=/etc/pki/libvirt/clientcert.pem
CLIENT_KEY=/etc/pki/libvirt/private/clientkey.pem
LIBVIRTD_CONF=/etc/libvirt/libvirtd.conf
SESSION_USER=virt-session
SESSION_HOME=/var/lib/virt-session
SESSION_RUNTIME=/run/virt-session
SESSION_SOCKET=$SESSION_RUNTIME/libvirt/libvirt-sock
SESSION_URI="qemu+unix:///session?socket=$SESSION_SOCKET"
# The third host (h3): a second session daemon, made the same way.
SESSION3_USER=virt-session3
SESSION3_HOME=/var/lib/virt-session3
SESSION3_RUNTIME=/run/virt-session3
# Each session daemon's storage pool, a dir pool in its user's home.
SESSION_POOL=virt
SESSION_POOL_SUBDIR=virt-pool
# Other agents and make targets run acceptance tests holding this lock; a daemon they may be using
# is only restarted or stopped under it.
ACC_LOCK=/tmp/virt-acc.lock
# Marks what the harness wrote into files it shares with others.
MARK=virt-harness

command -v say >/dev/null 2>&1 || say() { printf 'transports-up: %s\n' "$*"; }

# lock_held_above: a process above this one (flock running `make test`, or the chaos run that calls
# libvirt-up.sh) holds the acceptance lock, so taking it again would wait for ourselves forever.
lock_held_above() {
  [ -e "$ACC_LOCK" ] || return 1
  local id holders pid
  id=$(stat -c %i "$ACC_LOCK")
  # /proc/locks: "1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF"; waiters have "->".
  holders=$(awk -v ino="$id" '$2 == "FLOCK" { n = split($6, a, ":"); if (a[n] == ino) print $5 }' /proc/locks)
  [ -n "$holders" ] || return 1
  pid=$$
  while [ -n "$pid" ] && [ "$pid" -gt 1 ]; do
    grep -qx "$pid" <<<"$holders" && return 0
    pid=$(ps -o ppid= -p "$pid" | tr -d ' ')
  done
  return 1
}

# with_acc_lock CMD...: runs CMD holding the acceptance lock, waiting for a test run that holds it.
with_acc_lock() {
  if lock_held_above; then
    "$@"
  else
    say "waiting for $ACC_LOCK (acceptance tests may be running)"
    local fd
    exec {fd}>>"$ACC_LOCK"
    flock "$fd"
    "$@"
    local rc=$?
    flock -u "$fd"
    exec {fd}>&-
    return $rc
  fi
}

# gone PID: the process has exited (a zombie nobody reaps counts as gone: it holds no socket).
gone() { ! ps -p "$1" -o stat= 2>/dev/null | grep -qv '^Z'; }

# detached CMD...: runs CMD (a daemon that forks itself into the background) from / with every
# descriptor above stderr closed. Whatever started this script may have left descriptors open: the
# acceptance lock that `flock /tmp/virt-acc.lock bash tools/libvirt-up.sh` passes on as fd 3, or
# with_acc_lock's own; a daemon that inherits it holds the lock for as long as it runs, and every
# acceptance run then waits forever.
detached() {
  (
    cd /
    local fd
    for fd in /proc/"$BASHPID"/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
    done
    exec "$@"
  )
}

# stop_pid PID WHAT: SIGTERM, then SIGKILL after 30 s.
stop_pid() {
  local pid=$1 what=$2
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 300); do gone "$pid" && break; sleep 0.1; done
  if ! gone "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do gone "$pid" && break; sleep 0.1; done
  fi
  say "stopped $what (pid $pid)"
}

# --- certificates -------------------------------------------------------------------------------

ours() { [ -s "$1" ] && openssl x509 -in "$1" -noout -issuer 2>/dev/null | grep -q "O *= *$MARK"; }

same_key() { [ "$(openssl x509 -in "$1" -noout -pubkey 2>/dev/null)" = "$(openssl pkey -in "$2" -pubout 2>/dev/null)" ]; }

pki_ok() {
  local f
  for f in "$CA_CERT" "$CA_DIR/cakey.pem" "$SERVER_CERT" "$SERVER_KEY" "$CLIENT_CERT" "$CLIENT_KEY" \
    "$PKI_DIR/cacert.pem" "$PKI_DIR/clientcert.pem" "$PKI_DIR/clientkey.pem"; do
    [ -s "$f" ] || return 1
  done
  openssl verify -purpose sslserver -CAfile "$CA_CERT" "$SERVER_CERT" >/dev/null 2>&1 || return 1
  openssl verify -purpose sslclient -CAfile "$CA_CERT" "$CLIENT_CERT" >/dev/null 2>&1 || return 1
  for f in "$CA_CERT" "$SERVER_CERT" "$CLIENT_CERT"; do
    openssl x509 -in "$f" -noout -checkend $((30 * 86400)) >/dev/null 2>&1 || return 1
  done
  same_key "$CA_CERT" "$CA_DIR/cakey.pem" && same_key "$SERVER_CERT" "$SERVER_KEY" && same_key "$CLIENT_CERT" "$CLIENT_KEY" || return 1
  cmp -s "$CA_CERT" "$PKI_DIR/cacert.pem" && cmp -s "$CLIENT_CERT" "$PKI_DIR/clientcert.pem" && cmp -s "$CLIENT_KEY" "$PKI_DIR/clientkey.pem"
}

# sign NAME SUBJECT EXTENSIONS: a key and a certificate signed by the CA in $tmp.
sign() {
  local name=$1 subject=$2 ext=$3
  openssl req -new -newkey rsa:3072 -nodes -subj "$subject" -keyout "$tmp/${name}key.pem" -out "$tmp/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$tmp/$name.ext"
  openssl x509 -req -sha256 -days 3650 -in "$tmp/$name.csr" -CA "$tmp/cacert.pem" -CAkey "$tmp/cakey.pem" \
    -set_serial "0x$(openssl rand -hex 16)" -extfile "$tmp/$name.ext" -out "$tmp/${name}cert.pem" 2>/dev/null
}

# transports_pki: a CA, a server certificate for localhost and 127.0.0.1, and root's client
# certificate, where libvirtd and libvirt's clients look for them as root. Certificates someone
# else made are never replaced.
transports_pki() {
  if pki_ok; then
    say "TLS certificates in place (CA $CA_CERT, server and client in /etc/pki/libvirt, pkipath $PKI_DIR)"
    return 0
  fi
  local f
  for f in "$CA_CERT" "$SERVER_CERT" "$CLIENT_CERT"; do
    if [ -e "$f" ] && ! ours "$f"; then
      say "$f exists and was not made by this harness: move it away, or set up TLS yourself (see CONTRIBUTING.md)"
      return 1
    fi
  done
  local tmp
  tmp=$(mktemp -d)
  openssl req -x509 -newkey rsa:3072 -nodes -sha256 -days 3650 -subj "/O=$MARK/CN=$MARK CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$tmp/cakey.pem" -out "$tmp/cacert.pem" 2>/dev/null
  # libvirt checks these usages on its own certificate at start and on the client's at handshake.
  sign server "/O=$MARK/CN=localhost" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1"
  sign client "/O=$MARK/CN=root" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  install -d -m 0755 /etc/pki/CA /etc/pki/libvirt "$HARNESS_DIR"
  install -d -m 0700 /etc/pki/libvirt/private "$CA_DIR" "$PKI_DIR"
  install -m 0600 "$tmp/cakey.pem" "$CA_DIR/cakey.pem"
  install -m 0644 "$tmp/cacert.pem" "$CA_CERT"
  install -m 0644 "$tmp/servercert.pem" "$SERVER_CERT"
  install -m 0600 "$tmp/serverkey.pem" "$SERVER_KEY"
  install -m 0644 "$tmp/clientcert.pem" "$CLIENT_CERT"
  install -m 0600 "$tmp/clientkey.pem" "$CLIENT_KEY"
  install -m 0644 "$tmp/cacert.pem" "$PKI_DIR/cacert.pem"
  install -m 0644 "$tmp/clientcert.pem" "$PKI_DIR/clientcert.pem"
  install -m 0600 "$tmp/clientkey.pem" "$PKI_DIR/clientkey.pem"
  rm -rf "$tmp"
  pki_ok || { say "the certificates just made do not verify"; return 1; }
  say "made a CA ($CA_CERT), a server certificate for localhost and 127.0.0.1, and root's client certificate (also in pkipath $PKI_DIR)"
}

# --- libvirtd listeners -------------------------------------------------------------------------

LISTEN_KEYS='listen_tls|listen_tcp|listen_addr|tls_port|tcp_port|auth_tcp'

# transports_libvirtd_conf: the listeners, as a marked block of libvirtd.conf, so that any libvirtd
# started with --listen (libvirt-up.sh's, and so the chaos run's restarts) has them.
transports_libvirtd_conf() {
  local block current wanted
  block="# BEGIN $MARK (tools/transports-up.sh): TCP and TLS on 127.0.0.1 for the transport tests;
# they take effect when libvirtd runs with --listen, as tools/libvirt-up.sh starts it.
listen_tls = 1
listen_tcp = 1
listen_addr = \"127.0.0.1\"
tls_port = \"$TLS_PORT\"
tcp_port = \"$TCP_PORT\"
auth_tcp = \"none\"
# END $MARK"
  current=$(cat "$LIBVIRTD_CONF" 2>/dev/null || true)
  local outside
  outside=$(awk -v b="# BEGIN $MARK" -v e="# END $MARK" 'index($0, b) == 1 { skip = 1 } !skip { print } index($0, e) == 1 { skip = 0 }' <<<"$current")
  if grep -Eq "^[[:space:]]*($LISTEN_KEYS)[[:space:]]*=" <<<"$outside"; then
    say "$LIBVIRTD_CONF sets listeners itself ($(grep -Eo "^[[:space:]]*($LISTEN_KEYS)" <<<"$outside" | tr -d ' ' | tr '\n' ' ')): remove those lines to let the harness manage them"
    return 1
  fi
  wanted=$(printf '%s\n\n%s' "$outside" "$block")
  if [ "$current" = "$wanted" ]; then
    say "$LIBVIRTD_CONF already has the harness's listeners (tcp $TCP_PORT, tls $TLS_PORT, 127.0.0.1)"
  else
    mkdir -p "$(dirname "$LIBVIRTD_CONF")"
    printf '%s\n' "$wanted" >"$LIBVIRTD_CONF.virt-harness.tmp"
    mv "$LIBVIRTD_CONF.virt-harness.tmp" "$LIBVIRTD_CONF"
    say "wrote the listeners block (tcp 127.0.0.1:$TCP_PORT auth none, tls 127.0.0.1:$TLS_PORT) into $LIBVIRTD_CONF"
  fi
}

# transports_listening: the system daemon answers on TCP and on TLS, checked with libvirt's own
# client (root's default certificate paths) rather than with the provider's.
transports_listening() {
  virsh -c "qemu+tcp://127.0.0.1:$TCP_PORT/system" version >/dev/null 2>&1 &&
    virsh -c "qemu+tls://127.0.0.1:$TLS_PORT/system" version >/dev/null 2>&1
}

# --- sshd ---------------------------------------------------------------------------------------

# key FILE COMMENT [TYPE]: a key pair (ed25519 unless TYPE says), made once.
key() {
  if [ ! -s "$1" ]; then
    rm -f "$1" "$1.pub"
    ssh-keygen -q -t "${3:-ed25519}" -N '' -C "$2" -f "$1"
    say "made $2 ($1)"
  elif [ ! -s "$1.pub" ]; then
    ssh-keygen -y -f "$1" >"$1.pub"
  fi
}

# write_if_changed FILE MODE: stdin becomes FILE when it differs; true when it was written.
write_if_changed() {
  local new
  new=$(cat)
  if [ -f "$1" ] && [ "$(cat "$1")" = "$new" ]; then
    return 1
  fi
  printf '%s\n' "$new" >"$1.tmp" && chmod "$2" "$1.tmp" && mv "$1.tmp" "$1"
}

sshd_pid() {
  local pid
  pid=$(cat "$SSHD_PID" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(ps -p "$pid" -o comm= 2>/dev/null)" = sshd ] && ! gone "$pid" && echo "$pid"
}

ssh_probe() {
  ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null \
    -o UserKnownHostsFile="$SSH_DIR/known_hosts" -o IdentitiesOnly=yes -o ConnectTimeout=5 \
    -i "$SSH_DIR/id_ed25519" -p "$SSH_PORT" root@127.0.0.1 true </dev/null 2>/dev/null
}

# transports_known_hosts: go-libvirt's qemu+ssh transport checks host keys against the current
# user's ~/.ssh/known_hosts and no other file (dial.go refuses known_hosts= for it, as libvirt does),
# so root's file gets three lines, each marked "virt-harness" at its end and rewritten only by this
# function: the harness sshd's two keys for [127.0.0.1]:16522, and a key that sshd does not have for
# [127.0.0.1]:16523 (the same sshd), which makes a host-key mismatch on the real transport. Lines
# without the mark are left as they are.
transports_known_hosts() {
  local home file others
  home=$(getent passwd root | cut -d: -f6)
  file=$home/.ssh/known_hosts
  install -d -m 0700 "$home/.ssh"
  others=$(grep -v " $MARK: " "$file" 2>/dev/null || true)
  if {
    [ -n "$others" ] && printf '%s\n' "$others"
    for k in ed25519 ecdsa; do
      printf '[127.0.0.1]:%s %s %s\n' "$SSH_PORT" "$(cut -d' ' -f1,2 "$SSH_DIR/ssh_host_${k}_key.pub")" "$MARK: the sshd of tools/transports-up.sh"
    done
    printf '[127.0.0.1]:%s %s %s\n' "$SSH_MISMATCH_PORT" "$(cut -d' ' -f1,2 "$SSH_DIR/wrong_host_ed25519_key.pub")" "$MARK: NOT that sshd's key, on purpose (host-key mismatch test)"
  } | write_if_changed "$file" 0600; then
    say "wrote the harness's marked lines into $file ([127.0.0.1]:$SSH_PORT its sshd's keys, [127.0.0.1]:$SSH_MISMATCH_PORT a wrong one)"
  else
    say "$file has the harness's marked lines"
  fi
}

# transports_sshd: an sshd of our own (no systemd) on 127.0.0.1, root by key only.
transports_sshd() {
  local changed=
  install -d -m 0755 "$HARNESS_DIR" "$SSH_DIR" "$SSH_DIR/authorized_keys"
  install -d -m 0755 /run/sshd # sshd's privilege separation directory
  # Two host keys, as a Debian host has: go-libvirt's SSH client asks for ECDSA before Ed25519,
  # whichever key known_hosts holds (see transport_test.go).
  key "$SSH_DIR/ssh_host_ed25519_key" "the harness sshd's Ed25519 host key"
  key "$SSH_DIR/ssh_host_ecdsa_key" "the harness sshd's ECDSA host key" ecdsa
  key "$SSH_DIR/wrong_host_ed25519_key" "a host key no server has (host-key mismatch tests)"
  key "$SSH_DIR/id_ed25519" "root's key for the harness sshd"
  # restrict: no pty, agent or X11 forwarding; port-forwarding lets it reach libvirt's socket.
  if printf 'restrict,port-forwarding %s\n' "$(cat "$SSH_DIR/id_ed25519.pub")" | write_if_changed "$SSH_DIR/authorized_keys/root" 0644; then
    say "authorized root's harness key in $SSH_DIR/authorized_keys/root"
  fi
  if for k in ed25519 ecdsa; do
    printf '[127.0.0.1]:%s %s\n' "$SSH_PORT" "$(cut -d' ' -f1,2 "$SSH_DIR/ssh_host_${k}_key.pub")"
  done | write_if_changed "$SSH_DIR/known_hosts" 0644; then
    say "wrote $SSH_DIR/known_hosts (the harness sshd's keys for [127.0.0.1]:$SSH_PORT)"
  fi
  transports_known_hosts
  if write_if_changed "$SSHD_CONFIG" 0644 <<EOF; then
# Written by tools/transports-up.sh: the harness's sshd, for the ssh and libssh transport tests.
ListenAddress 127.0.0.1:$SSH_PORT
ListenAddress 127.0.0.1:$SSH_MISMATCH_PORT
HostKey $SSH_DIR/ssh_host_ed25519_key
HostKey $SSH_DIR/ssh_host_ecdsa_key
PidFile $SSHD_PID
AuthorizedKeysFile $SSH_DIR/authorized_keys/%u
AllowUsers root
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# go-libvirt opens libvirt's socket through a direct-streamlocal channel, not by running a command.
# OpenSSH 9.2 checks that channel against AllowTcpForwarding's local permission as well: with
# "no", it logs "request to connect to path ... denied" and the client sees "open failed".
AllowStreamLocalForwarding yes
AllowTcpForwarding local
AllowAgentForwarding no
X11Forwarding no
PermitTunnel no
PermitUserRC no
EOF
    changed=1
    say "wrote $SSHD_CONFIG"
  fi
  /usr/sbin/sshd -t -f "$SSHD_CONFIG" || { say "sshd refuses $SSHD_CONFIG"; return 1; }
  local pid
  if pid=$(sshd_pid); then
    if [ -n "$changed" ]; then
      kill -HUP "$pid"
      sleep 0.5
      say "told the harness sshd (pid $pid) to reread its configuration"
    fi
  else
    rm -f "$SSHD_PID"
    detached /usr/sbin/sshd -f "$SSHD_CONFIG" -E "$SSHD_LOG"
    say "started sshd on 127.0.0.1:$SSH_PORT and :$SSH_MISMATCH_PORT (log $SSHD_LOG)"
  fi
  local answered=
  for _ in $(seq 1 50); do ssh_probe && { answered=1; break; }; sleep 0.1; done
  if [ -z "$answered" ]; then
    if grep -q '^root:!' /etc/shadow 2>/dev/null; then
      say "root's account is locked ('!' in /etc/shadow), and sshd without PAM refuses even key logins to a locked account"
    fi
    say "root cannot log in to the harness sshd with $SSH_DIR/id_ed25519; see $SSHD_LOG"
    return 1
  fi
  say "sshd answers root on 127.0.0.1:$SSH_PORT with key $SSH_DIR/id_ed25519, host key in $SSH_DIR/known_hosts"
}

# --- session daemons run by other users: the hosts h2 and h3 ------------------------------------

# session_vars USER RUNTIME [HOME]: the paths of USER's session daemon, in S_USER, S_RUNTIME,
# S_HOME (default /var/lib/USER), S_SOCKET, S_URI and S_POOL_DIR.
session_vars() {
  S_USER=$1
  S_RUNTIME=$2
  S_HOME=${3:-/var/lib/$1}
  S_SOCKET=$S_RUNTIME/libvirt/libvirt-sock
  S_URI="qemu+unix:///session?socket=$S_SOCKET"
  S_POOL_DIR=$S_HOME/$SESSION_POOL_SUBDIR
}

# host_vars NAME: session_vars for the harness host NAME (h2 or h3).
host_vars() {
  case "$1" in
  h2) session_vars "$SESSION_USER" "$SESSION_RUNTIME" "$SESSION_HOME" ;;
  h3) session_vars "$SESSION3_USER" "$SESSION3_RUNTIME" "$SESSION3_HOME" ;;
  *)
    say "no session host named '$1' (the harness has h2 and h3; the host default is the system daemon)"
    return 1
    ;;
  esac
}

# session_pid: the pid of S_USER's session daemon, when it runs.
session_pid() {
  local pid
  pid=$(cat "$S_RUNTIME/libvirt/libvirtd.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(ps -p "$pid" -o comm=,uid= 2>/dev/null | tr -s ' ')" = "libvirtd $(id -u "$S_USER")" ] && ! gone "$pid" && echo "$pid"
}

session_answers() { virsh -c "$S_URI" version >/dev/null 2>&1; }

# session_start: starts S_USER's session daemon, as a desktop user's session daemon runs (its
# runtime directory is S_RUNTIME; its configuration, secrets and logs in S_HOME's XDG
# directories), and waits until root reaches it on S_URI.
session_start() {
  rm -f "$S_RUNTIME/libvirt/libvirtd.pid"
  detached runuser -u "$S_USER" -- env -i HOME="$S_HOME" XDG_RUNTIME_DIR="$S_RUNTIME" \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin USER="$S_USER" LOGNAME="$S_USER" libvirtd --daemon
  for _ in $(seq 1 100); do session_answers && break; sleep 0.1; done
  if ! session_answers; then
    say "$S_USER's session daemon did not answer on $S_URI; see $S_HOME/.cache/libvirt/libvirtd.log"
    return 1
  fi
  say "started $S_USER's session daemon; root reaches it on $S_URI"
}

# session_pool: a running, autostarted dir pool $SESSION_POOL in S_POOL_DIR (owned by S_USER), made
# through the daemon's socket as root; refreshed when REFRESH is given.
session_pool() {
  local refresh=${1:-} info out
  if [ ! -d "$S_POOL_DIR" ]; then
    install -d -m 0755 -o "$S_USER" -g "$S_USER" "$S_POOL_DIR"
    say "created $S_POOL_DIR"
  fi
  if ! virsh -c "$S_URI" pool-info "$SESSION_POOL" >/dev/null 2>&1; then
    virsh -c "$S_URI" pool-define-as "$SESSION_POOL" dir --target "$S_POOL_DIR" >/dev/null
    say "defined dir pool $SESSION_POOL at $S_POOL_DIR on $S_USER's session daemon"
  fi
  # The output is captured first: with pipefail, grep -q closing the pipe early would fail virsh.
  info=$(virsh -c "$S_URI" pool-info "$SESSION_POOL")
  if ! grep -Eq '^State:[[:space:]]+running' <<<"$info"; then
    virsh -c "$S_URI" pool-start "$SESSION_POOL" >/dev/null
    say "started pool $SESSION_POOL on $S_USER's session daemon"
  fi
  if ! grep -Eq '^Autostart:[[:space:]]+yes' <<<"$info"; then
    virsh -c "$S_URI" pool-autostart "$SESSION_POOL" >/dev/null
    say "marked pool $SESSION_POOL autostarted on $S_USER's session daemon"
  fi
  if [ -n "$refresh" ]; then
    # Refused while a volume job runs in the pool (a test's upload): it can wait for next time.
    for _ in $(seq 1 20); do
      if out=$(virsh -c "$S_URI" pool-refresh "$SESSION_POOL" 2>&1 >/dev/null); then
        say "pool $SESSION_POOL ($S_POOL_DIR) is running, autostarted and refreshed on $S_URI"
        return 0
      fi
      grep -q "asynchronous jobs running" <<<"$out" || { printf '%s\n' "$out" >&2; return 1; }
      sleep 0.5
    done
    say "pool $SESSION_POOL on $S_URI has volume jobs running: not refreshed this time"
  else
    say "pool $SESSION_POOL ($S_POOL_DIR) is running on $S_URI"
  fi
}

# session_up USER RUNTIME [HOME]: libvirtd --daemon run as USER (a system user made when missing,
# in group kvm, home HOME or /var/lib/USER), with its runtime directory in RUNTIME; root opens its
# socket by path. A daemon that runs but does not answer is replaced, under the acceptance lock.
# Then its pool.
session_up() {
  session_vars "$@"
  if ! getent passwd "$S_USER" >/dev/null; then
    useradd --system --create-home --home-dir "$S_HOME" --shell /usr/sbin/nologin "$S_USER"
    say "created user $S_USER (home $S_HOME)"
  fi
  # KVM for its guests when the host has it, as for libvirt-qemu.
  if getent group kvm >/dev/null && ! id -nG "$S_USER" | tr ' ' '\n' | grep -qx kvm; then
    usermod -a -G kvm "$S_USER"
    say "added $S_USER to group kvm"
  fi
  [ -d "$S_HOME" ] || { install -d -m 0755 -o "$S_USER" -g "$S_USER" "$S_HOME"; say "created $S_HOME"; }
  [ -d "$S_RUNTIME" ] || { install -d -m 0700 -o "$S_USER" -g "$S_USER" "$S_RUNTIME"; say "created $S_RUNTIME"; }
  if session_answers; then
    say "$S_USER's session daemon answers root on $S_URI"
  else
    local pid answers=
    if pid=$(session_pid); then
      # Running but not answering (still starting, or stuck): give it a moment before replacing it.
      for _ in $(seq 1 50); do session_answers && break; sleep 0.1; done
      if session_answers; then
        say "$S_USER's session daemon answers root on $S_URI"
        answers=1
      else
        with_acc_lock stop_pid "$pid" "$S_USER's session daemon, which did not answer"
      fi
    fi
    [ -n "$answers" ] || session_start || return 1
  fi
  session_pool refresh
}

# transports_session: the session daemons of the hosts h2 (virt-session) and h3 (virt-session3).
transports_session() {
  session_up "$SESSION_USER" "$SESSION_RUNTIME" "$SESSION_HOME" || return 1
  session_up "$SESSION3_USER" "$SESSION3_RUNTIME" "$SESSION3_HOME"
}

# host_stop NAME: SIGTERM the session daemon of host NAME (SIGKILL after 30 s) and wait until its
# socket no longer answers. The caller holds the acceptance lock, so this does not take it.
host_stop() {
  host_vars "$1" || return 1
  local pid
  if pid=$(session_pid); then
    stop_pid "$pid" "$S_USER's session daemon (host $1)"
  else
    say "$S_USER's session daemon (host $1) is not running"
  fi
  for _ in $(seq 1 100); do session_answers || break; sleep 0.1; done
  if session_answers; then
    say "something still answers on $S_URI after $S_USER's session daemon stopped"
    return 1
  fi
  say "host $1 is down: nothing answers on $S_URI"
}

# host_start NAME: start the session daemon of host NAME when it does not answer, wait until it
# answers with its pool running. The caller holds the acceptance lock, so this does not take it;
# a daemon that runs without answering is replaced.
host_start() {
  host_vars "$1" || return 1
  if session_answers; then
    say "$S_USER's session daemon (host $1) already answers on $S_URI"
  else
    local pid
    if pid=$(session_pid); then
      for _ in $(seq 1 50); do session_answers && break; sleep 0.1; done
      session_answers || stop_pid "$pid" "$S_USER's session daemon (host $1), which did not answer"
    fi
    session_answers || session_start || return 1
  fi
  session_pool
  say "host $1 is up on $S_URI"
}

# transports_summary: one line per transport and one for the hosts, for the log.
transports_summary() {
  say "transports: unix qemu:///system; session $SESSION_URI; tcp qemu+tcp://127.0.0.1:$TCP_PORT/system;" \
    "tls qemu+tls://127.0.0.1:$TLS_PORT/system (pkipath $PKI_DIR); ssh root@127.0.0.1:$SSH_PORT (keyfile $SSH_DIR/id_ed25519," \
    "known_hosts $SSH_DIR/known_hosts)"
  local h2 h3
  host_vars h2 && h2=$S_URI
  host_vars h3 && h3=$S_URI
  say "hosts: default qemu:///system; h2 $h2; h3 $h3 (each with a dir pool $SESSION_POOL)"
}

# transports_stop: stops the harness's sshd and session daemons (libvirtd stays).
transports_stop() {
  local pid h
  if pid=$(sshd_pid); then stop_pid "$pid" "the harness sshd"; else say "the harness sshd is not running"; fi
  for h in h2 h3; do
    host_vars "$h"
    if pid=$(session_pid); then stop_pid "$pid" "$S_USER's session daemon (host $h)"; else say "$S_USER's session daemon (host $h) is not running"; fi
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
  stop) with_acc_lock transports_stop ;;
  host-stop | host-start)
    [ $# -eq 2 ] || { echo "usage: bash tools/transports-up.sh $1 h2|h3" >&2; exit 2; }
    # No lock here: the acceptance test that calls this already holds it.
    "${1/-/_}" "$2"
    ;;
  *)
    cat >&2 <<'USAGE'
usage: bash tools/transports-up.sh stop              stop the harness's sshd and session daemons
       bash tools/transports-up.sh host-stop h2|h3   stop a session host's daemon (caller holds the lock)
       bash tools/transports-up.sh host-start h2|h3  start it again, with its pool
(to bring everything up, run make harness: tools/libvirt-up.sh uses this file)
USAGE
    exit 2
    ;;
  esac
fi
