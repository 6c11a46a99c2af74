#!/usr/bin/env bash
# tests/conformance/run.sh [BUILD_DIR] — the vendors' own clients against cloudsim: kubectl,
# gcloud, the aws CLI, and (sdk.js) the Azure SDK for JavaScript and @kubernetes/client-node.
# Every check prints "ok - ..." or "not ok - ..."; a missing client is a failure, not a skip.
# Needs ../shared (the KubeRay CRDs and the test key; FLEETD_SHARED_DIR overrides).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/conformance
build=${1:-${FLEETD_BUILD_DIR:-$top/build/asan}}
shared=${FLEETD_SHARED_DIR:-$top/../shared}
failed=0
ok() { echo "ok - $*"; }
bad() { echo "not ok - $*"; failed=$((failed + 1)); }

for c in kubectl gcloud aws node npm; do
	command -v "$c" >/dev/null || { echo "not ok - client $c is missing"; exit 1; }
done
[ -x "$build/cloudsim" ] || { echo "not ok - $build/cloudsim is missing"; exit 1; }
[ -d "$shared/kuberay/crds" ] || { echo "not ok - $shared/kuberay/crds is missing"; exit 1; }
bash "$here/../lib/ensure_npm.sh" "$here" || { echo "not ok - npm dependencies"; exit 1; }

work=$(mktemp -d /tmp/fleetd-conformance.XXXXXX)
S=$work/state
cs_pid=
cleanup() {
	[ -n "$cs_pid" ] && kill "$cs_pid" 2>/dev/null && wait "$cs_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
# throwaway homes: nothing leaks between runs or from the machine's own configs
export HOME=$work/home CLOUDSDK_CONFIG=$work/gcloud AWS_CONFIG_FILE=/dev/null \
	AWS_SHARED_CREDENTIALS_FILE=/dev/null CLOUDSDK_CORE_DISABLE_PROMPTS=1 \
	CLOUDSDK_CORE_CHECK_GCE_METADATA=false CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1 \
	CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true CLOUDSDK_SURVEY_DISABLE_PROMPTS=true \
	KUBECACHEDIR=$work/kubecache
mkdir -p "$HOME" "$CLOUDSDK_CONFIG"
for c in kubectl gcloud aws node; do
	case $c in
	kubectl) v=$(kubectl version --client 2>&1 | head -1) ;;
	*) v=$($c --version 2>&1 | head -1) ;;
	esac
	echo "# $c: $v"
done

sed "s#\.\./\.\./\.\./shared/#$shared/#g" "$top/cloudsim/fleets/test.json" >"$work/fleet.json"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$build/cloudsim" --fleet "$work/fleet.json" \
	--listen 127.0.0.1:0 --state-dir "$S" --crd-dir "$shared/kuberay/crds" --time-scale 1 \
	>"$work/cloudsim.log" 2>&1 &
cs_pid=$!
for _ in $(seq 300); do [ -s "$S/port" ] && break; sleep 0.1; done
[ -s "$S/port" ] || { echo "not ok - cloudsim did not start"; cat "$work/cloudsim.log"; exit 1; }
B=http://127.0.0.1:$(cat "$S/port")
set -a; . "$S/fleetd.env"; set +a
jq_py() { python3 -c "import json,sys; d=json.load(open('$S/clusters.json')); $1"; }

# run NAME CMD...: the command must succeed; its output is kept in $out
run() {
	local name=$1; shift
	if out=$("$@" 2>&1); then ok "$name"; else bad "$name: $(echo "$out" | tail -3 | tr '\n' ' ')"; fi
}
# fail NAME REGEX CMD...: the command must fail and say REGEX.  A failure that says
# something else is tried once more (a client's own transport hiccup under load is not what
# is checked; gcloud once gave "There was a problem refreshing your current auth tokens"
# without the reason in CI), and its whole first answer is printed as a comment.
fail() {
	local name=$1 re=$2; shift 2
	if out=$("$@" 2>&1); then bad "$name: succeeded"; return; fi
	if ! echo "$out" | grep -Eq "$re"; then
		echo "$out" | sed "s/^/# $name, first attempt: /"
		if out=$("$@" 2>&1); then bad "$name: succeeded"; return; fi
	fi
	if echo "$out" | grep -Eq "$re"; then ok "$name"
	else bad "$name: $(echo "$out" | grep -E 'ERROR|rror' | head -3 | tr '\n' ' ')"; fi
}
# has NAME REGEX: the last output matches
has() { if echo "$out" | grep -Eq "$2"; then ok "$1"; else bad "$1: $(echo "$out" | head -5 | tr '\n' ' ')"; fi; }

# ---- names every group needs
gk=$(jq_py "print([c['name'] for c in d['clusters'] if c['provider']=='gke'][0])")
proj=$(jq_py "print([c['project'] for c in d['clusters'] if c['provider']=='gke'][0])")
region=$(jq_py "print([c['region'] for c in d['clusters'] if c['provider']=='gke'][0])")
cp=$(jq_py "print([c['iam']['control_plane']['service_account'] for c in d['clusters'] if c['provider']=='gke'][0])")
nodes_sa=$(jq_py "print([c['iam']['cluster_role']['service_account'] for c in d['clusters'] if c['provider']=='gke'][0])")
hp=$(jq_py "print([c['name'] for c in d['clusters'] if c['provider']=='hyperpod'][0])")
hregion=$(jq_py "print([c['region'] for c in d['clusters'] if c['name']=='$hp'][0])")
harn=$(jq_py "print([c['provider_cluster_id'] for c in d['clusters'] if c['name']=='$hp'][0])")
role=$(jq_py "print([c['iam']['control_plane']['role_arn'] for c in d['clusters'] if c['name']=='$hp'][0])")
STS="--endpoint-url $B/aws/sts --region $hregion"

