#!/bin/sh
# `make run`: a local, standalone webhook with a self-signed certificate on
# https://127.0.0.1:8443, one sample admission review of a labelled JobSet
# pod sent through it and its injected environment printed; then it keeps
# serving until Ctrl-C. With a kubeconfig ($KUBECONFIG or ~/.kube/config)
# and the operator built, the operator is started against that cluster too.
set -eu
BIN=${1:-build/bin}
PORT=${PORT:-8443}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/mldiagnostics-run.XXXXXX")
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null || true; done
  for p in $PIDS; do wait "$p" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

echo "== generating a self-signed certificate for 127.0.0.1 in $DIR"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
  -keyout "$DIR/tls.key" -out "$DIR/tls.crt" -subj "/CN=localhost" \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null

echo "== starting mldiagnostics-webhook --standalone on https://127.0.0.1:$PORT"
"$BIN/mldiagnostics-webhook" --standalone --bind-address 127.0.0.1 --port "$PORT" \
  --tls-cert-file "$DIR/tls.crt" --tls-key-file "$DIR/tls.key" \
  ${CLUSTER_NAME:+--cluster-name "$CLUSTER_NAME"} 2>"$DIR/webhook.log" &
PIDS="$!"
i=0
until curl -fsS --cacert "$DIR/tls.crt" "https://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; do
  i=$((i + 1))
  if [ $i -gt 100 ] || ! kill -0 "$PIDS" 2>/dev/null; then
    echo "webhook did not start:" >&2; cat "$DIR/webhook.log" >&2; exit 1
  fi
  sleep 0.05
done

REVIEW=tests/fixtures/admission/bench-jobset-5k.json
echo "== POST /mutate: AdmissionReview of a JobSet pod labelled managed-mldiagnostics-gke=true"
curl -fsS --cacert "$DIR/tls.crt" -H 'Content-Type: application/json' \
  --data-binary @"$REVIEW" "https://127.0.0.1:$PORT/mutate?timeout=10s" >"$DIR/response.json"
python3 - "$REVIEW" "$DIR/response.json" <<'PY'
import base64, json, sys
review = json.load(open(sys.argv[1]))
resp = json.load(open(sys.argv[2]))["response"]
pod = review["request"]["object"]
print("allowed: %s   uid: %s" % (resp["allowed"], resp["uid"]))
for w in resp.get("warnings", []):
    print("warning: " + w)
patch = json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []
print("patch: %d operations" % len(patch))
for op in patch:
    v = op.get("value")
    if op["path"].endswith("/env/-") or op["path"].endswith("/env"):
        for e in (v if isinstance(v, list) else [v]):
            val = e.get("value")
            if val is None:
                val = "<downward API: %s>" % e["valueFrom"]["fieldRef"]["fieldPath"]
            print("  env  %-38s %s" % (e["name"], val))
    elif "/volumeMounts" in op["path"]:
        for m in (v if isinstance(v, list) else [v]):
            print("  mount %s at %s" % (m["name"], m["mountPath"]))
    elif op["path"].startswith("/metadata/annotations"):
        for k, val in (v.items() if isinstance(v, dict) else [(op["path"].split("/")[-1].replace("~1", "/"), v)]):
            print("  annotation %s: %s" % (k, val))
PY

KUBECONFIG_FILE=${KUBECONFIG:-$HOME/.kube/config}
if [ -f "${KUBECONFIG_FILE%%:*}" ] && [ -x "$BIN/mldiagnostics-operator" ]; then
  echo "== kubeconfig found: starting mldiagnostics-operator against that cluster"
  "$BIN/mldiagnostics-operator" --kubeconfig "${KUBECONFIG_FILE%%:*}" \
    --health-probe-bind-address 127.0.0.1:8081 --metrics-bind-address 127.0.0.1:8080 &
  PIDS="$PIDS $!"
fi

echo "== serving on https://127.0.0.1:$PORT (logs: $DIR/webhook.log); Ctrl-C to stop"
wait
