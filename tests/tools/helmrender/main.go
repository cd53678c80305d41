// helmrender renders a Helm chart the way `helm template` does, for the
// machines that have no helm binary: Go text/template with sprig's
// functions plus Helm's own (include, tpl, required, toYaml, fromYaml,
// toJson, fromJson, lookup), values.yaml merged with -f files and the
// --set / --set-string forms (a.b=c, a={x,y}, a[0]=x, \, escapes),
// .Release/.Chart/.Capabilities/.Template, partials (_*.tpl) not
// rendered, "<no value>" blanked, documents ordered by Helm's install
// order with hooks last, each under a "# Source:" comment.
//
// Usage: helmrender [--namespace N] [-f values.yaml]... [--set k=v]...
//
//	[--set-string k=v]... [--no-hooks] RELEASE CHART_DIR
//
// Build: GO111MODULE=off GOPATH=/usr/share/gocode go build (Debian's
// golang-github-masterminds-sprig-dev, golang-gopkg-yaml.v2-dev and
// golang-gopkg-yaml.v3-dev).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml2 "gopkg.in/yaml.v2"
	yaml3 "gopkg.in/yaml.v3"
)

type setFlag struct {
	expr   string
	string bool
}

type options struct {
	namespace string
	files     []string
	sets      []setFlag
	noHooks   bool
	release   string
	chartDir  string
}

func parseArgs(args []string) (*options, error) {
	o := &options{namespace: "default"}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		needVal := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "--namespace", "-n":
			o.namespace, err = needVal()
		case "-f", "--values":
			var v string
			v, err = needVal()
			o.files = append(o.files, v)
		case "--set", "--set-string":
			var v string
			v, err = needVal()
			o.sets = append(o.sets, setFlag{v, name == "--set-string"})
		case "--no-hooks":
			o.noHooks = true
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("unknown flag %s", name)
			}
			pos = append(pos, a)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(pos) != 2 {
		return nil, errors.New("usage: helmrender [flags] RELEASE CHART_DIR")
	}
	o.release, o.chartDir = pos[0], pos[1]
	return o, nil
}

// ---- values ----------------------------------------------------------

// normalize turns yaml.v2's map[interface{}]interface{} into string maps.
func normalize(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case map[string]interface{}:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case []interface{}:
		for i, x := range t {
			t[i] = normalize(x)
		}
		return t
	}
	return v
}

func readYAMLMap(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml3.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return normalize(m).(map[string]interface{}), nil
}

// coalesce merges src over dst as Helm does: maps merge deeply, anything
// else replaces, null deletes.
func coalesce(dst, src map[string]interface{}) {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := sv.(map[string]interface{})
		dm, dIsMap := dst[k].(map[string]interface{})
		if sIsMap && dIsMap {
			coalesce(dm, sm)
		} else {
			dst[k] = sv
		}
	}
}

// ---- --set (Helm's strvals) ------------------------------------------

type setParser struct {
	s   []rune
	pos int
	str bool
}

func (p *setParser) eof() bool { return p.pos >= len(p.s) }

// readUntil reads to the first unescaped rune in stops; returns it (0 at end).
func (p *setParser) readUntil(stops string) (string, rune) {
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.pos]
		p.pos++
		if c == '\\' && !p.eof() {
			b.WriteRune(p.s[p.pos])
			p.pos++
			continue
		}
		if strings.ContainsRune(stops, c) {
			return b.String(), c
		}
		b.WriteRune(c)
	}
	return b.String(), 0
}

