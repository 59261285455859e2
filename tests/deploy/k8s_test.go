package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
)

// k8sObjects are the validated objects of every manifest under deploy/k8s.
type k8sObjects struct {
	configMaps  map[string]*corev1.ConfigMap
	services    []*corev1.Service
	deployments []*appsv1.Deployment
	cronJobs    []*batchv1.CronJob
	rules       []*monitoringv1.PrometheusRule
	monitors    []*monitoringv1.ServiceMonitor
}

// loadK8s validates every document of every file under deploy/k8s (see k8sValidator); a
// Secret, or any kind the example does not use, is refused there, so no secret can be committed
// as a manifest.
func loadK8s(t *testing.T) *k8sObjects {
	t.Helper()
	v := newK8sValidator(t)
	objs := &k8sObjects{configMaps: map[string]*corev1.ConfigMap{}}
	for _, path := range k8sFiles(t) {
		rel, _ := filepath.Rel(repoRoot(t), path)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitYAML(t, data) {
			obj, err := v.validate(doc)
			if err != nil {
				t.Errorf("%s (document %d): %v", rel, i+1, err)
				continue
			}
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				objs.configMaps[o.Name] = o
			case *corev1.Service:
				objs.services = append(objs.services, o)
			case *appsv1.Deployment:
				objs.deployments = append(objs.deployments, o)
			case *batchv1.CronJob:
				objs.cronJobs = append(objs.cronJobs, o)
			case *monitoringv1.PrometheusRule:
				objs.rules = append(objs.rules, o)
			case *monitoringv1.ServiceMonitor:
				objs.monitors = append(objs.monitors, o)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(objs.deployments) != 1 || len(objs.services) != 1 || len(objs.rules) != 1 {
		t.Fatalf("deploy/k8s must hold one Deployment, one Service and one PrometheusRule; it has %d, %d and %d",
			len(objs.deployments), len(objs.services), len(objs.rules))
	}
	return objs
}

// dockerImage is what the final stage of the Dockerfile says about the image it builds.
type dockerImage struct {
	uid, gid   int64
	expose     []int32
	entrypoint []string
	cmd        []string
}

func readDockerfile(t *testing.T) dockerImage {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var img dockerImage
	user := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		instr, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		arg = strings.TrimSpace(arg)
		switch strings.ToUpper(instr) {
		case "FROM": // a new stage: only the last one is the image
			img, user = dockerImage{}, ""
		case "USER":
			user = arg
		case "EXPOSE":
			for _, p := range strings.Fields(arg) {
				n, err := strconv.ParseInt(strings.TrimSuffix(p, "/tcp"), 10, 32)
				if err != nil {
					t.Fatalf("Dockerfile: EXPOSE %s: %v", p, err)
				}
				img.expose = append(img.expose, int32(n))
			}
		case "ENTRYPOINT", "CMD":
			var list []string
			if err := json.Unmarshal([]byte(arg), &list); err != nil {
				t.Fatalf("Dockerfile: %s must be in exec form (a JSON list): %v", instr, err)
			}
			if instr == "CMD" {
				img.cmd = list
			} else {
				img.entrypoint = list
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Kubernetes can verify runAsNonRoot only for a numeric user.
	u, g, _ := strings.Cut(user, ":")
	var err1, err2 error
	img.uid, err1 = strconv.ParseInt(u, 10, 64)
	img.gid, err2 = strconv.ParseInt(g, 10, 64)
	if err1 != nil || err2 != nil || img.uid == 0 {
		t.Fatalf("Dockerfile: the image's USER %q must be a numeric non-root uid:gid", user)
	}
	return img
}

// composeImage is the image name docker-compose.yml gives the pipeline it builds from the
// Dockerfile: the manifests run that image.
func composeImage(t *testing.T) string {
	t.Helper()
	svc, err := loadCompose(t).GetService("pipeline")
	if err != nil {
		t.Fatal(err)
	}
	if svc.Build == nil || svc.Image == "" {
		t.Fatal("docker-compose.yml's pipeline service must build the Dockerfile and name the image")
	}
	return svc.Image
}

// mountedConfig follows the container's --config argument to the ConfigMap key mounted there,
// checks that the ConfigMap holds deploy/pipeline.yaml byte for byte, and returns the config.
func mountedConfig(t *testing.T, where string, pod *corev1.PodSpec, c *corev1.Container, objs *k8sObjects) *config.Pipeline {
	t.Helper()
	i := slices.Index(c.Args, "--config")
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("%s: args %q have no --config", where, c.Args)
	}
	path := c.Args[i+1]
	var data string
	found := false
	for _, m := range c.VolumeMounts {
		for _, vol := range pod.Volumes {
			if vol.Name != m.Name || vol.ConfigMap == nil {
				continue
			}
			cm := objs.configMaps[vol.ConfigMap.Name]
			for _, item := range vol.ConfigMap.Items {
				if filepath.Join(m.MountPath, item.Path) != path {
					continue
				}
				if cm == nil {
					t.Fatalf("%s: volume %s mounts ConfigMap %s, which deploy/k8s does not define", where, vol.Name, vol.ConfigMap.Name)
				}
				d, ok := cm.Data[item.Key]
				if !ok {
					t.Fatalf("%s: ConfigMap %s has no key %s", where, cm.Name, item.Key)
				}
				data, found = d, true
			}
		}
	}
	if !found {
		t.Fatalf("%s: --config %s is not a ConfigMap key mounted into the container", where, path)
	}
	want, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if data != string(want) {
		t.Fatalf("%s: the config mounted at %s differs from deploy/pipeline.yaml; copy it into deploy/k8s/configmap.yaml (sed 's/^/    /' deploy/pipeline.yaml)", where, path)
	}
	cfg, err := config.Parse([]byte(data), path)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return cfg
}

// secretLike are environment variable names whose value must come from a Secret.
var secretLike = regexp.MustCompile(`(?i)secret|token|password|key_id|access_key|credential`)

// checkPod holds for every pod of the example: the Dockerfile's image, user and entrypoint, the
// hardened securityContext, resources, and credentials from Secrets only.
func checkPod(t *testing.T, where string, pod *corev1.PodSpec, objs *k8sObjects, img dockerImage, image string) (*corev1.Container, *config.Pipeline) {
	t.Helper()
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: want one container, got %d", where, len(pod.Containers))
	}
	c := &pod.Containers[0]
	where += " container " + c.Name
	if c.Image != image {
		t.Errorf("%s: image %q, want %q (docker-compose.yml's name for the image the Dockerfile builds)", where, c.Image, image)
	}
	if len(c.Command) > 0 && !slices.Equal(c.Command, img.entrypoint) {
		t.Errorf("%s: command %q replaces the image's ENTRYPOINT %q; pass args only", where, c.Command, img.entrypoint)
	}
	cfg := mountedConfig(t, where, pod, c, objs)

	psc, csc := pod.SecurityContext, c.SecurityContext
	if psc == nil || csc == nil {
		t.Fatalf("%s: pod and container need a securityContext", where)
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("%s: runAsNonRoot must be true", where)
	}
	if psc.RunAsUser == nil || *psc.RunAsUser != img.uid || psc.RunAsGroup == nil || *psc.RunAsGroup != img.gid {
		t.Errorf("%s: runAsUser/runAsGroup %v/%v, want the Dockerfile's USER %d:%d", where, ptrVal(psc.RunAsUser), ptrVal(psc.RunAsGroup), img.uid, img.gid)
	}
	if csc.RunAsUser != nil && *csc.RunAsUser != img.uid {
		t.Errorf("%s: the container's runAsUser %d is not the Dockerfile's %d", where, *csc.RunAsUser, img.uid)
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
		csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
		csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: want allowPrivilegeEscalation false, readOnlyRootFilesystem true, capabilities drop [ALL]: %+v", where, csc)
	}

	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[res]; !ok {
			t.Errorf("%s: no %s request", where, res)
		}
		if _, ok := c.Resources.Limits[res]; !ok {
			t.Errorf("%s: no %s limit", where, res)
		}
	}

	fromSecret := map[string]bool{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			fromSecret[e.Name] = true
		} else if secretLike.MatchString(e.Name) {
			t.Errorf("%s: %s must come from a Secret (valueFrom.secretKeyRef), not the manifest", where, e.Name)
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			t.Errorf("%s: envFrom a ConfigMap could carry credentials; use secretKeyRef", where)
		}
	}
	if strings.HasPrefix(cfg.Lake, "s3://") {
		for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			if !fromSecret[name] {
				t.Errorf("%s: the lake is %s, but %s is not set from a Secret", where, cfg.Lake, name)
			}
		}
	}
	return c, cfg
}

