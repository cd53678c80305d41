// Command gowebhook is the benchmark's Go peer of mldiagnostics-webhook: the
// same standalone pod injection written as a Go webhook author would, with
// net/http, crypto/tls and encoding/json only (no controller-runtime, which
// is not available offline).
//
// It is given the benefit of the doubt where idiomatic Go allows: the
// AdmissionReview is decoded in one pass into small typed structs holding
// only the fields the injection reads (encoding/json scans and skips the
// rest), where controller-runtime would decode the object a second time into
// a full corev1.Pod.
//
// Per request it decides from the pod's labels, resolves the workload from
// the controller labels and ownerReferences, builds the identity JSON, the
// env list (placed by the same dependency rules), the resource attributes,
// the downward-API volume and mount, the pod annotations with a sha256 of the
// injected config, and answers an RFC 6902 patch. Not ported, because no
// benchmark review reaches them: API lookups (it is standalone, like the
// webhook under test), rl.run.id and the attribute-merge opt-out.
package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	version       = "0.1.0"
	labelManaged  = "managed-mldiagnostics-gke"
	volumeName    = "mldiagnostics-metadata"
	mountPath     = "/var/run/mldiagnostics"
	annIdentifier = "diagon.gke.io/identifier"
	annMetadata   = "diagon.gke.io/metadata"
	annInjection  = "diagon.gke.io/injection"
	annContainers = "diagon.gke.io/inject-containers"
	annService    = "diagon.gke.io/otel-service-name"
	annAttrs      = "diagon.gke.io/otel-resource-attributes"
	attrsVar      = "OTEL_RESOURCE_ATTRIBUTES"
	maxWarnings   = 16
)

type config struct {
	clusterName, clusterDomain, collectorName, collectorNamespace string
	skip                                                          map[string]bool
}

// ---------- API types (the parts we read) ----------

type AdmissionReview struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Request    *AdmissionRequest  `json:"request,omitempty"`
	Response   *AdmissionResponse `json:"response,omitempty"`
}

type AdmissionRequest struct {
	UID         string `json:"uid"`
	Kind        struct{ Group, Version, Kind string }
	Resource    struct{ Group, Version, Resource string }
	SubResource string `json:"subResource"`
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	Operation   string `json:"operation"`
	Object      *Pod   `json:"object"`
}

type AdmissionResponse struct {
	UID       string   `json:"uid"`
	Allowed   bool     `json:"allowed"`
	PatchType string   `json:"patchType,omitempty"`
	Patch     []byte   `json:"patch,omitempty"` // base64 by encoding/json
	Warnings  []string `json:"warnings,omitempty"`
}

type Pod struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
}

type ObjectMeta struct {
	Name              string            `json:"name"`
	GenerateName      string            `json:"generateName"`
	Namespace         string            `json:"namespace"`
	CreationTimestamp string            `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	OwnerReferences   []struct {
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		Controller bool   `json:"controller"`
	} `json:"ownerReferences"`
}

type PodSpec struct {
	Containers     []Container `json:"containers"`
	InitContainers []Container `json:"initContainers"`
	Volumes        []struct {
		Name string `json:"name"`
	} `json:"volumes"`
}

type Container struct {
	Name          string `json:"name"`
	RestartPolicy string `json:"restartPolicy"`
	Env           []struct {
		Name  string  `json:"name"`
		Value *string `json:"value"` // nil: valueFrom
	} `json:"env"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

// ---------- what we inject ----------

type fieldRef struct {
	APIVersion string `json:"apiVersion"`
	FieldPath  string `json:"fieldPath"`
}

type envVar struct {
	Name      string `json:"name"`
	Value     string `json:"value,omitempty"`
	ValueFrom *struct {
		FieldRef fieldRef `json:"fieldRef"`
	} `json:"valueFrom,omitempty"`
}

type downwardItem struct {
	Path     string   `json:"path"`
	FieldRef fieldRef `json:"fieldRef"`
}

type volume struct {
	Name        string `json:"name"`
	DownwardAPI struct {
		Items []downwardItem `json:"items"`
	} `json:"downwardAPI"`
}

type mount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly"`
}

type patchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value"`
}

func literal(name, value string) envVar { return envVar{Name: name, Value: value} }

func fromField(name, path string) envVar {
	v := envVar{Name: name}
	v.ValueFrom = &struct {
		FieldRef fieldRef `json:"fieldRef"`
	}{fieldRef{"v1", path}}
	return v
}

