package deploy

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// TestAlertRules loads deploy/alerts.yml with Prometheus's own rule-file parser (the one
// `promtool check rules` uses: YAML shape, PromQL of every expr, templates of the annotations),
// and checks that every medallion_* metric an alert names is one that serve exports, as the
// docs/operating.md lists them: an alert on a renamed metric would stay silent forever.
func TestAlertRules(t *testing.T) {
	path := filepath.Join(repoRoot(t), "deploy", "alerts.yml")
	promql := parser.NewParser(parser.Options{})
	groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", path, err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The metric list of docs/operating.md ("Jobs and schedules", linked from the README) is the contract; serve's own test (jobs TestPipelineMetrics)
	// checks that serve exports what it lists.
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile("`(medallion_[a-z0-9_]+)").FindAllStringSubmatch(string(readme), -1) {
		exported[m[1]] = true
	}
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			expr, err := promql.ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
				continue
			}
			var names []string
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok && strings.HasPrefix(vs.Name, "medallion_") {
					names = append(names, vs.Name)
				}
				return nil
			})
			if len(names) == 0 {
				t.Errorf("%s names no medallion metric", r.Alert)
			}
			for _, n := range names {
				if !exported[n] {
					t.Errorf("%s uses %s, which docs/operating.md does not list among serve's metrics", r.Alert, n)
				}
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s has no summary", r.Alert)
			}
		}
	}
	if alerts < 6 {
		t.Fatalf("only %d alerts in %s", alerts, path)
	}
	for _, want := range []string{"medallion_table_rows_in_total", "medallion_late_rows_merged_total", "medallion_watermark_delay_seconds", "medallion_table_last_commit_age_seconds", "medallion_lag_p95_seconds", "medallion_state_rows", "medallion_rejects_total"} {
		if !exported[want] {
			t.Errorf("docs/operating.md does not document %s", want)
		}
	}
}