# ---- gcloud, the aws CLI and the SDKs run beside kubectl (independent clusters and
# identities); their lines are printed after kubectl's
echo "# cloudsim up at ${SECONDS}s"
(
# ---- Google: gcloud
export CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER=$B/gke/ \
	CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=$B/gce/compute/v1/ \
	CLOUDSDK_API_ENDPOINT_OVERRIDES_IAMCREDENTIALS=$B/gcp/iamcredentials/
run "gcloud: auth activate-service-account (token_uri = cloudsim)" \
	gcloud auth activate-service-account --key-file="$FLEETD_GCP_KEY_FILE"
run "gcloud: token exchange and impersonation (generateAccessToken)" gcloud auth print-access-token --impersonate-service-account="$cp"
has "gcloud: an access token" "^ya29\."
fail "gcloud: impersonating an account without the token-creator binding is denied" \
	'PERMISSION_DENIED|getAccessToken|403' gcloud auth print-access-token --impersonate-service-account="$nodes_sa"
G="--project $proj --impersonate-service-account=$cp"
run "gcloud: container clusters describe" gcloud container clusters describe "$gk" --region "$region" $G --format='value(name,currentNodeCount)'
has "gcloud: the cluster and its node count" "^$gk	[0-9]+"
run "gcloud: container node-pools list" gcloud container node-pools list --cluster "$gk" --region "$region" $G --format='value(name,config.machineType)'
has "gcloud: node pools with machine types" "a3-highgpu-8g"
run "gcloud: compute regions describe (quotas)" gcloud compute regions describe "$region" $G --format='json(quotas)'
has "gcloud: regional GPU quota" "NVIDIA_H100_GPUS"
run "gcloud: compute reservations list (pages of 1)" gcloud compute reservations list $G --page-size=1 --format='value(name)'
n=$(echo "$out" | grep -vc "^WARNING")
[ "$n" -eq "$(python3 -c "import json; print(sum(len(p.get('reservations',[])) for p in json.load(open('$work/fleet.json'))['gcp']['projects'] if p['id']=='$proj'))")" ] \
	&& ok "gcloud: every reservation across pages ($n)" || bad "gcloud: $n reservations across pages"
sed 's/"private_key_id": "[^"]*"/"private_key_id": "x"/' "$FLEETD_GCP_KEY_FILE" | python3 -c "
import json,sys,subprocess
k=json.load(sys.stdin)
k['private_key']=subprocess.run(['openssl','genpkey','-algorithm','RSA','-pkeyopt','rsa_keygen_bits:2048'],capture_output=True,text=True).stdout
json.dump(k,open('$work/forged-key.json','w'))"
fail "gcloud: a key cloudsim does not know is invalid_grant" 'invalid_grant|Invalid JWT Signature' \
	gcloud auth activate-service-account --key-file="$work/forged-key.json"

) >"$work/gcloud.txt" 2>&1 &
gpid=$!
(
# ---- AWS: the aws CLI (SigV4 with the fleet's keys)
export AWS_ACCESS_KEY_ID=$FLEETD_AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$FLEETD_AWS_SECRET_ACCESS_KEY
run "aws: sts get-caller-identity" aws sts get-caller-identity $STS
has "aws: caller is fleetd's user" "user/fleetd"
# what Terraform does between the two phases: the trust policy's external id, the cloud-id tag
curl -sf -XPOST "$B/_sim/iam" -d "{\"provider\":\"aws\",\"role_arn\":\"$role\",\"external_id\":\"ext-conformance\",\"tags\":{\"fleet.io/cloud-id\":\"c-123\"}}" >/dev/null
fail "aws: AssumeRole without the external id is AccessDenied" 'AccessDenied' \
	aws sts assume-role --role-arn "$role" --role-session-name conf $STS
fail "aws: AssumeRole with a wrong external id is AccessDenied" 'AccessDenied' \
	aws sts assume-role --role-arn "$role" --role-session-name conf --external-id nope $STS
run "aws: AssumeRole with the external id" aws sts assume-role --role-arn "$role" \
	--role-session-name conf --external-id ext-conformance $STS --output json
creds=$out
export AWS_ACCESS_KEY_ID=$(echo "$creds" | python3 -c "import json,sys; print(json.load(sys.stdin)['Credentials']['AccessKeyId'])")
export AWS_SECRET_ACCESS_KEY=$(echo "$creds" | python3 -c "import json,sys; print(json.load(sys.stdin)['Credentials']['SecretAccessKey'])")
export AWS_SESSION_TOKEN=$(echo "$creds" | python3 -c "import json,sys; print(json.load(sys.stdin)['Credentials']['SessionToken'])")
run "aws: get-caller-identity as the assumed role" aws sts get-caller-identity $STS
has "aws: assumed-role ARN and role-id:session UserId" 'assumed-role/.*/conf'
run "aws: iam get-role with tags" aws iam get-role --role-name "${role##*/}" --endpoint-url "$B/aws/iam" --region us-east-1
has "aws: the cloud-id tag" "c-123"
SM="--endpoint-url $B/aws/sagemaker --region $hregion"
run "aws: sagemaker describe-cluster" aws sagemaker describe-cluster --cluster-name "$harn" $SM
has "aws: cluster InService with instance groups" "InService"
run "aws: sagemaker list-cluster-nodes (pages of 1, CLI follows NextToken)" \
	aws sagemaker list-cluster-nodes --cluster-name "$harn" $SM --page-size 1 --output json
all=$(echo "$out" | grep -c '"InstanceId"')
run "aws: list-cluster-nodes --max-items 1 returns a NextToken" \
	aws sagemaker list-cluster-nodes --cluster-name "$harn" $SM --max-items 1 --output json
has "aws: NextToken" "NextToken"
[ "$all" -gt 2 ] && ok "aws: every node across pages ($all)" || bad "aws: $all nodes across pages"
run "aws: sagemaker list-clusters (the scope's region, the role's account)" \
	aws sagemaker list-clusters $SM --output json
has "aws: the HyperPod cluster in ClusterSummaries" "\"ClusterName\": \"$hp\""
echo "$out" | grep -q '"ClusterStatus": "InService"' && echo "$out" | grep -q '"CreationTime"' &&
	echo "$out" | grep -q "\"ClusterArn\": \"$harn\"" && ok "aws: ClusterArn, ClusterStatus, CreationTime" ||
	bad "aws: list-clusters summary fields: $(echo "$out" | tr '\n' ' ')"
n=$(echo "$out" | grep -c '"ClusterName"')
[ "$n" -eq "$(jq_py "print(sum(1 for c in d['clusters'] if c['provider']=='hyperpod' and c['region']=='$hregion'))")" ] &&
	ok "aws: only the clusters of $hregion ($n)" || bad "aws: $n clusters listed for $hregion"
run "aws: list-clusters --name-contains with no match" aws sagemaker list-clusters $SM --name-contains nope --output json
has "aws: no summaries" '"ClusterSummaries": \[\]'
fail "aws: list-clusters --sort-by with a bad value is refused by the CLI or the service" \
	'ValidationException|Invalid value|Valid values' aws sagemaker list-clusters $SM --sort-by SIZE
fail "aws: describe of a missing cluster is ResourceNotFound" 'ResourceNotFound|ValidationException' \
	aws sagemaker describe-cluster --cluster-name nope $SM
fail "aws: sagemaker signed for another region is refused" 'InvalidSignatureException|scoped to a valid region' \
	aws sagemaker describe-cluster --cluster-name "$harn" --endpoint-url "$B/aws/sagemaker" --region eu-west-1
unset AWS_SESSION_TOKEN
export AWS_ACCESS_KEY_ID=$FLEETD_AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=wrong
fail "aws: a wrong secret is SignatureDoesNotMatch" 'SignatureDoesNotMatch' aws sts get-caller-identity $STS

) >"$work/aws.txt" 2>&1 &
apid=$!
# ---- Azure SDK for JavaScript and @kubernetes/client-node (on the AKS cluster's API)
NODE_EXTRA_CA_CERTS=$S/ca.pem node "$here/sdk.js" "$S" >"$work/sdk.txt" 2>&1 &
spid=$!