func ptrVal(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// containerPort resolves a probe's or a Service's port (a number or a port name) to the
// container's port number, or 0.
func containerPort(c *corev1.Container, p intstr.IntOrString) int32 {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

func selects(sel map[string]string, target map[string]string) bool {
	return len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(target))
}

// servePaths are the paths the manifests expect serve to answer; TestK8sProbesAnswer checks
// that a serve started from the ConfigMap's config does.
const (
	healthPath  = "/healthz"
	metricsPath = "/metrics"
)

// TestK8sManifests validates every manifest under deploy/k8s against the Kubernetes API (see
// k8sValidator) and checks that they fit together and fit the image: the probes, the container
// port, the Service and serve.listen agree; --config is the ConfigMap key mounted there, and it
// holds deploy/pipeline.yaml; the image, user, port and entrypoint are the Dockerfile's; the
// PrometheusRule holds deploy/alerts.yml's rules.
func TestK8sManifests(t *testing.T) {
	objs := loadK8s(t)
	img := readDockerfile(t)
	image := composeImage(t)

	if len(objs.monitors) == 0 || len(objs.cronJobs) == 0 {
		t.Errorf("deploy/k8s lost its ServiceMonitor (%d) or its CronJob example (%d)", len(objs.monitors), len(objs.cronJobs))
	}
	dep := objs.deployments[0]
	where := "Deployment " + dep.Name
	c, cfg := checkPod(t, where, &dep.Spec.Template.Spec, objs, img, image)
	where += " container " + c.Name
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("%s: args %q do not run serve", where, c.Args)
	}
	if !slices.Equal(c.Args, img.cmd) {
		t.Errorf("%s: args %q differ from the Dockerfile's CMD %q: one of the two is stale", where, c.Args, img.cmd)
	}

	// The port: serve.listen (on every interface, or the kubelet cannot reach it), the
	// container port, the Dockerfile's EXPOSE.
	host, portText, err := net.SplitHostPort(cfg.Serve.Listen)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("serve.listen %s: probes and the Service reach the pod's IP, so serve must listen on 0.0.0.0", cfg.Serve.Listen)
	}
	servePort, _ := strconv.Atoi(portText)
	if containerPort(c, intstr.FromInt32(int32(servePort))) == 0 {
		t.Errorf("%s: no container port is serve.listen's %d", where, servePort)
	}
	if !slices.Contains(img.expose, int32(servePort)) {
		t.Errorf("the Dockerfile does not EXPOSE serve.listen's port %d (it exposes %v)", servePort, img.expose)
	}

	for name, probe := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe, "startupProbe": c.StartupProbe} {
		if probe == nil {
			if name != "startupProbe" {
				t.Errorf("%s: no %s", where, name)
			}
			continue
		}
		if probe.HTTPGet == nil || probe.HTTPGet.Path != healthPath {
			t.Errorf("%s: %s must GET %s", where, name, healthPath)
			continue
		}
		if got := containerPort(c, probe.HTTPGet.Port); got != int32(servePort) {
			t.Errorf("%s: %s port %s is container port %d, want serve.listen's %d", where, name, probe.HTTPGet.Port.String(), got, servePort)
		}
	}

	// serve stops gracefully on SIGTERM within serve.shutdown_timeout; the kubelet must wait longer.
	grace := 30 * time.Second // the API's default
	if g := dep.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if grace <= cfg.Serve.ShutdownTimeout.Duration {
		t.Errorf("%s: terminationGracePeriodSeconds %v must exceed serve.shutdown_timeout %v", where, grace, cfg.Serve.ShutdownTimeout.Duration)
	}
	if cfg.Landing.Notify.Mode == "webhook" {
		ok := false
		for _, e := range c.Env {
			ok = ok || (e.Name == jobs.WebhookTokenEnv && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil)
		}
		if !ok {
			t.Errorf("%s: the config takes webhook events on %s, so serve needs %s from a Secret", where, cfg.Serve.Listen, jobs.WebhookTokenEnv)
		}
	}

	svc := objs.services[0]
	if !selects(svc.Spec.Selector, dep.Spec.Template.Labels) {
		t.Errorf("Service %s: selector %v does not select the Deployment's pods %v", svc.Name, svc.Spec.Selector, dep.Spec.Template.Labels)
	}
	var svcPort *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if containerPort(c, p.TargetPort) == int32(servePort) {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		t.Fatalf("Service %s: no port targets serve's container port %d", svc.Name, servePort)
	}

	for _, sm := range objs.monitors {
		if !selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
			t.Errorf("ServiceMonitor %s: selector %v does not select Service %s %v", sm.Name, sm.Spec.Selector.MatchLabels, svc.Name, svc.Labels)
		}
		for _, ep := range sm.Spec.Endpoints {
			if ep.Port != svcPort.Name || ep.Path != metricsPath {
				t.Errorf("ServiceMonitor %s: endpoint %s%s, want the Service's port %s and %s", sm.Name, ep.Port, ep.Path, svcPort.Name, metricsPath)
			}
		}
	}

	for _, cj := range objs.cronJobs {
		where := "CronJob " + cj.Name
		c, _ := checkPod(t, where, &cj.Spec.JobTemplate.Spec.Template.Spec, objs, img, image)
		if len(c.Args) < 2 || c.Args[0] != "run" || jobs.Lookup(c.Args[1]) == nil {
			t.Errorf("%s: args %q must be run JOB with a job medallion knows", where, c.Args)
		}
		if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
			t.Errorf("%s: concurrencyPolicy %q; Forbid keeps a slow run from piling up behind itself", where, cj.Spec.ConcurrencyPolicy)
		}
	}

	checkPrometheusRule(t, objs.rules[0])
}

