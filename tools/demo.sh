#!/usr/bin/env bash
# make demo: what makes this provider different, in about a minute, on a local libvirt (pool `virt`)
# with the tiny guest (tools/tiny-guest.sh, cached), each with its evidence:
#   1. a stateful policy keeps a member's data disk through a REPLACE: the volume's bytes (sha256)
#      before and after, and the guest's boot counter on that disk going on from 1 to 2;
#   2. a per-instance config gives one member metadata of its own;
#   3. a member killed behind Terraform's back is healed by the next apply: started again after a
#      virsh destroy, replaced by autohealing (its data disk kept) after its QEMU crashed;
#   4. the guests read their own metadata: their serial console logs (template.console_log_dir).
# It applies its own configuration, tools/demo/main.tf (the user quick start, examples/quickstart,
# is run by TestAccQuickstart), with the provider just built, through a CLI configuration in a
# scratch directory (never the user's home). Everything it makes is named virt-demo and is
# destroyed at the end (DEMO_KEEP=1 keeps it and prints where its Terraform directory is).
#
# It brings up only what it uses (tools/libvirt-up.sh --demo: libvirt's and QEMU's packages, libvirtd,
# the pool; not the whole harness) while `make build` compiles the provider in the background (the
# longest step on a fresh machine, whose Go build cache is cold), then builds the tiny guest if it is
# not cached. At the end it prints the wall time of each step.
#   MAKE  the make command (the GNUmakefile passes its own), for `make build`
set -euo pipefail

bin_dir=${1:?usage: demo.sh BIN_DIR}
MAKE=${MAKE:-make}
repo=$(cd "$(dirname "$0")/.." && pwd)
name=virt-demo
pool=${VIRT_TEST_POOL:-virt}
logdir=/var/log/libvirt/qemu
step() { printf '\n== %s\n' "$*"; }
say() { printf '   %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages, starts libvirtd and reads the guests' disks)"
command -v terraform >/dev/null || die "no terraform in PATH (README, Install: Terraform 1.11 or later)"
work=$(mktemp -d /tmp/virt-demo.XXXXXX)

# Step times: mark NAME ends a step begun at the previous mark; the table is printed at the end.
rows=()
t_start=$(date +%s.%N)
t_mark=$t_start
row() { awk -v n="$1" -v s="$2" 'BEGIN { printf "| %-56s | %7.1f s |", n, s }'; }
mark() {
  local now
  now=$(date +%s.%N)
  rows+=("$(row "$1" "$(awk -v a="$t_mark" -v b="$now" 'BEGIN { print b - a }')")")
  t_mark=$now
}
table() {
  printf '\nmake demo: wall time of each step\n'
  printf '| %-56s | %9s |\n' step time
  for r in "${rows[@]}"; do printf '%s\n' "$r"; done
  [ -f "$work/build.secs" ] && row "(make build, in the background from the start)" "$(cat "$work/build.secs")" && echo
  row total "$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"; echo
}

# The provider, built while libvirt is brought up and the tiny guest built: the build is mostly CPU
# (Go's compiler), the others mostly the network, dpkg and the disk, and on a fresh machine each
# takes a minute or more (CONTRIBUTING.md, Quick start). It runs in a process group
# of its own (setsid), so that a demo that fails before it ends can end it, make and go included. Its
# output is shown only when it fails.
cd "$repo"
setsid bash -c 'b0=$(date +%s.%N); rc=0; "$1" --no-print-directory build >"$2/build.log" 2>&1 </dev/null || rc=$?
  awk -v a="$b0" -v b="$(date +%s.%N)" "BEGIN { print b - a }" >"$2/build.secs"; echo "$rc" >"$2/build.rc"' \
  build "$MAKE" "$work" &
build_pid=$!
cd /
# wait_build: waits for make build; its output when it failed.
wait_build() {
  wait "$build_pid" || true
  [ "$(cat "$work/build.rc" 2>/dev/null)" = 0 ] || { cat "$work/build.log" >&2; die "make build failed"; }
}
early_exit() {
  kill -- -"$build_pid" 2>/dev/null || true
  rm -f "${image:-}"
  rm -rf "$work"
}
trap early_exit EXIT
step "libvirt: packages, libvirtd and the pool $pool (tools/libvirt-up.sh --demo), make build in the background"
: >"$work/up.times"
VIRT_POOL=$pool VIRT_UP_TIMES="$work/up.times" bash "$repo/tools/libvirt-up.sh" --demo | sed 's/^/   /'
while IFS=$'\t' read -r phase secs; do
  rows+=("$(row "libvirt: $phase" "$secs")")
done <"$work/up.times"
t_mark=$(date +%s.%N)

