// Modules whose CRDs the tier installs but whose controllers it cannot build
// from the module proxy (cert-manager: nested modules with mismatched paths).
// Nothing here is compiled: build.sh downloads each require line (checked
// against go.sum) and reads its YAML from the module cache.
module mld.test/e2e/crds

go 1.26.0

require github.com/cert-manager/cert-manager v1.13.0