# ---- Kubernetes: kubectl against every member cluster
kubeconfig() {	# kubeconfig NAME TOKEN
	local api ca
	api=$(jq_py "print([c for c in d['clusters'] if c['name']=='$1'][0]['api_server'])")
	ca=$(jq_py "print(d['clusters'][0]['ca_file'])")
	cat <<EOT
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$api", certificate-authority: "$ca"}}]
users: [{name: u, user: {token: "$2"}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
EOT
}
for name in $(jq_py "print(' '.join(c['name'] for c in d['clusters']))"); do
	tok=$(jq_py "print([c for c in d['clusters'] if c['name']=='$name'][0]['token'])")
	kubeconfig "$name" "$tok" >"$work/kc-$name"
	export KUBECONFIG=$work/kc-$name
	run "kubectl $name: api-resources (core and ray.io)" kubectl api-resources
	has "kubectl $name: api-resources lists pods and rayjobs" "^pods .*Pod" 
	echo "$out" | grep -q "rayjobs" || bad "kubectl $name: no rayjobs in api-resources"
	run "kubectl $name: get nodes, namespaces, pods, events and the four ray.io kinds" \
		kubectl get nodes,namespaces,pods,events,rayclusters,rayjobs,rayservices,raycronjobs -A -o name
	has "kubectl $name: nodes and namespaces listed" "^node/"
	echo "$out" | grep -q "^namespace/default" || bad "kubectl $name: no default namespace"
done
export KUBECONFIG=$work/kc-$gk
kubeconfig "$gk" wrong-token >"$work/kc-bad"
fail "kubectl: a wrong token is Unauthorized" "Unauthorized" kubectl --kubeconfig "$work/kc-bad" get pods
run "kubectl: version (server)" kubectl version
node=$(kubectl get nodes -o name | head -1)
run "kubectl: describe node" kubectl describe "$node"
has "kubectl: describe node shows labels and allocatable" "Allocatable"
fail "kubectl: get of a missing RayJob is NotFound" 'NotFound|not found' kubectl get rayjob nope

# run-seconds: the job stays Running through the checks below (the default 20 s could end
# before kubectl wait starts on a loaded machine)
sed -n '1,/^---/p' "$shared/kuberay/samples/ray-job.sample.yaml" | grep -v '^---$' |
	sed 's/^metadata:$/metadata:\n  annotations:\n    cloudsim.fleet.io\/run-seconds: "300"/' >"$work/rj.yaml"
rjname=$(sed -n 's/^  name: //p' "$work/rj.yaml" | head -1)
run "kubectl: apply --server-side --dry-run=server (YAML)" \
	kubectl apply --server-side --dry-run=server -f "$work/rj.yaml"
fail "kubectl: a server dry run stored nothing" 'NotFound|not found' kubectl get rayjob "$rjname"
run "kubectl: apply --server-side (YAML, --validate=strict)" \
	kubectl apply --server-side --validate=strict -f "$work/rj.yaml"
sed 's/^\(  *entrypoint:\).*/\1 python -c "print(2)"/' "$work/rj.yaml" >"$work/rj2.yaml"
fail "kubectl: another field manager conflicts (409)" 'conflict with "kubectl"' \
	kubectl apply --server-side --field-manager=other -f "$work/rj2.yaml"
run "kubectl: --force-conflicts takes the field" \
	kubectl apply --server-side --field-manager=other --force-conflicts -f "$work/rj2.yaml"
run "kubectl: managedFields name the new manager" kubectl get rayjob "$rjname" -o jsonpath='{.metadata.managedFields[*].manager}' --show-managed-fields
has "kubectl: manager is other" "other"
sed 's/^spec:/spec:\n  notAField: 1/' "$work/rj.yaml" >"$work/rj3.yaml"
fail "kubectl: SSA of a field the CRD lacks is refused" 'field not declared in schema' \
	kubectl apply --server-side --force-conflicts -f "$work/rj3.yaml"
fail "kubectl: create --validate=strict of an unknown field is refused" 'strict decoding error: unknown field "spec.notAField"' \
	kubectl create --validate=strict -f "$work/rj3.yaml"
run "kubectl: wait --for jsonpath (RayJob reaches Running)" kubectl wait --timeout=60s \
	--for=jsonpath='{.status.jobDeploymentStatus}'=Running "rayjob/$rjname"
run "kubectl: get rayjobs (server-side Table with the CRD's printer columns)" kubectl get rayjobs
has "kubectl: rayjobs table shows the deployment status" "DEPLOYMENT STATUS.*$|Running"
run "kubectl: get pods -o wide (server-side Table)" kubectl get pods -o wide
has "kubectl: pods table has READY, STATUS and NODE" "READY +STATUS +RESTARTS +AGE +IP +NODE"
run "kubectl: pods of the job (label selector)" kubectl get pods -l "ray.io/cluster" -o name
has "kubectl: the job's pods exist" "^pod/"
pod=$(echo "$out" | head -1)
run "kubectl: describe pod" kubectl describe "$pod"
run "kubectl: events of the job (field selector)" kubectl get events --field-selector "involvedObject.kind=Pod" -o name

# JSON body: a manifest fleetd rendered (tests/fixtures/kuberay)
fx=$(ls "$top"/tests/fixtures/kuberay/rayjob-gke-*.json | head -1)
fxns=$(python3 -c "import json; print(json.load(open('$fx'))['metadata']['namespace'])")
fxname=$(python3 -c "import json; print(json.load(open('$fx'))['metadata']['name'])")
run "kubectl: create namespace" kubectl create namespace "$fxns"
run "kubectl: apply --server-side (fleetd's JSON manifest)" \
	kubectl apply --server-side --field-manager=fleetd --validate=strict -f "$fx"
fail "kubectl: kubectl's own apply conflicts with fleetd's fields" 'conflict with "fleetd"' \
	bash -c "sed 's/\"shutdownAfterJobFinishes\": true/\"shutdownAfterJobFinishes\": false/' '$fx' | kubectl apply --server-side -f -"

# watch: kubectl get -w sees the deletion
timeout 15 kubectl get rayjobs -w --output-watch-events >"$work/watch.txt" 2>&1 &
wpid=$!
for _ in $(seq 100); do grep -q "$rjname" "$work/watch.txt" 2>/dev/null && break; sleep 0.05; done
run "kubectl: delete rayjob" kubectl delete rayjob "$rjname" --wait=false
run "kubectl: wait --for=delete" kubectl wait --for=delete "rayjob/$rjname" --timeout=20s
for _ in $(seq 100); do grep -q "^DELETED" "$work/watch.txt" 2>/dev/null && break; sleep 0.05; done
kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
out=$(cat "$work/watch.txt")
has "kubectl: get -w streamed ADDED then DELETED" "^DELETED +$rjname"
timeout 2 kubectl get pods -A -w --output-watch-events >"$work/wpods.txt" 2>&1
out=$(cat "$work/wpods.txt")
has "kubectl: get pods -w streams (initial ADDED events)" "^ADDED +[a-z]"
run "kubectl: delete -f (JSON)" kubectl delete -f "$fx"
fail "kubectl: delete again is NotFound" 'NotFound|not found' kubectl delete -f "$fx"

# ---- issue 26: scheduling gates.  fleetd creates an autoscaled group's pods gated and lifts
# the gate (a merge patch of the pod) from as many as it admitted: a gated pod waits
# SchedulingGated on no node, a gate can be removed but never added, and a pod without gates
# is scheduled (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-scheduling-readiness/)
cat >"$work/gated.yaml" <<'EOT'
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: gated}
spec:
  headGroupSpec:
    rayStartParams: {}
    template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.52.0", resources: {requests: {cpu: "1", memory: 1Gi}}}]}}
  workerGroupSpecs:
  - groupName: w
    replicas: 1
    minReplicas: 1
    maxReplicas: 2
    rayStartParams: {}
    template: {spec: {schedulingGates: [{name: fleet.io/admission}], containers: [{name: ray-worker, image: "rayproject/ray:2.52.0", resources: {requests: {cpu: "1", memory: 1Gi}}}]}}
EOT
run "kubectl: apply a RayCluster whose workers are created gated" \
	kubectl apply --server-side -f "$work/gated.yaml"
gp=""
for _ in $(seq 100); do
	gp=$(kubectl get pods -l ray.io/cluster=gated,ray.io/group=w -o name 2>/dev/null | head -1)
	[ -n "$gp" ] && break
	sleep 0.1
done
run "kubectl: the gated worker's PodScheduled reason" \
	kubectl get "$gp" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}'
