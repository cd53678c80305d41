// patchcost: what kube-apiserver spends applying a mutating webhook's JSON
// Patch, timed outside the API server with the calls its mutating
// dispatcher makes (k8s.io/apiserver v0.36.3,
// pkg/admission/plugin/webhook/mutating/dispatcher.go, callAttrMutatingHook
// after the HTTP exchange): decode the patch (json-patch v4), encode the
// pod, apply, decode the result into a typed Pod, compare it with the one
// before, and marshal the patch for the audit annotation. The span the API
// server records for a webhook call ends after these steps, so this is the
// part of it the patch's shape decides.
//
// Input (stdin): [{"name": N, "pod": {...}, "patches": {"form": [ops...], ...}}, ...]
// Output (stdout): {"N": {"form": µs per application, ...}, ...}, each the
// fastest of -batches batches of -n applications (a noisy 2-core machine:
// the fastest batch is the cost without interference). A case one of whose
// patches does not apply to the API server's encoding of its pod (a
// fixture pod with an empty list or map, which the API server's encoding
// omits) is left out, named on stderr.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
)

type testCase struct {
	Name    string                     `json:"name"`
	Pod     json.RawMessage            `json:"pod"`
	Patches map[string]json.RawMessage `json:"patches"`
}

var serializer = sjson.NewSerializerWithOptions(sjson.DefaultMetaFactory, scheme.Scheme,
	scheme.Scheme, sjson.SerializerOptions{})

// apply is the dispatcher's work for one answer carrying patch.
func apply(pod *corev1.Pod, patch []byte) error {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return err
	}
	objJS, err := runtime.Encode(serializer, pod)
	if err != nil {
		return err
	}
	patched, err := p.Apply(objJS)
	if err != nil {
		return err
	}
	out := &corev1.Pod{}
	if _, _, err := serializer.Decode(patched, nil, out); err != nil {
		return err
	}
	_ = equality.Semantic.DeepEqual(pod, out)
	_, err = json.Marshal(p)
	return err
}

func main() {
	n := flag.Int("n", 200, "applications per batch")
	batches := flag.Int("batches", 9, "batches per patch; the fastest counts")
	flag.Parse()
	var cases []testCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "patchcost: input:", err)
		os.Exit(2)
	}
	result := map[string]map[string]float64{}
	for _, c := range cases {
		pod := &corev1.Pod{}
		withKind := append([]byte(`{"apiVersion":"v1","kind":"Pod",`), c.Pod[1:]...)
		if _, _, err := serializer.Decode(withKind, nil, pod); err != nil {
			fmt.Fprintf(os.Stderr, "patchcost: %s: pod: %v\n", c.Name, err)
			os.Exit(1)
		}
		forms := make([]string, 0, len(c.Patches))
		applies := true
		for f := range c.Patches {
			forms = append(forms, f)
			if err := apply(pod, c.Patches[f]); err != nil {
				fmt.Fprintf(os.Stderr, "patchcost: %s: %s: left out: %v\n", c.Name, f, err)
				applies = false
			}
		}
		if !applies {
			continue
		}
		sort.Strings(forms)
		result[c.Name] = map[string]float64{}
		for b := 0; b < *batches; b++ {
			for _, f := range forms { // the forms alternate, so drift hits each alike
				start := time.Now()
				for i := 0; i < *n; i++ {
					if err := apply(pod, c.Patches[f]); err != nil {
						fmt.Fprintf(os.Stderr, "patchcost: %s: %s: %v\n", c.Name, f, err)
						os.Exit(1)
					}
				}
				us := float64(time.Since(start).Nanoseconds()) / 1e3 / float64(*n)
				if b == 0 || us < result[c.Name][f] {
					result[c.Name][f] = us
				}
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		os.Exit(1)
	}
}