// checkPrometheusRule: the PrometheusRule's groups, parsed as a Prometheus rule file, equal
// deploy/alerts.yml's, so the two never drift.
func checkPrometheusRule(t *testing.T, rule *monitoringv1.PrometheusRule) {
	t.Helper()
	path := filepath.Join(repoRoot(t), "deploy", "alerts.yml")
	want, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", path, errs)
	}
	got, errs := ruleGroupsOf(rule)
	if len(errs) > 0 {
		t.Fatalf("PrometheusRule %s: %v", rule.Name, errs)
	}
	alertsOf := func(gs *rulefmt.RuleGroups) map[string]rulefmt.Rule {
		m := map[string]rulefmt.Rule{}
		for _, g := range gs.Groups {
			for _, r := range g.Rules {
				m[g.Name+"/"+r.Alert+r.Record] = r
			}
		}
		return m
	}
	have := alertsOf(got)
	for name, r := range alertsOf(want) {
		if h, ok := have[name]; !ok {
			t.Errorf("PrometheusRule %s lacks %s of deploy/alerts.yml", rule.Name, name)
		} else if !reflect.DeepEqual(h, r) {
			t.Errorf("PrometheusRule %s: %s differs from deploy/alerts.yml:\n got %+v\nwant %+v", rule.Name, name, h, r)
		}
	}
	if !t.Failed() && !reflect.DeepEqual(got.Groups, want.Groups) {
		t.Errorf("PrometheusRule %s: groups differ from deploy/alerts.yml (an extra rule, or a group setting)", rule.Name)
	}
	if len(want.Groups) == 0 {
		t.Fatalf("%s has no rule groups", path)
	}
	if t.Failed() {
		t.Log("after editing deploy/alerts.yml, copy its groups under spec: of deploy/k8s/monitoring/prometheusrule.yaml, indented by two spaces")
	}
}

