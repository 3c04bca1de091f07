#!/usr/bin/env bash
# hack/takeover/takeover.sh: the peer (Karpenter) and dovetail switching
# controllers in place, both ways, on one `dovetail local up` stack.
#
#   make test-takeover          (or: hack/takeover/takeover.sh, from the repo root)
#
#  0. builds dovetail from this checkout and the peer's controller
#     (github.com/aws/karpenter-provider-aws/cmd/controller@$PEER_VERSION)
#     from the Go module proxy into $TAKEOVER_DIR (nothing of the peer is
#     in this repository; the first build takes ~25 min on 2 cores);
#  1. starts a stack with no dovetail controller and installs the peer as a
#     user has it: `helm install` of its karpenter-crd and karpenter charts
#     (from its module, with its own values.yaml plus a cluster name); the
#     chart's pods cannot run on the stack's kwok nodes, so the Deployment is
#     scaled to 0 and the peer's controller runs out of cluster against the
#     stack and its AWS emulator with the chart's settings; applies
#     nodepool.yaml and workload.yaml and waits for every pod Running;
#  2. moves over exactly as docs/install.md "Moving over from the peer"
#     says: the peer stopped, the CRDs handed from karpenter-crd to
#     dovetail-crd (dovetail's CRDs replace the peer's), `helm uninstall
#     karpenter`, `helm install dovetail charts/dovetail -f <the peer's
#     values.yaml>`; dovetail's controller runs out of cluster with the
#     environment and arguments of that release's Deployment; watches
#     $TAKEOVER_S seconds: no NodeClaim of the peer may go except by a
#     disruption command, none may be Drifted, no pod may be left Pending,
#     no controller may log a reconcile error;
#  3. grows every Deployment by half: dovetail must bring all of it Running;
#  4. moves back as the same section says (dovetail stopped, the CRDs handed
#     back to karpenter-crd, dovetail's release removed, the peer's chart
#     installed again) and starts the peer; watches $BACK_S seconds: nothing
#     may be deleted except by the peer's own disruption decisions, none of
#     them for drift, nothing Drifted, no pod Pending at the end.
#
# Prints one line per phase, writes $TAKEOVER_DIR/run/verdict.txt and the
# logs, and exits 1 when any check fails (2 when the setup fails).
#
# Settings: TAKEOVER_DIR (default a new directory under ${TMPDIR:-/tmp};
# reusing one reuses its binaries), PEER_VERSION (v1.15.0: v1.15.1 and
# v1.15.2 need sigs.k8s.io/karpenter@v1.15.1, which the proxy does not
# serve), PEER_CHART_VERSION (v1.15.2: the peer's charts and values.yaml),
# TIME_SCALE (0.1), AWS_SEED (7), TAKEOVER_S (180), BACK_S (120).
# Needs go, jq, curl, python3 with PyYAML, the control-plane binaries of
# `make controlplane` and the Helm CLI of `make helm` (or $DOVETAIL_HELM).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/hack/takeover"
TAKEOVER_DIR="${TAKEOVER_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/dovetail-takeover.XXXXXX")}"
PEER_VERSION="${PEER_VERSION:-v1.15.0}"
PEER_CHART_VERSION="${PEER_CHART_VERSION:-v1.15.2}"
TIME_SCALE="${TIME_SCALE:-0.1}"
AWS_SEED="${AWS_SEED:-7}"
TAKEOVER_S="${TAKEOVER_S:-180}"
BACK_S="${BACK_S:-120}"
CLUSTER=local
BIN="$TAKEOVER_DIR/bin"
RUN="$TAKEOVER_DIR/run"
NS=takeover

log() { printf '%s %s\n' "$(date -u +%T)" "$*" >&2; }
die() { log "FATAL: $*"; exit 2; }