has "kubectl: a gated pod waits SchedulingGated" "^SchedulingGated$"
fail "kubectl: a scheduling gate cannot be added" "only deletion is allowed" \
	kubectl patch "$gp" --type merge -p '{"spec":{"schedulingGates":[{"name":"fleet.io/admission"},{"name":"example.com/more"}]}}'
run "kubectl: the gate is lifted (merge patch)" \
	kubectl patch "$gp" --type merge -p '{"spec":{"schedulingGates":null}}'
for _ in $(seq 100); do
	out=$(kubectl get "$gp" -o jsonpath='{.spec.nodeName}' 2>&1)
	[ -n "$out" ] && break
	sleep 0.1
done
has "kubectl: the ungated worker is scheduled" "^[a-z0-9]"
run "kubectl: delete the gated RayCluster" kubectl delete raycluster gated

# ---- issue 13: ConfigMaps and Kueue's kinds in discovery; a KubeRay sample with its
# ConfigMap applied as a user would; Kueue's webhook on the GKE cluster (batch scheduler
# kueue, elastic jobs off) refuses a queue-name with in-tree autoscaling
run "kubectl: api-resources (ConfigMaps, Kueue)" kubectl api-resources
has "kubectl: api-resources lists configmaps" "^configmaps +cm +v1 +true +ConfigMap"
echo "$out" | grep -Eq "^localqueues .*kueue.x-k8s.io/v1beta1 +true +LocalQueue" ||
	bad "kubectl: no localqueues in api-resources"