// TestK8sProbesAnswer starts serve from the ConfigMap's config (a local lake instead of MinIO,
// a free loopback port, no schedule) and fetches what the manifests point at: the probes' path
// answers 200 with status ok, and the ServiceMonitor's path serves Prometheus metrics.
func TestK8sProbesAnswer(t *testing.T) {
	objs := loadK8s(t)
	dep := objs.deployments[0]
	c := &dep.Spec.Template.Spec.Containers[0]
	cfg := mountedConfig(t, "Deployment "+dep.Name, &dep.Spec.Template.Spec, c, objs)
	cfg.Lake = t.TempDir()
	cfg.S3 = config.S3{}
	cfg.Landing.Notify.Mode = "poll"
	cfg.Jobs = config.Jobs{}
	cfg.Serve.Listen = "127.0.0.1:0"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := jobs.NewEnv(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Lake.Close()
	srv, err := jobs.NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	// NewServer bound the listener already, so a request made before Run's goroutine serves
	// waits in the backlog rather than failing.
	code, body := get(healthPath)
	var health struct{ Status string }
	if err := json.Unmarshal([]byte(body), &health); code != http.StatusOK || err != nil || health.Status != "ok" {
		t.Fatalf("GET %s: %d %q", healthPath, code, body)
	}
	code, body = get(metricsPath)
	if code != http.StatusOK || !strings.Contains(body, "medallion_") {
		t.Fatalf("GET %s: %d, no medallion_ metrics in %d bytes", metricsPath, code, len(body))
	}
}