func newVolume() volume {
	v := volume{Name: volumeName}
	for _, it := range [][2]string{{"labels", "metadata.labels"}, {"annotations", "metadata.annotations"},
		{"pod_name", "metadata.name"}, {"pod_namespace", "metadata.namespace"}, {"pod_uid", "metadata.uid"}} {
		v.DownwardAPI.Items = append(v.DownwardAPI.Items, downwardItem{it[0], fieldRef{"v1", it[1]}})
	}
	return v
}

// compact JSON without Go's HTML escaping (the values are shell-visible env).
func marshal(v interface{}) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ---------- one admission ----------

type workload struct {
	kind, name, ns, parent, created, unknownWhy string
	labels, annotations                         map[string]string
	bare                                        bool
}

type result struct {
	patch    []patchOp
	warnings []string
	reason   string
	workload string
	inject   bool
}

func (r *result) warn(format string, a ...interface{}) {
	msg := fmt.Sprintf(format, a...)
	for _, w := range r.warnings {
		if w == msg {
			return
		}
	}
	if len(r.warnings) < maxWarnings {
		r.warnings = append(r.warnings, msg)
	}
}

func resolveWorkload(pod *Pod, ns string, now time.Time) workload {
	m := &pod.Metadata
	w := workload{ns: ns}
	var ownerKind, ownerName string
	for _, o := range m.OwnerReferences {
		if o.Controller && o.Kind != "" && o.Name != "" {
			ownerKind, ownerName = o.Kind, o.Name
			w.parent = o.Kind + "/" + o.Name
			break
		}
	}
	switch {
	case m.Labels["jobset.sigs.k8s.io/jobset-name"] != "":
		w.kind, w.name = "JobSet", m.Labels["jobset.sigs.k8s.io/jobset-name"]
	case m.Labels["leaderworkerset.sigs.k8s.io/name"] != "":
		w.kind, w.name = "LeaderWorkerSet", m.Labels["leaderworkerset.sigs.k8s.io/name"]
	case m.Labels["ray.io/originated-from-cr-name"] != "" && m.Labels["ray.io/originated-from-crd"] == "RayJob":
		w.kind, w.name = "RayJob", m.Labels["ray.io/originated-from-cr-name"]
	case ownerKind == "":
		w.kind, w.name, w.bare = "Pod", m.Name, true
		if w.name == "" {
			w.name = m.GenerateName
		}
		w.labels, w.annotations = m.Labels, m.Annotations
		if w.labels == nil {
			w.labels = map[string]string{}
		}
		t, err := time.Parse(time.RFC3339, m.CreationTimestamp)
		if err != nil {
			t = now
		}
		w.created = t.UTC().Format("2006-01-02T15:04:05Z")
		return w
	case ownerKind == "ReplicaSet" && m.Labels["pod-template-hash"] != "" &&
		strings.HasSuffix(ownerName, "-"+m.Labels["pod-template-hash"]) &&
		len(ownerName) > len(m.Labels["pod-template-hash"])+1:
		w.kind, w.name = "Deployment", strings.TrimSuffix(ownerName, "-"+m.Labels["pod-template-hash"])
	default:
		w.kind, w.name = ownerKind, ownerName
	}
	w.unknownWhy = fmt.Sprintf("standalone: %s %s/%s not looked up", w.kind, w.ns, w.name)
	return w
}

func managedValue(m map[string]string, where string, r *result) string {
	v, ok := m[labelManaged]
	if ok && v != "true" && v != "false" {
		if len(v) > 40 {
			v = v[:40]
		}
		r.warn("%s %s=%q ignored: use \"true\" or \"false\"", where, labelManaged, v)
		return ""
	}
	return v
}

func decide(pod *Pod, w *workload, r *result) {
	l := managedValue(pod.Metadata.Labels, "pod label", r)
	a := managedValue(pod.Metadata.Annotations, "pod annotation", r)
	switch {
	case l == "false" || a == "false":
		r.reason = "opted out by pod " + map[bool]string{true: "label", false: "annotation"}[l == "false"] +
			" " + labelManaged + "=false"
	case l == "true":
		r.inject, r.reason = true, "pod label "+labelManaged+"=true"
	default:
		r.reason = "no " + labelManaged + "=true label on pod, workload or namespace"
	}
}

type target struct {
	c    *Container
	path string
}

