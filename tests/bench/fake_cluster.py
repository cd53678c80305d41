#!/usr/bin/python3
"""The cluster for the benchmark's "webhook + API caches" arm: the fake API
server in its own process, holding the namespace and the JobSet the bench
reviews belong to, so the webhook's caches answer every lookup.

Usage: fake_cluster.py KUBECONFIG_OUT   (runs until killed)"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fakes"))
from fake_apiserver import FakeApiServer  # noqa: E402

api = FakeApiServer()
api.register_ml_crds()
api.start()
api.create(("", "v1", "namespaces"), {"metadata": {"name": "ml-team",
                                                   "labels": {"team": "llm"}}})
api.create(("jobset.x-k8s.io", "v1alpha2", "jobsets"),
           {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "llama-pretrain",
                         "labels": {"managed-mldiagnostics-gke": "true", "app": "llama"}},
            "spec": {"replicatedJobs": []}}, ns="ml-team")
api.kubeconfig(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *a: (api.stop(), sys.exit(0)))
while True:
    time.sleep(3600)