run "kubectl: apply of the KubeRay RayJob sample with its ConfigMap" \
	kubectl apply -f "$shared/kuberay/samples/ray-job.sample.yaml"
has "kubectl: the sample's ConfigMap was created" "configmap/ray-job-code-sample (created|unchanged)"
run "kubectl: get the sample's ConfigMap" kubectl get configmap ray-job-code-sample -o name
run "kubectl: delete the sample" kubectl delete -f "$shared/kuberay/samples/ray-job.sample.yaml"
sed -e 's/^  name: rayjob-sample$/  name: rayjob-kueue\n  labels:\n    kueue.x-k8s.io\/queue-name: user-queue/' \
	-e 's/^spec:$/spec:\n  shutdownAfterJobFinishes: true/' \
	-e 's/^  rayClusterSpec:$/  rayClusterSpec:\n    enableInTreeAutoscaling: true/' "$work/rj.yaml" >"$work/rjk.yaml"
fail "kubectl: Kueue's webhook refuses queue-name with in-tree autoscaling" \
	'admission webhook "vrayjob.kb.io" denied the request: spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use autoscaling when workload slicing is enabled' \
	kubectl apply --server-side -f "$work/rjk.yaml"
fail "kubectl: nothing was stored" 'NotFound|not found' kubectl get rayjob rayjob-kueue

# ---- issue 25: the NetworkPolicy fleetd applies with each attempt (golden of
# test_kuberay_auth), applied with kubectl as fleetd does and read back
np="$top/tests/fixtures/netpol/rayjob-networkpolicy.json"
npns=$(python3 -c "import json; print(json.load(open('$np'))['metadata']['namespace'])")
npname=$(python3 -c "import json; print(json.load(open('$np'))['metadata']['name'])")
run "kubectl: api-resources (networking.k8s.io)" kubectl api-resources
echo "$out" | grep -Eq "^networkpolicies +networking.k8s.io/v1 +true +NetworkPolicy" ||
	bad "kubectl: no networkpolicies in api-resources"
kubectl get namespace "$npns" >/dev/null 2>&1 || run "kubectl: create namespace $npns" \
	kubectl create namespace "$npns"
run "kubectl: apply --server-side (fleetd's NetworkPolicy)" \
	kubectl apply --server-side --field-manager=fleetd -f "$np"
run "kubectl: get networkpolicy -n $npns -o yaml" kubectl get networkpolicy -n "$npns" -o yaml
has "kubectl: the policy is fleetd's" "name: $npname"
has "kubectl: Ingress only" "policyTypes:"
has "kubectl: the dashboard port admitted from the operator" "port: 8265"
run "kubectl: delete networkpolicy" kubectl delete networkpolicy -n "$npns" "$npname"