func findTargets(cfg *config, pod *Pod, r *result) []target {
	only, hasOnly := pod.Metadata.Annotations[annContainers]
	wanted := map[string]bool{}
	for _, n := range strings.FieldsFunc(only, func(c rune) bool { return c == ',' || c == ' ' }) {
		wanted[n] = true
	}
	var ts []target
	add := func(list []Container, field string, sidecarsOnly bool) {
		for i := range list {
			c := &list[i]
			if c.Name == "" || (sidecarsOnly && c.RestartPolicy != "Always") || cfg.skip[c.Name] ||
				(hasOnly && !wanted[c.Name]) {
				continue
			}
			ts = append(ts, target{c, "/spec/" + field + "/" + strconv.Itoa(i)})
		}
	}
	add(pod.Spec.Containers, "containers", false)
	add(pod.Spec.InitContainers, "initContainers", true)
	for n := range wanted {
		found := false
		for _, t := range ts {
			found = found || t.c.Name == n
		}
		if !found {
			r.warn("%s: %q is not an injectable container of this pod", annContainers, n)
		}
	}
	return ts
}

// ---------- resource attributes (ordered key=value, baggage-encoded) ----------

type attrs struct{ keys, vals []string }

func baggageOctet(c byte) bool {
	return c == 0x21 || (c >= 0x23 && c <= 0x2B) || (c >= 0x2D && c <= 0x3A) ||
		(c >= 0x3C && c <= 0x5B) || (c >= 0x5D && c <= 0x7E)
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

func encodeAttr(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '%' && i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2]) || c != '%' && baggageOctet(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func (a *attrs) get(k string) (string, bool) {
	for i, key := range a.keys {
		if key == k {
			return a.vals[i], true
		}
	}
	return "", false
}

func (a *attrs) set(k, v string) {
	v = encodeAttr(v)
	for i, key := range a.keys {
		if key == k {
			a.vals[i] = v
			return
		}
	}
	a.keys, a.vals = append(a.keys, k), append(a.vals, v)
}

func (a *attrs) parse(s, where string, r *result) {
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		valid := k != ""
		for i := 0; i < len(k); i++ {
			valid = valid && baggageOctet(k[i]) && k[i] != '='
		}
		if !ok || !valid {
			if r != nil {
				r.warn("%s: resource attribute %q ignored (want key=value)", where, k)
			}
			continue
		}
		a.set(k, strings.TrimSpace(v))
	}
}

func (a *attrs) String() string {
	var b strings.Builder
	for i := range a.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(a.keys[i] + "=" + a.vals[i])
	}
	return b.String()
}

// The user's value with our missing keys appended.
func (a *attrs) mergeInto(user string) string {
	var theirs attrs
	theirs.parse(user, "", nil)
	out := strings.TrimRight(user, ", \t\r\n")
	added := false
	for i, k := range a.keys {
		if _, ok := theirs.get(k); !ok {
			if out != "" {
				out += ","
			}
			out, added = out+k+"="+a.vals[i], true
		}
	}
	if !added {
		return user
	}
	return out
}

// ---------- env placement ----------

// Does value reference $(name)? "$$" escapes a dollar.
func references(value, name string) bool {
	for i := 0; i+1 < len(value); i++ {
		if value[i] != '$' {
			continue
		}
		if value[i+1] == '$' {
			i++
			continue
		}
		if value[i+1] != '(' {
			continue
		}
		end := strings.IndexByte(value[i+2:], ')')
		if end < 0 {
			return false
		}
		if value[i+2:i+2+end] == name {
			return true
		}
		i += 2 + end
	}
	return false
}

// Slot of each variable: insert before user[slot]; len(user) appends; -1 present.
func place(set []envVar, c *Container) ([]int, bool) {
	nUser := len(c.Env)
	slot, earliest := make([]int, len(set)), make([]int, len(set))
	userRefs := func(i int, name string) bool { return c.Env[i].Value != nil && references(*c.Env[i].Value, name) }
	for j, v := range set {
		slot[j] = nUser
		for _, e := range c.Env {
			if e.Name == v.Name {
				slot[j] = -1
			}
		}
		for i := 0; slot[j] != -1 && i < nUser; i++ {
			if v.ValueFrom == nil && references(v.Value, c.Env[i].Name) {
				earliest[j] = i + 1
			}
			if userRefs(i, v.Name) && i < slot[j] {
				slot[j] = i
			}
		}
		for k := 0; k < j; k++ {
			if slot[k] != -1 && references(v.Value, set[k].Name) && earliest[k] > earliest[j] {
				earliest[j] = earliest[k]
			}
		}
	}
	for j := len(set) - 1; j >= 0; j-- {
		for k := 0; k < j; k++ {
			if slot[j] != -1 && slot[k] != -1 && references(set[j].Value, set[k].Name) && slot[j] < slot[k] {
				slot[k] = slot[j]
			}
		}
	}
	ok := true
	for j := range set {
		ok = ok && (slot[j] == -1 || earliest[j] <= slot[j])
	}
	for j := range set {
		if !ok && slot[j] != -1 {
			slot[j] = nUser
		}
	}
	return slot, ok
}

