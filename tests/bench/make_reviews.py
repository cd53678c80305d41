#!/usr/bin/python3
"""Build the benchmark AdmissionReviews (committed under tests/fixtures/admission):
a ~5 KiB TPU JobSet pod as the JobSet controller creates it, and a ~64 KiB
variant of the same pod whose extra size is realistic bulk (a long launch
script, many env vars and volumes) rather than extra containers, so both
reviews ask for the same injection."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import controllers  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "admission")


def jobset(extra_env=0, script_lines=0, extra_volumes=0):
    env = [{"name": "JAX_PLATFORMS", "value": "tpu"},
           {"name": "TPU_STDERR_LOG_LEVEL", "value": "0"},
           {"name": "XLA_FLAGS", "value": "--xla_dump_to=/tmp/xla --xla_tpu_enable_latency_hiding_scheduler=true"},
           {"name": "LIBTPU_INIT_ARGS", "value": "--xla_tpu_enable_async_collective_fusion=true"}]
    env += [{"name": "TRAIN_OPTION_%03d" % i,
             "value": "--flag_%03d=value-%03d-of-a-realistic-training-config" % (i, i)}
            for i in range(extra_env)]
    script = ["set -euo pipefail", "pip install -q google-cloud-mldiagnostics",
              "python3 -m maxtext.train maxtext/configs/base.yml run_name=$(hostname)"]
    script += ["echo 'step %04d: checkpoint to gs://bucket/run/ckpt-%04d' >> /tmp/plan" % (i, i)
               for i in range(script_lines)]
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}},
               {"name": "gcs-fuse", "csi": {"driver": "gcsfuse.csi.storage.gke.io",
                                            "volumeAttributes": {"bucketName": "training-data"}}}]
    volumes += [{"name": "cfg-%02d" % i, "configMap": {"name": "train-config-%02d" % i}}
                for i in range(extra_volumes)]
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"},
              {"name": "gcs-fuse", "mountPath": "/data"}]
    mounts += [{"name": "cfg-%02d" % i, "mountPath": "/etc/train/%02d" % i}
               for i in range(extra_volumes)]
    template = {
        "metadata": {"labels": {"managed-mldiagnostics-gke": "true", "app": "llama-pretrain"},
                     "annotations": {"gke-gcsfuse/volumes": "true"}},
        "spec": {
            "restartPolicy": "Never",
            "subdomain": "llama",
            "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
                             "cloud.google.com/gke-tpu-topology": "4x4x4"},
            "tolerations": [{"key": "google.com/tpu", "operator": "Exists",
                             "effect": "NoSchedule"}],
            "containers": [{
                "name": "jax-tpu",
                "image": "us-docker.pkg.dev/cloud-tpu-images/jax-stable-stack/tpu:jax0.6.1-rev1",
                "command": ["bash", "-c", "\n".join(script)],
                "ports": [{"containerPort": 8471}, {"containerPort": 8080},
                          {"containerPort": 9999, "name": "profiler"}],
                "env": env,
                "securityContext": {"privileged": False},
                "resources": {"requests": {"google.com/tpu": "4", "cpu": "200", "memory": "400Gi"},
                              "limits": {"google.com/tpu": "4"}},
                "volumeMounts": mounts}],
            "volumes": volumes}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "llama-pretrain"},
            "spec": {"replicatedJobs": [{"name": "slice", "replicas": 1, "template": {"spec": {
                "parallelism": 16, "completions": 16, "backoffLimit": 0,
                "template": template}}}]}}


def write(name, js):
    pod = controllers.jobset_pods(js, "ml-team", limit=1)[0]
    rv = controllers.review(pod, "ml-team", uid="7c1e2b0a-5f0e-4c1e-9a3d-bench%07d" % len(name))
    body = json.dumps(rv, separators=(",", ":"))
    with open(os.path.join(OUT, name), "w") as f:
        f.write(body + "\n")
    print("%s: %d bytes" % (name, len(body)))


write("bench-jobset-5k.json", jobset())
write("bench-jobset-64k.json", jobset(extra_env=300, script_lines=400, extra_volumes=40))