# The CLI configuration: dev_overrides runs the binary just built; the filesystem mirror lets
# `terraform init` resolve the provider without a registry, which this host may not reach.
mirror="$work/mirror/registry.terraform.io/virtfleet/virt/0.0.1/linux_amd64"
mkdir -p "$mirror"
ln -s "$bin_dir/terraform-provider-virt" "$mirror/terraform-provider-virt_v0.0.1"
cat >"$work/cli.tfrc" <<CFG
provider_installation {
  dev_overrides {
    "virtfleet/virt" = "$bin_dir"
  }
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["virtfleet/virt"]
  }
  direct {
    exclude = ["virtfleet/virt"]
  }
}
CFG
export TF_CLI_CONFIG_FILE="$work/cli.tfrc" TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1
cp "$repo/tools/demo/main.tf" "$work/"
# jq reads the plans' planned_action; qemu-img and qemu-io read and write the data disk (libvirt-up.sh
# installs jq and qemu-utils).
ud2=$'#cloud-config\nruncmd: [true]\n'
cd "$work"

# The tiny guest (tools/tiny-guest.sh builds it when it is not cached), copied into the pool as the
# members' boot image.
step "the tiny guest (tools/tiny-guest.sh)"
src=$(bash "$repo/tools/tiny-guest.sh" 2> >(sed 's/^/   /' >&2))
pool_dir=$(virsh pool-dumpxml "$pool" | sed -n 's|.*<path>\(.*\)</path>.*|\1|p' | head -n1)
[ -n "$pool_dir" ] || die "pool $pool has no directory (tools/libvirt-up.sh makes it a dir pool)"
image="$pool_dir/$name-image.qcow2"
cp "$src" "$image"
virsh pool-refresh "$pool" >/dev/null
mark "tiny guest image, copied into the pool"
step "make build (the provider, in the background since the start)"
wait_build
say "$("$bin_dir/terraform-provider-virt" -version)"
mark "waiting for make build"
export TF_VAR_name=$name TF_VAR_pool=$pool TF_VAR_image=$image TF_VAR_console_log_dir=$logdir
for i in 1 2; do rm -f "$logdir/$name-$i.console.log"; done

cleanup() {
  rc=$?
  if [ "${DEMO_KEEP:-0}" = 1 ]; then
    table
    printf '\nThe group is still there; its Terraform directory is %s (TF_CLI_CONFIG_FILE=%s, TF_VAR_* as exported by tools/demo.sh).\n' "$work" "$work/cli.tfrc"
    return
  fi
  step "terraform destroy"
  if terraform destroy -auto-approve -no-color >"$work/destroy.log" 2>&1; then
    say "group $name destroyed (its data disks with it: ON_PERMANENT_INSTANCE_DELETION)"
    rm -f "$image" "$logdir/$name-1.console.log" "$logdir/$name-2.console.log"
    virsh pool-refresh "$pool" >/dev/null
    mark "terraform destroy"
    table
    rm -rf "$work"
  else
    cat "$work/destroy.log"
    printf 'demo: destroy failed; the Terraform directory is %s\n' "$work" >&2
  fi
  [ "$rc" = 0 ] && printf '\ndemo: all four shown\n'
}
trap cleanup EXIT

# tf ARGS...: terraform, its output kept in the scratch directory and shown only on failure.
tf() {
  local log="$work/tf-$(date +%s%N).log"
  terraform "$@" -no-color >"$log" 2>&1 || { cat "$log"; die "terraform $* failed"; }
  cat "$log"
}
# plan ARGS...: a plan with those arguments, saved (and as JSON) for planned.
plan() {
  tf plan -out "$work/plan" "$@" >/dev/null
  terraform show -json "$work/plan" >"$work/plan.json"
}
# planned MEMBER: the member's planned_action in the last plan (jq reads it).
planned() {
  jq -r --arg m "$1" \
    '.resource_changes[] | select(.address == "virt_stateful_group.demo") | .change.after.instances[] | select(.name == $m) | .planned_action' "$work/plan.json"
}
# console MEMBER: the member's serial console log, carriage returns dropped.
console() { tr -d '\r' <"$logdir/$1.console.log" 2>/dev/null || true; }
# wait_ready MEMBER N: waits (up to 3 minutes) until the guest has said "ready" N times.
wait_ready() {
  local i
  for i in $(seq 900); do
    [ "$(console "$1" | grep -c '^TINYGUEST ready')" -ge "$2" ] && return 0
    sleep 0.2
  done
  console "$1"; die "$1 did not boot (no 'TINYGUEST ready' number $2 on its console)"
}
# data_sum MEMBER: sha256 of the member's data volume from byte 512 on (the guest writes its boot
# counter into the first sector at every boot), and that counter; read while the guest runs (-U).
data_sum() {
  local raw="$work/$1-data.raw"
  qemu-img convert -U -f qcow2 -O raw "$pool_dir/$1-data.qcow2" "$raw"
  printf '%s counter=%s' "$(tail -c +513 "$raw" | sha256sum | cut -c1-16)" "$(head -c 512 "$raw" | tr -d '\000' | sed -n 's/^TINYGUEST-COUNTER //p')"
  rm -f "$raw"
}

step "terraform apply: 2 members of the tiny guest, created stopped (running = false)"
terraform init -no-color >"$work/init.log" 2>&1 || { cat "$work/init.log"; exit 1; }
tf apply -auto-approve -var running=false | grep -E '^(virt_|Apply complete)'
mark "terraform init, apply: 2 members created stopped"
# A pattern in the data disk of member 1, written while no guest has it open: 1 MiB of 0x5a at 1 MiB.
qemu-io -f qcow2 -c 'write -P 0x5a 1M 1M' "$pool_dir/$name-1-data.qcow2" >/dev/null
say "wrote 1 MiB of 0x5a at offset 1 MiB into $name-1-data.qcow2 (qemu-io)"