func envPatch(set []envVar, ours *attrs, t target, r *result) {
	c := t.c
	if c.Env == nil {
		r.patch = append(r.patch, patchOp{"add", t.path + "/env", set})
		return
	}
	for i, e := range c.Env {
		if e.Name != attrsVar {
			continue
		}
		if e.Value == nil {
			r.warn("container %s: %s comes from valueFrom; not merged", c.Name, attrsVar)
		} else if merged := ours.mergeInto(*e.Value); merged != *e.Value {
			r.patch = append(r.patch, patchOp{"replace", t.path + "/env/" + strconv.Itoa(i) + "/value", merged})
			c.Env[i].Value = &merged
		}
		break
	}
	slot, ok := place(set, c)
	if !ok {
		r.warn("container %s: env references form a cycle with injected variables; appended at the end", c.Name)
	}
	inserted := 0
	for i := 0; i <= len(c.Env); i++ {
		for j := range set {
			if slot[j] != i {
				continue
			}
			path := t.path + "/env/-"
			if i < len(c.Env) {
				path = t.path + "/env/" + strconv.Itoa(i+inserted)
			}
			r.patch = append(r.patch, patchOp{"add", path, set[j]})
			inserted++
		}
	}
}

// ---------- the patch ----------

func mutate(cfg *config, ns string, pod *Pod, now time.Time) *result {
	r := &result{}
	w := resolveWorkload(pod, ns, now)
	r.workload = w.kind + "/" + w.name
	decide(pod, &w, r)
	if !r.inject {
		return r
	}
	targets := findTargets(cfg, pod, r)
	if len(targets) == 0 {
		r.inject, r.reason = false, "opted in, but no container to inject"
		return r
	}
	meta := &pod.Metadata

	identifier, metadata := meta.Annotations[annIdentifier], meta.Annotations[annMetadata]
	if identifier == "" || metadata == "" {
		identifier, metadata = buildIdentity(cfg, &w, r)
	}

	var a attrs
	if w.ns != "" {
		a.set("service.namespace", w.ns)
		a.set("k8s.namespace.name", w.ns)
	}
	a.set("k8s.pod.name", "$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME)")
	a.set("k8s.pod.uid", "$(OTEL_RESOURCE_ATTRIBUTES_POD_UID)")
	a.set("k8s.node.name", "$(OTEL_RESOURCE_ATTRIBUTES_NODE_NAME)")
	if cfg.clusterName != "" {
		a.set("k8s.cluster.name", cfg.clusterName[strings.LastIndexByte(cfg.clusterName, '/')+1:])
	}
	if !w.bare && w.name != "" {
		a.set("k8s."+strings.ToLower(w.kind)+".name", w.name)
	}
	if v, ok := w.annotations[annAttrs]; ok {
		a.parse(v, "workload annotation "+annAttrs, r)
	}
	if v, ok := meta.Annotations[annAttrs]; ok {
		a.parse(v, "pod annotation "+annAttrs, r)
	}
	service := meta.Annotations[annService]
	if service == "" {
		service = w.annotations[annService]
	}
	if service == "" {
		service = w.name
	}

	endpoint := "$(OTEL_COLLECTOR_NAME).$(OTEL_COLLECTOR_NAMESPACE).svc." + cfg.clusterDomain + ":4317"
	set := []envVar{
		literal("GKE_DIAGON_IDENTIFIER", identifier),
		literal("GKE_DIAGON_METADATA", metadata),
		fromField("OTEL_RESOURCE_ATTRIBUTES_POD_NAME", "metadata.name"),
		fromField("OTEL_RESOURCE_ATTRIBUTES_POD_UID", "metadata.uid"),
		fromField("OTEL_RESOURCE_ATTRIBUTES_NODE_NAME", "spec.nodeName"),
		literal("OTEL_COLLECTOR_NAME", cfg.collectorName),
		literal("OTEL_COLLECTOR_NAMESPACE", cfg.collectorNamespace),
		literal("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", endpoint),
		literal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint),
		literal("OTEL_EXPORTER_OTLP_METRICS_INSECURE", "true"),
		literal("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "true"),
		literal("OTEL_SERVICE_NAME", service),
		literal(attrsVar, a.String()),
	}
	vol, mnt := newVolume(), mount{volumeName, mountPath, true}
	sum := sha256.Sum256([]byte(marshal(map[string]interface{}{"env": set, "volume": vol, "mount": mnt})))
	injection := version + ";" + hex.EncodeToString(sum[:])[:12]

	// The volume, when a container will mount it and the pod lacks it.
	mountState := make([]string, len(targets))
	needed, present := false, false
	for i, t := range targets {
		mountState[i] = "add"
		for _, m := range t.c.VolumeMounts {
			if m.Name == volumeName {
				mountState[i] = "present"
				break
			}
			if m.MountPath == mountPath {
				mountState[i] = "taken"
			}
		}
		needed = needed || mountState[i] == "add"
	}
	for _, v := range pod.Spec.Volumes {
		present = present || v.Name == volumeName
	}
	if !present && needed {
		present = true
		if pod.Spec.Volumes == nil {
			r.patch = append(r.patch, patchOp{"add", "/spec/volumes", []volume{vol}})
		} else {
			r.patch = append(r.patch, patchOp{"add", "/spec/volumes/-", vol})
		}
	}
	for i, t := range targets {
		envPatch(set, &a, t, r)
		if !present {
			continue
		}
		switch {
		case mountState[i] == "taken":
			r.warn("container %s: %s is already mounted; %s not mounted there", t.c.Name, mountPath, volumeName)
		case mountState[i] == "add" && t.c.VolumeMounts == nil:
			r.patch = append(r.patch, patchOp{"add", t.path + "/volumeMounts", []mount{mnt}})
		case mountState[i] == "add":
			r.patch = append(r.patch, patchOp{"add", t.path + "/volumeMounts/-", mnt})
		}
	}
	if len(r.patch) == 0 {
		r.reason = "already injected (" + injection + ")"
		return r
	}
	// The fields the google-cloud-mldiagnostics SDK needs to start a run.
	var lacks []string
	for _, f := range []struct{ key, v string }{{"namespace", w.ns}, {"clustername", cfg.clusterName},
		{"metadata.kind", w.kind}, {"metadata.name", w.name}, {"creation-timestamp", w.created}} {
		if f.v == "" {
			lacks = append(lacks, f.key)
		}
	}
	if len(lacks) > 0 {
		r.warn("mldiagnostics: the identity lacks %s: the google-cloud-mldiagnostics SDK will "+
			"refuse to start a run in this pod", strings.Join(lacks, ", "))
	}
	keys, vals := []string{annIdentifier, annMetadata, annInjection}, []string{identifier, metadata, injection}
	if meta.Annotations == nil {
		r.patch = append(r.patch, patchOp{"add", "/metadata/annotations",
			map[string]string{keys[0]: vals[0], keys[1]: vals[1], keys[2]: vals[2]}})
		return r
	}
	for i, k := range keys {
		if _, ok := meta.Annotations[k]; !ok {
			r.patch = append(r.patch, patchOp{"add", "/metadata/annotations/" +
				strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), vals[i]})
		}
	}
	return r
}

