#!/usr/bin/env bash
# The quickstart, end to end: apply examples/quickstart with the provider just built, show the
# members, change their metadata live and show that no domain restarted, then destroy the group
# (DEMO_KEEP=1 keeps it and prints where its working directory is).
set -euo pipefail

bin_dir=${1:?usage: demo.sh BIN_DIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/virt-demo.XXXXXX)
ns=https://virtfleet.dev/xmlns/virt/1
step() { printf '\n== %s\n' "$*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The CLI configuration lives in the scratch directory, never in the user's home. dev_overrides
# runs the binary just built; the filesystem mirror lets `terraform init` resolve the provider
# without a registry, which this host may not reach.
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
export TF_CLI_CONFIG_FILE="$work/cli.tfrc" TF_IN_AUTOMATION=1 TF_INPUT=0
cp "$repo/examples/quickstart/main.tf" "$work/"
cd "$work"

cleanup() {
  if [ "${DEMO_KEEP:-0}" = 1 ]; then
    printf '\nThe group is still running; its Terraform directory is %s (TF_CLI_CONFIG_FILE=%s).\n' "$work" "$work/cli.tfrc"
    return
  fi
  step "terraform destroy"
  terraform destroy -auto-approve -no-color >/dev/null && echo "group demo destroyed"
  rm -rf "$work"
}
trap cleanup EXIT

step "terraform init && terraform apply (3 instances with a data disk)"
terraform init -no-color >"$work/init.log" 2>&1 || { cat "$work/init.log"; exit 1; }
start=$(now_ms)
terraform apply -auto-approve -no-color | grep -E '^(virt_stateful_group|Apply complete)'
echo "apply took $(($(now_ms) - start)) ms"

step "the group's instances"
printf '%-10s %-10s %-4s %s\n' NAME STATUS ID DISKS
for d in demo-1 demo-2 demo-3; do
  state=$(virsh domstate "$d")
  id=$(virsh domid "$d")
  disks=$(virsh domblklist "$d" | awk 'NR>2 && NF==2 {printf "%s=%s ", $1, $2}')
  printf '%-10s %-10s %-4s %s\n' "$d" "$state" "$id" "$disks"
done
ids_before=$(for d in demo-1 demo-2 demo-3; do virsh domid "$d"; done | tr '\n' ' ')
echo "metadata of demo-1: role=$(virsh metadata demo-1 --uri "$ns" | sed -n 's/.*"role":"\([^"]*\)".*/\1/p' | head -1)"

step "hot metadata change: role = db -> web"
start=$(now_ms)
terraform apply -auto-approve -no-color -var role=web | grep -E '^(virt_stateful_group|Apply complete|demo-)'
echo "apply took $(($(now_ms) - start)) ms"
ids_after=$(for d in demo-1 demo-2 demo-3; do virsh domid "$d"; done | tr '\n' ' ')
echo "metadata of demo-1: role=$(virsh metadata demo-1 --uri "$ns" | sed -n 's/.*"role":"\([^"]*\)".*/\1/p' | head -1)"
echo "domain ids before: $ids_before"
echo "domain ids after:  $ids_after"
if [ "$ids_before" = "$ids_after" ]; then
  echo "no domain restarted: the change was applied live"
else
  echo "a domain restarted during a metadata change" >&2
  exit 1
fi
