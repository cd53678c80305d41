// apiburst: the API-server benchmark's load generator (standard library only).
module mld.test/e2e/apiburst

go 1.26.0