func buildIdentity(cfg *config, w *workload, r *result) (string, string) {
	id := struct {
		Name        string `json:"metadata.name"`
		Kind        string `json:"metadata.kind"`
		ClusterName string `json:"clustername,omitempty"`
		Namespace   string `json:"namespace,omitempty"`
	}{w.name, w.kind, cfg.clusterName, w.ns}
	if cfg.clusterName == "" {
		r.warn("cluster name unknown: GKE_DIAGON_IDENTIFIER omits clustername (set --cluster-name or CLUSTER_NAME)")
	}
	md := struct {
		Parent  string  `json:"parent-workload,omitempty"`
		Created string  `json:"creation-timestamp,omitempty"`
		Labels  *string `json:"associated-labels,omitempty"`
	}{Parent: w.parent, Created: w.created}
	if w.labels != nil {
		keys := make([]string, 0, len(w.labels))
		for k := range w.labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			keys[i] = k + "=" + w.labels[k]
		}
		joined := strings.Join(keys, ",")
		md.Labels = &joined
	}
	if w.created == "" || w.labels == nil {
		what := "creation-timestamp and associated-labels"
		if w.created != "" {
			what = "associated-labels"
		} else if w.labels != nil {
			what = "creation-timestamp"
		}
		why := w.unknownWhy
		if why == "" {
			why = "unknown"
		}
		r.warn("GKE_DIAGON_METADATA omits %s: %s", what, why)
	}
	return marshal(id), marshal(md)
}