step "terraform apply -var running=true: the guests boot"
tf apply -auto-approve | grep -E '^(virt_|Apply complete)'
wait_ready "$name-1" 1
wait_ready "$name-2" 1
mark "apply running = true, until both guests are ready"

step "4. the guests read their own metadata (their NoCloud seed), from their serial consoles"
for i in 1 2; do
  say "$name-$i: $(console "$name-$i" | sed -n 's/^TINYGUEST meta //p' | tr '\n' ' ')"
done

step "2. a per-instance config's metadata on one member"
m1=$(console "$name-1" | grep -c '^TINYGUEST meta node-id=1$' || true)
m2=$(console "$name-2" | grep -c '^TINYGUEST meta node-id=' || true)
say "$name-1 sees node-id=1: $([ "$m1" -ge 1 ] && echo yes || echo NO); $name-2 sees a node-id: $([ "$m2" -ge 1 ] && echo YES || echo no)"
[ "$m1" -ge 1 ] && [ "$m2" = 0 ] || die "the per-instance config's metadata did not reach $name-1 alone"

step "1. a stateful data disk through a REPLACE (cloud_init user_data changed)"
uuid_before=$(virsh domuuid "$name-1")
sum_before=$(data_sum "$name-1")
say "before: uuid $uuid_before, data disk sha256(bytes 512..) $sum_before"
plan -var "user_data=$ud2"
say "plan: $name-1 $(planned "$name-1")"
tf apply -auto-approve -var "user_data=$ud2" | grep -E '^(virt_|Apply complete)'
wait_ready "$name-1" 2
wait_ready "$name-2" 2 # replaced in the same apply
uuid_after=$(virsh domuuid "$name-1")
sum_after=$(data_sum "$name-1")
say "after:  uuid $uuid_after, data disk sha256(bytes 512..) $sum_after"
say "guest: $(console "$name-1" | grep '^TINYGUEST boot=' | tr '\n' ' ')"
[ "${sum_before% *}" = "${sum_after% *}" ] || die "the data disk's bytes changed through the REPLACE"
[ "${sum_before#* }" = counter=1 ] && [ "${sum_after#* }" = counter=2 ] || die "the boot counter on the data disk did not go from 1 to 2"
qemu-io -U -r -f qcow2 -c 'read -P 0x5a 1M 1M' "$pool_dir/$name-1-data.qcow2" | grep -q '^read 1048576/1048576' || die "the pattern is not on the data disk"
say "same bytes after the REPLACE, the pattern still there (qemu-io read -P 0x5a), and the guest's boot counter went on: 1 -> 2"
mark "4, 2 and 1: metadata, plan, REPLACE of both, ready"

step "3. members killed behind Terraform's back, healed by the next apply: $name-2 destroyed with virsh, $name-1's QEMU killed (SIGKILL)"
sum_before=$(data_sum "$name-1")
id_before=$(virsh domid "$name-2")
boots1=$(console "$name-1" | grep -c '^TINYGUEST ready' || true)
boots2=$(console "$name-2" | grep -c '^TINYGUEST ready' || true)
virsh destroy "$name-2" >/dev/null
say "virsh destroy $name-2 (domain id $id_before): $(virsh domstate --reason "$name-2")"
pid=$(cat "/var/run/libvirt/qemu/$name-1.pid")
kill -KILL "$pid"
for i in $(seq 300); do [ "$(virsh domstate "$name-1")" = "shut off" ] && break; sleep 0.1; done
say "kill -KILL $pid (QEMU of $name-1): $(virsh domstate --reason "$name-1")"
# One plan and one apply for both: a member stopped cleanly or destroyed is started again (the least
# repair); a crashed one is replaced by autohealing, its data disk kept. Both boot at once.
plan -var "user_data=$ud2"
say "plan: $name-2 $(planned "$name-2")"
say "plan: $name-1 $(planned "$name-1")"
tf apply -auto-approve -var "user_data=$ud2" | grep -E '^(virt_|Apply complete)'
wait_ready "$name-2" $((boots2 + 1))
wait_ready "$name-1" $((boots1 + 1))
say "after apply: $name-2 $(virsh domstate "$name-2"), domain id $(virsh domid "$name-2"); its guest booted again: $(console "$name-2" | grep '^TINYGUEST boot=' | tail -n1)"
[ "$(virsh domstate "$name-2")" = running ] || die "$name-2 was not healed"
sum_after=$(data_sum "$name-1")
say "$name-1 replaced (uuid $(virsh domuuid "$name-1")): data disk sha256(bytes 512..) before $sum_before, after $sum_after; its guest: $(console "$name-1" | grep '^TINYGUEST boot=' | tail -n1)"
[ "${sum_before% *}" = "${sum_after% *}" ] || die "the data disk's bytes changed through the autoheal"
mark "3: virsh destroy and SIGKILL, plan, apply, both ready"
