// Regression tests for bugs this suite found in other packages, each named after its bug.
package security

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
	"github.com/medallion-lake/medallion/txlog"
)

// A schedule "TZ=" (a time zone prefix with nothing after it) panics inside robfig/cron's
// parser, so `medallion run/serve --config` with it crashes instead of naming the field.
func TestRegressionParseScheduleTZWithoutSpecIsAnError(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("config.ParseSchedule(%q) panicked: %v", "TZ=", r)
		}
	}()
	for _, s := range []string{"TZ=", "CRON_TZ=", "TZ=UTC"} {
		if _, err := config.ParseSchedule(s); err == nil {
			t.Errorf("config.ParseSchedule(%q) accepted a schedule without a spec", s)
		}
	}
}

// "interval 20000 weeks" (someone keeping history for good) overflows time.Duration and comes
// back negative, so log cleanup's cutoff lands in the future and every commit before the last
// checkpoint is deleted.
func TestRegressionParseIntervalOverflowIsAnError(t *testing.T) {
	for _, s := range []string{"interval 20000 weeks", "interval 106752 days", "9223372036854775807 seconds"} {
		d, err := txlog.ParseInterval(s)
		if err == nil && d < 0 {
			t.Errorf("txlog.ParseInterval(%q) = %v: overflowed to a negative retention", s, d)
		}
	}
}

// `--set s3.secret_access_key=VALUE` is refused, but the error (config/override.go) echoes
// "override KEY=VALUE", printing the secret to stderr and into any log collector.
func TestRegressionSetSecretEchoesValue(t *testing.T) {
	bin := lakecheck.Binary(t)
	for _, key := range []string{"secret_access_key", "access_key_id", "session_token"} {
		dir := t.TempDir()
		plain := lakecheck.WriteConfig(t, dir, filepath.Join(dir, "lake"), "")
		r, err := lakecheck.Run(context.Background(), bin, nil, "run", "ingest", "--config", plain, "--set", "s3."+key+"="+fakeSecret)
		if err != nil {
			t.Fatal(err)
		}
		if r.Code != 2 {
			t.Errorf("--set s3.%s: exit %d, want 2\n%s", key, r.Code, r.Stderr)
		}
		assertNoSecret(t, "--set s3."+key, r.Stdout+r.Stderr)
	}
}