func (p *setParser) typed(v string) interface{} {
	if p.str {
		return v
	}
	switch {
	case strings.EqualFold(v, "true"):
		return true
	case strings.EqualFold(v, "false"):
		return false
	case strings.EqualFold(v, "null"):
		return nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && (v == "0" || v[0] != '0') {
		return n
	}
	return v
}

// parse reads "k=v[,k=v...]" into dst.
func (p *setParser) parse(dst map[string]interface{}) error {
	for !p.eof() {
		if err := p.assign(dst); err != nil {
			return err
		}
	}
	return nil
}

func (p *setParser) assign(dst map[string]interface{}) error {
	key, stop := p.readUntil(".=[,")
	if key == "" {
		return fmt.Errorf("--set: empty key at %q", string(p.s))
	}
	switch stop {
	case '.':
		child, ok := dst[key].(map[string]interface{})
		if !ok {
			child = map[string]interface{}{}
			dst[key] = child
		}
		return p.assign(child)
	case '[':
		list, _ := dst[key].([]interface{})
		list, err := p.index(list)
		dst[key] = list
		return err
	case '=':
		return p.value(func(v interface{}) { dst[key] = v })
	}
	return fmt.Errorf("--set: key %q has no value", key)
}

func (p *setParser) index(list []interface{}) ([]interface{}, error) {
	num, stop := p.readUntil("]")
	i, err := strconv.Atoi(num)
	if stop != ']' || err != nil || i < 0 || i > 65536 {
		return list, fmt.Errorf("--set: bad list index %q", num)
	}
	for len(list) <= i {
		list = append(list, nil)
	}
	if p.eof() {
		return list, errors.New("--set: list index without a value")
	}
	c := p.s[p.pos]
	p.pos++
	switch c {
	case '=':
		err = p.value(func(v interface{}) { list[i] = v })
	case '.':
		child, ok := list[i].(map[string]interface{})
		if !ok {
			child = map[string]interface{}{}
			list[i] = child
		}
		err = p.assign(child)
	case '[':
		inner, _ := list[i].([]interface{})
		inner, err = p.index(inner)
		list[i] = inner
	default:
		err = fmt.Errorf("--set: unexpected %q after an index", c)
	}
	return list, err
}

func (p *setParser) value(set func(interface{})) error {
	if !p.eof() && p.s[p.pos] == '{' {
		p.pos++
		var list []interface{}
		for {
			v, stop := p.readUntil(",}")
			if stop == 0 {
				return errors.New("--set: list without a closing }")
			}
			if v != "" || stop == ',' || len(list) > 0 {
				list = append(list, p.typed(v))
			}
			if stop == '}' {
				break
			}
		}
		set(list)
		if !p.eof() && p.s[p.pos] == ',' {
			p.pos++
		}
		return nil
	}
	v, _ := p.readUntil(",")
	set(p.typed(v))
	return nil
}

// ---- template functions ----------------------------------------------

func toYAML(v interface{}) string {
	data, err := yaml2.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml3.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return normalize(m).(map[string]interface{})
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func required(msg string, v interface{}) (interface{}, error) {
	if v == nil {
		return v, errors.New(msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return v, errors.New(msg)
	}
	return v, nil
}

func funcMap(root **template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["toJson"] = toJSON
	f["fromJson"] = fromJSON
	f["required"] = required
	f["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := (*root).ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := (*root).Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return strings.ReplaceAll(buf.String(), "<no value>", ""), err
	}
	return f
}

// ---- the chart -------------------------------------------------------

type chartMeta struct {
	Name        string `yaml:"name"`
	Version     string `yaml:"version"`
	AppVersion  string `yaml:"appVersion"`
	Description string `yaml:"description"`
	APIVersion  string `yaml:"apiVersion"`
	Type        string `yaml:"type"`
}

func loadChart(dir string) (*chartMeta, map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var meta chartMeta
	if err := yaml3.Unmarshal(data, &meta); err != nil {
		return nil, nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if meta.Name == "" || meta.Version == "" || meta.APIVersion != "v2" {
		return nil, nil, errors.New("Chart.yaml: apiVersion v2, name and version are required")
	}
	files := map[string]string{}
	tdir := filepath.Join(dir, "templates")
	err = filepath.Walk(tdir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[meta.Name+"/"+filepath.ToSlash(rel)] = string(body)
		return nil
	})
	return &meta, files, err
}

func values(o *options) (map[string]interface{}, error) {
	vals, err := readYAMLMap(filepath.Join(o.chartDir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range o.files {
		m, err := readYAMLMap(f)
		if err != nil {
			return nil, err
		}
		coalesce(vals, m)
	}
	for _, s := range o.sets {
		m := map[string]interface{}{}
		p := &setParser{s: []rune(s.expr), str: s.string}
		if err := p.parse(m); err != nil {
			return nil, err
		}
		coalesce(vals, m)
	}
	return vals, nil
}

var installOrder = []string{"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
	"ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService"}

type manifest struct {
	source, body, kind, name string
	hook                     bool
}

func rank(kind string) int {
	for i, k := range installOrder {
		if k == kind {
			return i
		}
	}
	return len(installOrder)
}

func splitDocs(source, out string) ([]manifest, error) {
	var docs []manifest
	for _, doc := range strings.Split("\n"+out, "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name        string            `yaml:"name"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
		}
		if err := yaml3.Unmarshal([]byte(doc), &head); err != nil {
			return nil, fmt.Errorf("%s: rendered YAML does not parse: %v\n%s", source, err, doc)
		}
		_, hook := head.Metadata.Annotations["helm.sh/hook"]
		docs = append(docs, manifest{source, strings.Trim(doc, "\n"), head.Kind,
			head.Metadata.Name, hook})
	}
	return docs, nil
}

func render(o *options) (string, error) {
	meta, files, err := loadChart(o.chartDir)
	if err != nil {
		return "", err
	}
	vals, err := values(o)
	if err != nil {
		return "", err
	}
	var root *template.Template
	root = template.New("chart").Funcs(funcMap(&root)).Option("missingkey=zero")
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := root.New(name).Parse(files[name]); err != nil {
			return "", err
		}
	}
	top := map[string]interface{}{
		"Values": vals,
		"Release": map[string]interface{}{"Name": o.release, "Namespace": o.namespace,
			"Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1},
		"Chart": map[string]interface{}{"Name": meta.Name, "Version": meta.Version,
			"AppVersion": meta.AppVersion, "Description": meta.Description},
		"Capabilities": map[string]interface{}{"KubeVersion": map[string]interface{}{
			"Version": "v1.31.0", "Major": "1", "Minor": "31", "GitVersion": "v1.31.0"}},
	}
	var all []manifest
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") || strings.HasSuffix(base, "NOTES.txt") {
			continue
		}
		top["Template"] = map[string]interface{}{"Name": name,
			"BasePath": meta.Name + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, top); err != nil {
			return "", err
		}
		docs, err := splitDocs(name, strings.ReplaceAll(buf.String(), "<no value>", ""))
		if err != nil {
			return "", err
		}
		all = append(all, docs...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.hook != b.hook {
			return !a.hook
		}
		if rank(a.kind) != rank(b.kind) {
			return rank(a.kind) < rank(b.kind)
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.name < b.name
	})
	var out strings.Builder
	for _, m := range all {
		if m.hook && o.noHooks {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.source, m.body)
	}
	return out.String(), nil
}

func main() {
	o, err := parseArgs(os.Args[1:])
	if err == nil {
		var out string
		if out, err = render(o); err == nil {
			os.Stdout.WriteString(out)
			return
		}
	}
	fmt.Fprintf(os.Stderr, "helmrender: %v\n", err)
	os.Exit(1)
}
