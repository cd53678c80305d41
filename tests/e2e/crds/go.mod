// Modules whose CRDs the tier installs but whose controllers it does not
// build from the module proxy (cert-manager: nested modules with mismatched
// paths; the MPI operator: its CRD is what the kind table's MPIJob row needs).
// Nothing here is compiled: build.sh downloads each require line (checked
// against go.sum) and reads its YAML from the module cache.
module mld.test/e2e/crds

go 1.26.0

require github.com/cert-manager/cert-manager v1.13.0

require github.com/kubeflow/mpi-operator v0.6.0