// ---------- HTTP ----------

type logLine struct {
	TS         string `json:"ts"`
	Level      string `json:"level"`
	Msg        string `json:"msg"`
	UID        string `json:"uid"`
	Namespace  string `json:"namespace"`
	Object     string `json:"object"`
	Workload   string `json:"workload"`
	Decision   string `json:"decision"`
	Reason     string `json:"reason"`
	Operations int    `json:"operations"`
	Warnings   int    `json:"warnings"`
	US         int64  `json:"us"`
}

func badRequest(w http.ResponseWriter, msg string) {
	log.Printf("admission: invalid: %s", msg)
	http.Error(w, msg, http.StatusBadRequest)
}

func (cfg *config) serveMutate(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed: use POST /mutate", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 8<<20))
	if err != nil {
		http.Error(w, "request body exceeds 8Mi", http.StatusRequestEntityTooLarge)
		return
	}
	var review AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		badRequest(w, "request body is not valid JSON: "+err.Error())
		return
	}
	if (review.APIVersion != "admission.k8s.io/v1" && review.APIVersion != "admission.k8s.io/v1beta1") ||
		review.Kind != "AdmissionReview" || review.Request == nil || review.Request.UID == "" {
		badRequest(w, "not an AdmissionReview")
		return
	}
	ar := review.Request
	ns := ar.Namespace
	if ns == "" && ar.Object != nil {
		ns = ar.Object.Metadata.Namespace
	}
	res := &result{reason: "not a pod CREATE"}
	decision := "skipped"
	if ar.Kind.Kind == "Pod" && ar.Kind.Group == "" && ar.SubResource == "" && ar.Operation == "CREATE" &&
		(ar.Resource.Resource == "" || ar.Resource.Resource == "pods") && ar.Object != nil {
		res = mutate(cfg, ns, ar.Object, start)
		if res.inject && len(res.patch) > 0 {
			decision = "injected"
		} else if res.inject {
			decision = "unchanged"
		}
	}
	resp := &AdmissionResponse{UID: ar.UID, Allowed: true, Warnings: res.warnings}
	if len(res.patch) > 0 {
		resp.PatchType = "JSONPatch"
		if resp.Patch, err = json.Marshal(res.patch); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	out, err := json.Marshal(AdmissionReview{APIVersion: review.APIVersion, Kind: "AdmissionReview", Response: resp})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)

	object := ar.Kind.Kind + " " + ns + "/" + ar.Name
	if ar.Name == "" && ar.Object != nil {
		object = ar.Kind.Kind + " " + ns + "/" + ar.Object.Metadata.GenerateName + "*"
	}
	line, _ := json.Marshal(logLine{time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"), "info", "admission",
		ar.UID, ns, object, res.workload, decision, res.reason, len(res.patch), len(res.warnings),
		time.Since(start).Microseconds()})
	os.Stderr.Write(append(line, '\n'))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8443", "listen address")
	cert := flag.String("cert", "tls.crt", "serving certificate (PEM)")
	key := flag.String("key", "tls.key", "private key (PEM)")
	cluster := flag.String("cluster-name", os.Getenv("CLUSTER_NAME"), "cluster name")
	http1 := flag.Bool("http1", false, "serve HTTP/1.1 only, as kubebuilder's scaffold does by "+
		"default (HTTP/2 off for the Rapid Reset CVEs)")
	flag.Parse()
	domain := os.Getenv("KUBERNETES_CLUSTER_DOMAIN")
	if domain == "" {
		domain = "cluster.local"
	}
	cfg := &config{clusterName: *cluster, clusterDomain: domain, collectorName: "opentelemetry-collector",
		collectorNamespace: "gke-managed-otel", skip: map[string]bool{"istio-proxy": true, "linkerd-proxy": true}}

	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", cfg.serveMutate)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	srv := &http.Server{
		Addr:              *addr,
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       10 * time.Second,
	}
	if *http1 {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
	}
	log.Printf("serving on %s (cluster %q)", *addr, *cluster)
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