# ---- issue 27: GKE queued provisioning's kinds, as a user makes them with kubectl: a
# PodTemplate (core v1) and a ProvisioningRequest (autoscaling.x-k8s.io/v1, served like the
# cluster autoscaler's CRD: short names provreq/provreqs, printer column Age)
run "kubectl: api-resources (podtemplates, provisioningrequests)" kubectl api-resources
echo "$out" | grep -Eq "^podtemplates +v1 +true +PodTemplate" ||
	bad "kubectl: no podtemplates in api-resources"
echo "$out" | grep -Eq "^provisioningrequests +provreq,provreqs +autoscaling.x-k8s.io/v1 +true +ProvisioningRequest" ||
	bad "kubectl: no provisioningrequests (short names provreq,provreqs) in api-resources"
cat >"$work/pt.yaml" <<'EOT'
apiVersion: v1
kind: PodTemplate
metadata:
  name: conf-pt
template:
  metadata:
    labels: {ray.io/node-type: worker, app: conf}
  spec:
    containers:
    - {name: ray-worker, image: "rayproject/ray:2.52.0"}
    - {name: sidecar, image: "busybox:1.36"}
EOT
cat >"$work/pr.yaml" <<'EOT'
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata:
  name: conf-pr
spec:
  provisioningClassName: queued-provisioning.gke.io
  parameters: {maxRunDurationSeconds: "3600"}
  podSets:
  - count: 2
    podTemplateRef: {name: conf-pt}
EOT
sed -e 's/conf-pr/conf-pr-bad/' -e '/provisioningClassName/d' "$work/pr.yaml" >"$work/pr-bad.yaml"
run "kubectl: create --dry-run=server (PodTemplate)" kubectl create --dry-run=server -f "$work/pt.yaml"
fail "kubectl: a server dry run stored no PodTemplate" 'podtemplates "conf-pt" not found' \
	kubectl get podtemplate conf-pt
run "kubectl: create -f (PodTemplate)" kubectl create -f "$work/pt.yaml"
has "kubectl: podtemplate created" "^podtemplate/conf-pt created"
fail "kubectl: create again is AlreadyExists" 'AlreadyExists.*podtemplates "conf-pt" already exists' \
	kubectl create -f "$work/pt.yaml"
run "kubectl: get podtemplates (server-side Table)" kubectl get podtemplates
has "kubectl: the API server's PodTemplate columns" "^NAME +CONTAINERS +IMAGES +POD LABELS$"
has "kubectl: containers, images and sorted labels" "^conf-pt +ray-worker,sidecar +rayproject/ray:2.52.0,busybox:1.36 +app=conf,ray.io/node-type=worker$"
run "kubectl: get podtemplate NAME -o jsonpath" kubectl get podtemplate conf-pt -o jsonpath='{.template.spec.containers[1].image}'
has "kubectl: the template read back" "^busybox:1.36$"
run "kubectl: create -f (ProvisioningRequest)" kubectl create -f "$work/pr.yaml"
has "kubectl: provisioningrequest created" "^provisioningrequest.autoscaling.x-k8s.io/conf-pr created"
fail "kubectl: a ProvisioningRequest without provisioningClassName is Invalid (the CRD's required)" \
	'spec.provisioningClassName: Required value' kubectl create -f "$work/pr-bad.yaml"
fail "kubectl: the invalid request was not stored" 'provisioningrequests.autoscaling.x-k8s.io "conf-pr-bad" not found' \
	kubectl get provreq conf-pr-bad
run "kubectl: get provreq (short name, server-side Table)" kubectl get provreq
has "kubectl: the CRD's columns (NAME, AGE)" "^NAME +AGE$"
has "kubectl: the request listed" "^conf-pr +[0-9]+[smh]$"
# Accepted at once; Provisioned only once a flex-start pool the PodTemplate selects has room
# for every pod (this template selects none: integration/test_flex_start follows a request
# to Provisioned and its nodes)
for _ in $(seq 60); do
	out=$(kubectl get provisioningrequest conf-pr -o jsonpath='{.status.conditions[?(@.type=="Accepted")].status}' 2>&1)
	[ "$out" = True ] && break; sleep 1
done
has "kubectl: queued provisioning sets Accepted=True" "^True$"
run "kubectl: get provreq -o jsonpath (no Provisioned without a pool to grow)" \
	kubectl get provisioningrequest conf-pr -o jsonpath='{.status.conditions[?(@.type=="Provisioned")].status}'
[ "$out" = True ] && bad "kubectl: Provisioned=True without a flex-start pool the template selects"
run "kubectl: get provisioningrequests -o name" kubectl get provisioningrequests.autoscaling.x-k8s.io -o name
has "kubectl: the fully qualified resource name works" "^provisioningrequest.autoscaling.x-k8s.io/conf-pr$"
fail "kubectl: the request's spec is immutable (the CRD's transition rule)" \
	'spec.provisioningClassName: Invalid value: "string": Value is immutable' \
	kubectl patch provreq conf-pr --type=merge -p '{"spec":{"provisioningClassName":"check-capacity.autoscaling.x-k8s.io"}}'
run "kubectl: label provreq (metadata may change)" kubectl label provreq conf-pr fleet.io/conformance=yes
run "kubectl: get provreq -l" kubectl get provreq -l fleet.io/conformance=yes -o name
has "kubectl: the label stored" "^provisioningrequest.autoscaling.x-k8s.io/conf-pr$"
run "kubectl: delete provreq" kubectl delete provreq conf-pr
has "kubectl: the request deleted" 'provisioningrequest.autoscaling.x-k8s.io "conf-pr" deleted'
fail "kubectl: get of the deleted request is NotFound" \
	'NotFound.*provisioningrequests.autoscaling.x-k8s.io "conf-pr" not found' kubectl get provreq conf-pr
