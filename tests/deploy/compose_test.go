// Package deploy checks what users deploy: the local stack they start with docker compose (the
// compose file read with the compose-spec reference parser, no Docker engine needed, and the
// pipeline config it mounts loaded with medallion's own config loader), the alert rules, and the
// Kubernetes example under deploy/k8s (validated against the Kubernetes API's types and schema,
// no cluster needed; see k8sValidator).
package deploy

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/medallion-lake/medallion/config"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	root := repoRoot(t)
	proj, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml")}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("medallion", true) })
	if err != nil {
		t.Fatalf("docker-compose.yml does not parse as a compose file: %v", err)
	}
	return proj
}

func TestComposeServices(t *testing.T) {
	proj := loadCompose(t)
	for _, name := range []string{"minio", "minio-init", "localstack", "pipeline"} {
		if _, err := proj.GetService(name); err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
	}
	for name, svc := range proj.Services {
		if svc.Build == nil {
			if svc.Image == "" || !strings.Contains(svc.Image, ":") || strings.HasSuffix(svc.Image, ":latest") {
				t.Errorf("service %s: image %q is not pinned to a tag", name, svc.Image)
			}
		}
	}
	minio, _ := proj.GetService("minio")
	if minio.HealthCheck == nil || len(minio.HealthCheck.Test) == 0 {
		t.Error("minio has no health check")
	}
	published := map[string]bool{}
	for _, p := range minio.Ports {
		published[p.Published] = true
	}
	if !published["9000"] || !published["9001"] {
		t.Errorf("minio must publish 9000 (S3) and 9001 (console): %+v", minio.Ports)
	}
	init, _ := proj.GetService("minio-init")
	if dep, ok := init.DependsOn["minio"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Error("minio-init must wait for a healthy minio")
	}
	if !strings.Contains(strings.Join(init.Command, " "), "mc mb") {
		t.Error("minio-init must create the lake bucket")
	}
	ls, _ := proj.GetService("localstack")
	if ls.Environment["SERVICES"] == nil || *ls.Environment["SERVICES"] != "s3" {
		t.Error("localstack must run S3 only")
	}
	hooks := false
	for _, v := range ls.Volumes {
		if strings.HasSuffix(v.Target, "/init/ready.d") {
			hooks = true
			if _, err := os.Stat(filepath.Join(v.Source, "create-buckets.sh")); err != nil {
				t.Errorf("localstack init hook: %v", err)
			}
		}
	}
	if !hooks {
		t.Error("localstack has no init hooks mounted")
	}
}

// TestComposePipelinePointsAtMinIO: the pipeline service's config is valid and talks to the
// minio service of the same compose file, and MinIO's webhook target points back at serve.
func TestComposePipelinePointsAtMinIO(t *testing.T) {
	proj := loadCompose(t)
	svc, _ := proj.GetService("pipeline")
	if svc.Build == nil {
		t.Fatal("pipeline must be built from the Dockerfile")
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "Dockerfile")); err != nil {
		t.Fatal(err)
	}
	var cfgPath string
	for _, v := range svc.Volumes {
		if v.Target == "/etc/medallion/pipeline.yaml" {
			cfgPath = v.Source
		}
	}
	if cfgPath == "" || !strings.Contains(strings.Join(svc.Command, " "), "/etc/medallion/pipeline.yaml") {
		t.Fatal("pipeline must mount and serve /etc/medallion/pipeline.yaml")
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("the compose pipeline config is invalid: %v", err)
	}
	ep, err := url.Parse(cfg.S3.Endpoint)
	if err != nil || ep.Hostname() != "minio" || ep.Port() != "9000" {
		t.Fatalf("s3.endpoint %q must be the minio service (http://minio:9000)", cfg.S3.Endpoint)
	}
	if !strings.HasPrefix(cfg.Lake, "s3://lake") {
		t.Fatalf("lake %q must be in the bucket minio-init creates", cfg.Lake)
	}
	_, port, _ := strings.Cut(cfg.Serve.Listen, ":")
	exposed := false
	for _, p := range svc.Ports {
		if p.Target == mustAtoi(t, port) {
			exposed = true
		}
	}
	if !exposed {
		t.Fatalf("serve.listen %s is not published by the pipeline service", cfg.Serve.Listen)
	}
	minio, _ := proj.GetService("minio")
	hook := minio.Environment["MINIO_NOTIFY_WEBHOOK_ENDPOINT_PRIMARY"]
	if hook == nil || *hook != "http://pipeline:"+port+cfg.Landing.Notify.Path {
		t.Fatalf("MinIO's webhook target %v must be serve's %s", hook, cfg.Landing.Notify.Path)
	}
	// serve listens beyond loopback here, so it needs the webhook token, and MinIO must send
	// the same one, or every event is refused with 401.
	sent, want := minio.Environment["MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_PRIMARY"], svc.Environment["MEDALLION_WEBHOOK_TOKEN"]
	if sent == nil || want == nil || *sent == "" || *sent != *want {
		t.Fatalf("MinIO's webhook token %v must be set and equal the pipeline's MEDALLION_WEBHOOK_TOKEN %v", sent, want)
	}
	if cfg.Landing.Notify.AllowUnauthenticated {
		t.Fatal("the compose pipeline must not accept unauthenticated webhook events")
	}
}

func mustAtoi(t *testing.T, s string) uint32 {
	var n uint32
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("port %q is not a number", s)
		}
		n = n*10 + uint32(c-'0')
	}
	return n
}
