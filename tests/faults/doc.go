// Package faults runs the real medallion binary against a real MinIO server through a
// fault-injecting HTTP proxy (500, SlowDown, connection resets, answers lost after the request
// landed, truncated responses, latency) and checks that every run either finishes or fails
// cleanly, and that rerunning without faults converges to the tables of a fault-free run with
// no commit lost or applied twice. It also races two schedulers on one lake.
//
// The tests need the test MinIO (`make test`, or `eval "$(scripts/minio.sh start)"`); without
// it they skip, unless MEDALLION_REQUIRE_S3=1 or CI=true. MEDALLION_LONG=1 runs longer.
package faults
