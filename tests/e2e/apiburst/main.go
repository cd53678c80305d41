// Command apiburst creates N copies of one pod through the API server from C
// concurrent keep-alive clients (as a controller's burst would), and prints
// one JSON line: pods, seconds, errors, injected (the response carried the
// diagon.gke.io/injection annotation), and per-request latency p50/p99.
//
//	apiburst -server https://127.0.0.1:6443 -ca ca.crt -token T \
//	    -namespace ns -pod pod.json -n 500 -c 25
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	server := flag.String("server", "", "API server URL")
	caFile := flag.String("ca", "", "cluster CA (PEM)")
	token := flag.String("token", "", "bearer token")
	ns := flag.String("namespace", "default", "namespace")
	podFile := flag.String("pod", "", "pod JSON")
	n := flag.Int("n", 500, "pods to create")
	c := flag.Int("c", 25, "concurrent clients")
	flag.Parse()

	ca, err := os.ReadFile(*caFile)
	check(err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		check(fmt.Errorf("%s: no certificate", *caFile))
	}
	body, err := os.ReadFile(*podFile)
	check(err)
	// HTTP/2, every request on one connection, as client-go talks to the API server.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		MaxIdleConnsPerHost: *c, ForceAttemptHTTP2: true}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	url := fmt.Sprintf("%s/api/v1/namespaces/%s/pods", *server, *ns)

	var next, errs, injected int64
	lat := make([]time.Duration, *n)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := atomic.AddInt64(&next, 1) - 1
				if i >= int64(*n) {
					return
				}
				t0 := time.Now()
				ok, inj, e := create(client, url, *token, body)
				lat[i] = time.Since(t0)
				if !ok {
					atomic.AddInt64(&errs, 1)
					firstErr.CompareAndSwap(nil, e)
				} else if inj {
					atomic.AddInt64(&injected, 1)
				}
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	all := make([]float64, len(lat))
	for i, d := range lat {
		all[i] = ms(d)
	}
	out := map[string]any{"pods": *n, "seconds": secs, "errors": errs, "injected": injected,
		"p50_ms": ms(lat[len(lat)/2]), "p99_ms": ms(lat[len(lat)*99/100]), "latencies_ms": all}
	if e, _ := firstErr.Load().(string); e != "" {
		out["first_error"] = e
	}
	check(json.NewEncoder(os.Stdout).Encode(out))
}

func create(c *http.Client, url, token string, body []byte) (bool, bool, string) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return false, false, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return false, false, err.Error()
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return false, false, fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, data)
	}
	var pod struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(data, &pod)
	_, inj := pod.Metadata.Annotations["diagon.gke.io/injection"]
	return true, inj, ""
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiburst:", err)
		os.Exit(1)
	}
}