fail "kubectl: delete again is NotFound" 'provisioningrequests.autoscaling.x-k8s.io "conf-pr" not found' \
	kubectl delete provreq conf-pr
run "kubectl: delete -f (PodTemplate)" kubectl delete -f "$work/pt.yaml"
has "kubectl: the template deleted" 'podtemplate "conf-pt" deleted'
fail "kubectl: get of the deleted template is NotFound" 'NotFound.*podtemplates "conf-pt" not found' \
	kubectl get podtemplate conf-pt

# ---- issue 24: failures injected the way an outside test makes them (on the second
# HyperPod cluster, which no other client here uses), read back with kubectl
hp2=$(jq_py "print([c['name'] for c in d['clusters'] if c['provider']=='hyperpod'][1])")
export KUBECONFIG=$work/kc-$hp2
run "kubectl $hp2: a RayJob to break" kubectl apply --server-side -f "$work/rj.yaml"
run "kubectl $hp2: RayJob Running" kubectl wait --timeout=60s \
	--for=jsonpath='{.status.jobDeploymentStatus}'=Running "rayjob/$rjname"
run "kubectl $hp2: worker Running" kubectl wait --timeout=30s --for=jsonpath='{.status.phase}'=Running \
	pod -l ray.io/node-type=worker
wpod=$(kubectl get pods -l ray.io/node-type=worker -o name | head -1); wpod=${wpod#pod/}
wnode=$(kubectl get pod "$wpod" -o jsonpath='{.spec.nodeName}')
other=$(kubectl get nodes -o name | grep -v "/$wnode\$" | head -1); other=${other#node/}
run "kubectl: patch pod --subresource=status (OOMKilled, exit 137, CrashLoopBackOff)" \
	kubectl patch pod "$wpod" --subresource=status -p '{"status":{"containerStatuses":[{"name":"ray-worker","ready":false,"restartCount":2,"image":"rayproject/ray:2.9.0","imageID":"","state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"reason":"OOMKilled","exitCode":137}}}]}}'
run "kubectl: get -o jsonpath reads the patched status" kubectl get pod "$wpod" \
	-o jsonpath='{.status.containerStatuses[0].lastState.terminated.reason}/{.status.containerStatuses[0].lastState.terminated.exitCode}/{.status.containerStatuses[0].state.waiting.reason}/{.status.containerStatuses[0].restartCount}'
has "kubectl: OOMKilled/137/CrashLoopBackOff/2 as given" "^OOMKilled/137/CrashLoopBackOff/2$"
run "kubectl: patch pod --subresource=status (ErrImagePull)" kubectl patch pod "$wpod" \
	--subresource=status -p '{"status":{"containerStatuses":[{"name":"ray-worker","ready":false,"restartCount":0,"image":"rayproject/ray:nope","imageID":"","state":{"waiting":{"reason":"ErrImagePull","message":"not found"}}}]}}'
run "kubectl: get pods shows the waiting reason" kubectl get pod "$wpod"
has "kubectl: STATUS ErrImagePull" "^$wpod +0/1 +ErrImagePull +0 "
run "kubectl: taint node NoSchedule" kubectl taint node "$other" fleet.io/drill=x:NoSchedule
run "kubectl: the taint read back" kubectl get node "$other" -o jsonpath='{.spec.taints[?(@.key=="fleet.io/drill")].effect}'
has "kubectl: NoSchedule taint stored" "^NoSchedule$"
run "kubectl: taint node KEY- removes it" kubectl taint node "$other" fleet.io/drill-
run "kubectl: no taint left" kubectl get node "$other" -o jsonpath='{.spec.taints}'
echo "$out" | grep -q "fleet.io/drill" && bad "kubectl: the taint is still there: $out" || ok "kubectl: taint removed"
run "kubectl: cordon" kubectl cordon "$other"
run "kubectl: get node after cordon" kubectl get node "$other"
has "kubectl: SchedulingDisabled" "Ready,SchedulingDisabled"
run "kubectl: uncordon" kubectl uncordon "$other"
run "kubectl: patch node --subresource=status (Ready=False)" kubectl patch node "$other" \
	--subresource=status -p '{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady"}]}}'
run "kubectl: wait for the not-ready taint" kubectl wait --timeout=10s "node/$other" \
	--for=jsonpath='{.spec.taints[0].key}'=node.kubernetes.io/not-ready
run "kubectl: get node shows NotReady" kubectl get node "$other"
has "kubectl: NotReady" "^$other +NotReady "
run "kubectl: patch node --subresource=status (Ready=True again)" kubectl patch node "$other" \
	--subresource=status -p '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}'
for _ in $(seq 50); do
	out=$(kubectl get node "$other" -o jsonpath='{.spec.taints}' 2>&1)
	echo "$out" | grep -q not-ready || break; sleep 0.2
done
echo "$out" | grep -q not-ready && bad "kubectl: the not-ready taint stayed: $out" || ok "kubectl: the not-ready taint goes"
run "kubectl: taint node NoExecute" kubectl taint node "$wnode" fleet.io/drill=x:NoExecute
run "kubectl: the worker is evicted" kubectl wait --for=delete "pod/$wpod" --timeout=20s
run "kubectl: KubeRay's replacement worker runs elsewhere" kubectl wait --timeout=30s \
	--for=jsonpath='{.spec.nodeName}'="$other" pod -l ray.io/node-type=worker
run "kubectl: delete node" kubectl delete node "$wnode"
fail "kubectl: the deleted node is NotFound" 'NotFound|not found' kubectl get node "$wnode"
run "kubectl: auth can-i delete nodes" kubectl auth can-i delete nodes
has "kubectl: can-i says yes" "^yes$"
run "kubectl: auth can-i patch pods/status in a namespace" kubectl auth can-i patch pods --subresource=status -n default
has "kubectl: can-i says yes" "^yes$"
run "kubectl: auth can-i --list" kubectl auth can-i --list
has "kubectl: every resource and verb" '^\*\.\* +\[\] +\[\] +\[\*\]'
fail "kubectl: auth can-i with a wrong token is Unauthorized" "Unauthorized|must be logged in" \
	kubectl --kubeconfig "$work/kc-bad" auth can-i get pods
# an OOM kill as the kubelet reports it (cloudsim's oomkilled outcome; the sample's pods
# keep the Pod default restartPolicy Always), read with kubectl: the container restarted,
# the kill in lastState (reason OOMKilled, exit 137), restartCount 1
sed -e "s/^  name: $rjname\$/  name: rj-oom/" \
	-e 's/cloudsim.fleet.io\/run-seconds: "300"/cloudsim.fleet.io\/run-seconds: "1"\n    cloudsim.fleet.io\/outcome: oomkilled/' \
	"$work/rj.yaml" >"$work/rj-oom.yaml"
run "kubectl $hp2: a RayJob whose worker is OOM-killed" kubectl apply --server-side -f "$work/rj-oom.yaml"
run "kubectl: the OOM-killed RayJob fails" kubectl wait --timeout=90s \
	--for=jsonpath='{.status.jobDeploymentStatus}'=Failed rayjob/rj-oom
rc=$(kubectl get rayjob rj-oom -o jsonpath='{.status.rayClusterName}' 2>/dev/null)
run "kubectl: the OOM-killed worker's container status" kubectl get pod \
	-l "ray.io/cluster=$rc,ray.io/node-type=worker" -o jsonpath='{.items[0].status.containerStatuses[0].lastState.terminated.reason}/{.items[0].status.containerStatuses[0].lastState.terminated.exitCode}/{.items[0].status.containerStatuses[0].restartCount}/{.items[0].status.phase}'
has "kubectl: OOMKilled/137/1/Running (restarted, the kill in lastState)" "^OOMKilled/137/1/Running$"
run "kubectl: get pods shows the restart" kubectl get pod -l "ray.io/cluster=$rc,ray.io/node-type=worker"
has "kubectl: Running with RESTARTS 1" " Running +1 "
run "kubectl: delete the OOM-killed RayJob" kubectl delete rayjob rj-oom
export KUBECONFIG=$work/kc-$gk

echo "# kubectl done at ${SECONDS}s"
wait "$gpid" "$apid" "$spid"
echo "# gcloud, aws, sdk done at ${SECONDS}s"
for g in gcloud aws sdk; do
	cat "$work/$g.txt"
	failed=$((failed + $(grep -c '^not ok' "$work/$g.txt")))
done
grep -q '^sdk: all passed' "$work/sdk.txt" || grep -q '^not ok' "$work/sdk.txt" || bad "sdk.js did not finish"

# ---- a restart with the same state dir keeps trust policies, tokens, ports and objects
unset AWS_SESSION_TOKEN
export AWS_ACCESS_KEY_ID=$FLEETD_AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$FLEETD_AWS_SECRET_ACCESS_KEY
run "kubectl: apply a RayJob before the restart" kubectl apply --server-side -f "$work/rj.yaml"
kill "$cs_pid"; wait "$cs_pid"; rc=$?
[ "$rc" -eq 0 ] || bad "cloudsim exited $rc at the restart"
port_before=$(cat "$S/port"); rm -f "$S/port"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$build/cloudsim" --fleet "$work/fleet.json" \
	--listen 127.0.0.1:0 --state-dir "$S" --crd-dir "$shared/kuberay/crds" --time-scale 1 \
	>>"$work/cloudsim.log" 2>&1 &
cs_pid=$!
for _ in $(seq 300); do [ -s "$S/port" ] && break; sleep 0.1; done
[ "$(cat "$S/port" 2>/dev/null)" = "$port_before" ] && ok "restart: same port" || bad "restart: port moved"
fail "restart: AssumeRole without the external id is still AccessDenied" 'AccessDenied' \
	aws sts assume-role --role-arn "$role" --role-session-name conf $STS
run "restart: AssumeRole with the external id" aws sts assume-role --role-arn "$role" \
	--role-session-name conf --external-id ext-conformance $STS
run "restart: kubectl with the same token and CA sees the RayJob" kubectl get rayjob "$rjname"

if ! kill -0 "$cs_pid" 2>/dev/null; then bad "cloudsim died"; cat "$work/cloudsim.log"; fi
kill "$cs_pid" 2>/dev/null
wait "$cs_pid"; rc=$?
cs_pid=
[ "$rc" -eq 0 ] || { bad "cloudsim exited $rc (sanitizer report below)"; grep -v '"level"' "$work/cloudsim.log" | head -40; }
echo "conformance: $failed failed (${SECONDS}s)"
[ "$failed" -eq 0 ]