for tool in go jq curl python3; do command -v "$tool" >/dev/null || die "$tool is needed"; done
python3 -c 'import yaml' 2>/dev/null || die "python3 needs PyYAML"
KUBECTL=$(ls "${DOVETAIL_CACHE_DIR:-$HOME/.cache/dovetail}"/controlplane/*/kubectl 2>/dev/null | head -n1)
[ -n "$KUBECTL" ] || die "no control plane binaries: run make controlplane"
HELM="${DOVETAIL_HELM:-$(cd "$ROOT/tools/helm" && GOTOOLCHAIN=local go run ./cmd/build-helm 2>/dev/null)}"
[ -x "$HELM" ] || die "no Helm CLI: run make helm"
mkdir -p "$BIN" "$RUN"
rm -rf "${RUN:?}"/* 2>/dev/null || true

# --- 0. binaries ---------------------------------------------------------------
log "building dovetail into $BIN"
(cd "$ROOT" && nice -n 10 go build -o "$BIN/dovetail" ./cmd/dovetail)
PEER_MOD="$TAKEOVER_DIR/peer"
if [ ! -x "$BIN/karpenter" ]; then
  log "building the peer's controller $PEER_VERSION from the Go module proxy (about 25 min cold on 2 cores)"
  rm -rf "$PEER_MOD" && mkdir -p "$PEER_MOD"
  # A throwaway module that only requires the peer. Its go.mod asks for a
  # newer Go than may be installed: GOTOOLCHAIN=auto fetches that toolchain
  # through the proxy. timestreamwrite v1.43.1, which the peer requires, is
  # not served by the proxy; v1.43.0 has the same API for the peer's use.
  (
    cd "$PEER_MOD"
    export GOTOOLCHAIN=auto GOFLAGS=-mod=mod
    go mod init takeover-peer >/dev/null 2>&1
    go mod edit -replace github.com/aws/aws-sdk-go-v2/service/timestreamwrite=github.com/aws/aws-sdk-go-v2/service/timestreamwrite@v1.43.0
    go get "github.com/aws/karpenter-provider-aws@$PEER_VERSION" >&2
    nice -n 10 go build -o "$BIN/karpenter" github.com/aws/karpenter-provider-aws/cmd/controller
  ) || die "building the peer failed"
fi
# The charts are the peer's $PEER_CHART_VERSION (the release users run). Its
# module asks for a newer Go than may be installed, so `go mod download`
# fetches the zip and then reports an error: the charts are read from the zip.
mkdir -p "$TAKEOVER_DIR/download" # outside any module
PEER_ZIP="$(cd "$TAKEOVER_DIR/download" && { GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "github.com/aws/karpenter-provider-aws@$PEER_CHART_VERSION" 2>/dev/null || true; } | jq -r .Zip)"
PEER_SRC="$TAKEOVER_DIR/peer-charts"
rm -rf "$PEER_SRC"
python3 - "$PEER_ZIP" "$PEER_SRC" "github.com/aws/karpenter-provider-aws@$PEER_CHART_VERSION/" <<'PY' || die "no peer charts in $PEER_ZIP"
import os, sys, zipfile
zf, dst, root = zipfile.ZipFile(sys.argv[1]), sys.argv[2], sys.argv[3]
for n in zf.namelist():
    if n.startswith(root + "charts/") and not n.endswith("/"):
        p = os.path.join(dst, n[len(root):])
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "wb").write(zf.read(n))
PY
[ -f "$PEER_SRC/charts/karpenter/values.yaml" ] || die "no peer chart in github.com/aws/karpenter-provider-aws@$PEER_CHART_VERSION"
PEER_VALUES="$PEER_SRC/charts/karpenter/values.yaml" # the peer's own values.yaml, unchanged

# --- the stack -----------------------------------------------------------------
STACK="$RUN/stack"
STACK_PGID= PEER_PGID= DT_PGID=
stop_group() { # stop_group PGID: SIGTERM the process group, SIGKILL after 30 s
  local g=$1 i
  [ -n "$g" ] || return 0
  kill -TERM -- "-$g" 2>/dev/null || return 0
  for i in $(seq 1 60); do kill -0 "$g" 2>/dev/null || return 0; sleep 0.5; done
  kill -KILL -- "-$g" 2>/dev/null || true
}
cleanup() { stop_group "$DT_PGID"; stop_group "$PEER_PGID"; stop_group "$STACK_PGID"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

kubectl() { "$KUBECTL" --kubeconfig "$STACK/kubeconfig" "$@"; }
helm() { "$HELM" --kubeconfig "$STACK/kubeconfig" "$@"; }
# cmd: run and log one command of the migration (docs/install.md), output to the run's log.
cmd() { printf '$ %s\n' "$*" >>"$RUN/migration.log"; "$@" >>"$RUN/migration.log" 2>&1 || die "failed: $* (see $RUN/migration.log)"; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

log "starting dovetail local up (no controller) in $STACK"
setsid "$BIN/dovetail" local up --dir "$STACK" --cluster-name "$CLUSTER" --controller-replicas 0 \
  --time-scale "$TIME_SCALE" --aws-seed "$AWS_SEED" >"$RUN/stack.stdout" 2>"$RUN/stack.stderr" </dev/null &
STACK_PGID=$!
for i in $(seq 1 600); do
  grep -q '^ready:' "$RUN/stack.stdout" 2>/dev/null && break
  kill -0 "$STACK_PGID" 2>/dev/null || { tail -n 20 "$RUN/stack.stderr" >&2; die "local up exited"; }
  sleep 1
done
grep -q '^ready:' "$RUN/stack.stdout" || die "the stack was not ready after 600 s"
set -a; . "$STACK/aws.env"; set +a
TOKEN=$(cat "$STACK/aws-admin-token")
SERVER=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
emu() { curl -sf -H "Authorization: Bearer $TOKEN" "$AWS_ENDPOINT_URL/_dovetail/$1"; }
fleet() { # live instances and their $/h at the emulator's launch prices
  emu instances | jq -r '[.[] | select(.state=="pending" or .state=="running")] | "\(length) instances, $\((map(.price)|add // 0)*1000|round/1000)/h"'
}
running() { kubectl get pods -n "$NS" --no-headers -o custom-columns=P:.status.phase 2>/dev/null | grep -c '^Running$' || true; }
pending() { kubectl get pods -n "$NS" --no-headers --field-selector=status.phase=Pending 2>/dev/null | wc -l; }
nodeclaims() { kubectl get nodeclaims -o json | jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name' | sort; }
wait_running() { # wait_running N SECONDS
  local i
  for i in $(seq 1 "$2"); do [ "$(running)" -ge "$1" ] && return 0; sleep 1; done
  return 1
}
drifted() { kubectl get nodeclaims -o json | jq '[.items[] | select(any(.status.conditions[]?; .type=="Drifted" and .status=="True"))] | length'; }

# deployment_env RELEASE: the environment of a release's controller container,
# one NAME=VALUE a line; downward-API values are resolved as the kubelet would.
deployment_env() {
  kubectl -n kube-system get deployment "$1" -o json | jq -r '.spec.template.spec.containers[0] as $c | $c.env[] |
    if .value != null then "\(.name)=\(.value)"
    elif .valueFrom.fieldRef.fieldPath == "metadata.namespace" then "\(.name)=kube-system"
    elif .valueFrom.resourceFieldRef.resource == "requests.cpu" then "\(.name)=\((($c.resources.requests.cpu // "1") | tostring) as $v | if ($v|endswith("m")) then ($v|rtrimstr("m")) else (($v|tonumber)*1000|tostring) end)"
    elif .valueFrom.resourceFieldRef.resource == "limits.memory" then empty
    else empty end'
}
# run_out_of_cluster RELEASE BINARY LOG [ARG...]: runs a release's controller
# as its Deployment would (its environment and arguments), out of cluster:
# the stack's admin kubeconfig, the emulator's AWS settings, free ports on
# loopback, no leader election. Prints the process group id.
run_out_of_cluster() {
  local rel=$1 bin=$2 out=$3; shift 3
  local -a envs
  mapfile -t envs < <(deployment_env "$rel")
  printf '%s\n' "${envs[@]}" >"$out.env"
  env "${envs[@]}" KUBECONFIG="$STACK/kubeconfig" CLUSTER_ENDPOINT="$SERVER" INTERRUPTION_QUEUE="$DOVETAIL_INTERRUPTION_QUEUE" \
    DISABLE_LEADER_ELECTION=true METRICS_PORT="$(freeport)" HEALTH_PROBE_PORT="$HEALTH" LOG_LEVEL=debug \
    AWS_EC2_METADATA_DISABLED=true \
    setsid "$bin" "$@" >>"$out" 2>&1 </dev/null &
  echo $!
}
wait_ready() { # wait_ready PGID LOG NAME
  local i
  for i in $(seq 1 180); do
    curl -sf "http://127.0.0.1:$HEALTH/readyz" >/dev/null 2>&1 && { log "$3 running (pid $1, log $2)"; return 0; }
    kill -0 "$1" 2>/dev/null || { tail -n 20 "$2" >&2; die "$3 exited"; }
    sleep 1
  done
  die "$3 was not ready after 180 s"
}
start_peer() {
  HEALTH=$(freeport)
  PEER_PGID=$(run_out_of_cluster karpenter "$BIN/karpenter" "$RUN/peer.log")
  wait_ready "$PEER_PGID" "$RUN/peer.log" "the peer"
}
start_dovetail() {
  HEALTH=$(freeport)
  local -a args
  mapfile -t args < <(kubectl -n kube-system get deployment dovetail -o json | jq -r '.spec.template.spec.containers[0].args[]')
  DT_PGID=$(run_out_of_cluster dovetail "$BIN/dovetail" "$RUN/dovetail.log" "${args[@]}" --leader-elect=false --bind-address 127.0.0.1 --liveness-time-scale "$TIME_SCALE")
  wait_ready "$DT_PGID" "$RUN/dovetail.log" "dovetail's controller"
}
CRDS="crd/nodepools.karpenter.sh crd/nodeclaims.karpenter.sh crd/ec2nodeclasses.karpenter.k8s.aws crd/nodeoverlays.karpenter.sh crd/capacitybuffers.autoscaling.x-k8s.io"
# hand_crds FROM TO: docs/install.md's CRD hand-over between two CRD releases.
# The FROM release's record is deleted, never the release uninstalled: `helm
# uninstall` deletes every CRD its stored manifest lists (a
# helm.sh/resource-policy=keep annotated on the live objects does not count),
# and with them every NodePool, NodeClaim and EC2NodeClass.
hand_crds() {
  cmd kubectl -n kube-system delete secret -l owner=helm,name="$1"
  # shellcheck disable=SC2086
  cmd kubectl label --overwrite $CRDS app.kubernetes.io/managed-by=Helm
  # shellcheck disable=SC2086
  cmd kubectl annotate --overwrite $CRDS meta.helm.sh/release-name="$2" meta.helm.sh/release-namespace=kube-system
}
# migrate FROM TO CRD_CHART CHART: docs/install.md's switch from release FROM
# (its controller already stopped) to release TO: FROM at zero replicas, the
# CRDs handed from FROM-crd to TO-crd, FROM removed, TO installed with the
# peer's values.yaml. TO's Deployment is scaled to zero (its pods cannot run
# on kwok nodes; its controller runs out of cluster).
migrate() {
  local from=$1 to=$2
  cmd kubectl -n kube-system scale deployment "$from" --replicas=0
  cmd kubectl -n kube-system wait --for=delete pod -l app.kubernetes.io/name="$from" --timeout=2m
  hand_crds "$from-crd" "$to-crd"
  cmd helm install "$to-crd" "$3" --namespace kube-system
  cmd helm uninstall "$from" -n kube-system
  cmd helm install "$to" "$4" --namespace kube-system -f "$PEER_VALUES" \
    --set settings.clusterName="$CLUSTER" --set settings.interruptionQueue="$DOVETAIL_INTERRUPTION_QUEUE"
  cmd kubectl -n kube-system scale deployment "$to" --replicas=0
}

# --- 1. the peer, installed as a user has it, provisions ------------------------------
# `local up` installs dovetail's CRDs; a cluster running the peer has the
# peer's, from its karpenter-crd release: they are handed to that release
# (as docs/install.md hands them over), which replaces them with the peer's;
# `local up` applied them server-side as "dovetail", hence --force-conflicts.
# shellcheck disable=SC2086
cmd kubectl label --overwrite $CRDS app.kubernetes.io/managed-by=Helm
# shellcheck disable=SC2086
cmd kubectl annotate --overwrite $CRDS meta.helm.sh/release-name=karpenter-crd meta.helm.sh/release-namespace=kube-system
cmd helm install karpenter-crd "$PEER_SRC/charts/karpenter-crd" --namespace kube-system --force-conflicts
cmd helm install karpenter "$PEER_SRC/charts/karpenter" --namespace kube-system -f "$PEER_VALUES" \
  --set settings.clusterName="$CLUSTER" --set settings.interruptionQueue="$DOVETAIL_INTERRUPTION_QUEUE"
# The chart's pods cannot run on kwok nodes: its controller runs out of cluster.
cmd kubectl -n kube-system scale deployment karpenter --replicas=0
start_peer
sed "s/CLUSTER/$CLUSTER/g" "$HERE/nodepool.yaml" | kubectl apply -f - >/dev/null
for i in $(seq 1 180); do
  [ "$(kubectl get ec2nodeclass default -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
  sleep 1
done
[ "$(kubectl get ec2nodeclass default -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] || die "the peer never made the EC2NodeClass Ready"
kubectl apply -f "$HERE/workload.yaml" >/dev/null
WANT=$(kubectl get deploy -n "$NS" -o json | jq '[.items[].spec.replicas] | add')
t0=$(date +%s)
wait_running "$WANT" 600 || die "the peer did not bring $WANT pods Running in 600 s ($(running) Running)"
log "peer: $WANT pods Running in $(( $(date +%s) - t0 )) s; $(nodeclaims | wc -l) NodeClaims; $(fleet)"
# Let the peer settle (registration, initialization, a consolidation pass).
for i in $(seq 1 60); do
  [ "$(kubectl get nodeclaims -o json | jq '[.items[] | select(any(.status.conditions[]?; .type=="Initialized" and .status=="True") | not)] | length')" = 0 ] && break
  sleep 1
done
sleep 15

# --- 2. peer -> dovetail, as docs/install.md says --------------------------------------
stop_group "$PEER_PGID"; PEER_PGID=
kubectl get nodeclaims -o yaml >"$RUN/nodeclaims-peer.yaml"
PEER_NC=$(nodeclaims)
npeer=$(echo "$PEER_NC" | grep -c . || true)
log "peer stopped: $npeer NodeClaims; $(fleet)"
migrate karpenter dovetail "$ROOT/charts/dovetail-crd" "$ROOT/charts/dovetail"
# dovetail_crd: true when the live NodeClaim CRD is dovetail's (its schema's
# description, which the peer's words differently).
dovetail_crd() {
  kubectl get crd nodeclaims.karpenter.sh -o yaml >"$RUN/crd-nodeclaims.yaml"
  grep -q 'NodeClaim is one planned or running node' "$RUN/crd-nodeclaims.yaml"
}
dovetail_crd || die "the NodeClaim CRD is not dovetail's after the hand-over"
calls0=$(emu calls | jq length)
start_dovetail
log "watching ${TAKEOVER_S} s"
maxpend=0
printf 't_s\trunning\tpending\tnodeclaims\tpeer_nodeclaims_left\tfleet\n' >"$RUN/takeover.tsv"
for t in $(seq 0 5 "$TAKEOVER_S"); do
  p=$(pending); [ "$p" -gt "$maxpend" ] && maxpend=$p
  now=$(nodeclaims)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$(running)" "$p" "$(echo "$now" | grep -c . || true)" \
    "$(comm -12 <(echo "$PEER_NC") <(echo "$now") | grep -c . || true)" "$(fleet)" >>"$RUN/takeover.tsv"
  kill -0 "$DT_PGID" 2>/dev/null || die "dovetail's controller exited: $(tail -n 5 "$RUN/dovetail.log")"
  sleep 5
done
GONE=$(comm -23 <(echo "$PEER_NC") <(nodeclaims))
ngone=$(echo "$GONE" | grep -c . || true)
bycmd=0
for nc in $GONE; do grep 'disruption command' "$RUN/dovetail.log" | grep -q "$nc" && bycmd=$((bycmd + 1)); done
drift1=$(drifted)
rerr1=$(grep -c 'Reconciler error' "$RUN/dovetail.log" || true)
pend1=$(pending)
P1="peer->dovetail: $ngone of $npeer peer NodeClaims deleted in ${TAKEOVER_S} s ($bycmd by a disruption command, $((ngone - bycmd)) otherwise), $drift1 Drifted, max $maxpend pods Pending ($pend1 at the end), $rerr1 reconcile errors, $(( $(emu calls | jq length) - calls0 )) AWS calls; $(fleet)"
log "$P1"

# --- 3. growth under dovetail ------------------------------------------------------
for d in $(kubectl get deploy -n "$NS" -o name); do
  r=$(kubectl get -n "$NS" "$d" -o jsonpath='{.spec.replicas}')
  kubectl scale -n "$NS" "$d" --replicas=$(( r + r / 2 )) >/dev/null
done
WANT2=$(kubectl get deploy -n "$NS" -o json | jq '[.items[].spec.replicas] | add')
t0=$(date +%s)
if wait_running "$WANT2" 300; then grew=1; P2="growth: $WANT2 pods Running in $(( $(date +%s) - t0 )) s"; else grew=0; P2="growth: FAILED, $(running) of $WANT2 Running after 300 s"; fi
sleep 10
rerr2=$(grep -c 'Reconciler error' "$RUN/dovetail.log" || true)
P2="$P2; $(nodeclaims | wc -l) NodeClaims, $(fleet), $rerr2 reconcile errors in all"
log "$P2"

# --- 4. dovetail -> peer, as docs/install.md says ----------------------------------------
stop_group "$DT_PGID"; DT_PGID=
kubectl get nodeclaims -o yaml >"$RUN/nodeclaims-dovetail.yaml"
DT_NC=$(nodeclaims)
ndt=$(echo "$DT_NC" | grep -c . || true)
log "dovetail stopped: $ndt NodeClaims"
migrate dovetail karpenter "$PEER_SRC/charts/karpenter-crd" "$PEER_SRC/charts/karpenter"
dovetail_crd && die "the NodeClaim CRD is still dovetail's after the hand-over back"
echo "--- the peer again ---" >>"$RUN/peer.log"
start_peer
log "watching ${BACK_S} s"
sleep "$BACK_S"
GONE2=$(comm -23 <(echo "$DT_NC") <(nodeclaims))
ngone2=$(echo "$GONE2" | grep -c . || true)
sed -n '/--- the peer again ---/,$p' "$RUN/peer.log" | grep 'disrupting node' >"$RUN/peer-disruptions.log" || true
bycmd2=0
for nc in $GONE2; do grep -q "$nc" "$RUN/peer-disruptions.log" && bycmd2=$((bycmd2 + 1)); done
pend2=$(pending)
drift2=$(grep -ci 'drift' "$RUN/peer-disruptions.log" || true)
drifted2=$(drifted)
perr2=$(sed -n '/--- the peer again ---/,$p' "$RUN/peer.log" | grep -c '"level":"ERROR"' || true)
P3="dovetail->peer: $ngone2 of $ndt NodeClaims deleted in ${BACK_S} s ($bycmd2 by the peer's own disruption decisions, $((ngone2 - bycmd2)) otherwise), $drifted2 Drifted, $drift2 drift decisions, $pend2 pods Pending, $perr2 peer error lines; $(fleet)"
log "$P3"

echo "takeover: $P1; $P2; $P3" | tee "$RUN/verdict.txt"
fail=0
[ $((ngone - bycmd)) -eq 0 ] || { log "FAIL: peer NodeClaims deleted not by a disruption command: $(comm -23 <(echo "$PEER_NC") <(nodeclaims) | tr '\n' ' ')"; fail=1; }
[ "$drift1" -eq 0 ] || { log "FAIL: $drift1 NodeClaims Drifted under dovetail"; fail=1; }
[ "$pend1" -eq 0 ] || { log "FAIL: $pend1 pods Pending at the end of the takeover watch"; fail=1; }
[ "$rerr2" -eq 0 ] || { log "FAIL: dovetail logged $rerr2 reconcile errors: $(grep 'Reconciler error' "$RUN/dovetail.log" | head -n 3)"; fail=1; }
[ "$grew" -eq 1 ] || { log "FAIL: the growth did not all run"; fail=1; }
[ $((ngone2 - bycmd2)) -eq 0 ] || { log "FAIL: $((ngone2 - bycmd2)) NodeClaims deleted under the peer not by a disruption decision of its own"; fail=1; }
[ "$drift2" -eq 0 ] || { log "FAIL: the peer decided drift: $(grep -i drift "$RUN/peer-disruptions.log" | head -n 3)"; fail=1; }
[ "$drifted2" -eq 0 ] || { log "FAIL: $drifted2 NodeClaims Drifted under the peer"; fail=1; }
[ "$pend2" -eq 0 ] || { log "FAIL: $pend2 pods Pending under the peer"; fail=1; }
[ $fail -eq 0 ] && log "PASS (logs and figures in $RUN; the migration's commands in $RUN/migration.log)"
exit $fail
