package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/robfig/cron/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/yaml"
)

// k8sValidator checks a Kubernetes manifest the way an API server with strict field validation
// (kubectl apply --validate=strict) would, without a cluster, in four layers:
//
//  1. YAML to JSON strictly: a duplicate key is an error.
//  2. Strict decoding into the Go types of k8s.io/api (and of the Prometheus operator's
//     monitoring.coreos.com/v1): an unknown field or a value of the wrong type is an error.
//  3. For built-in kinds, the API's published schema (the structured-merge-diff schema client-go
//     ships, generated from the OpenAPI of the same release; server-side apply checks objects
//     against it): an undeclared field or a wrong type is an error there too.
//  4. The API's own rules that apimachinery exports (object names, labels, annotations, label
//     selectors, port, env var and ConfigMap key syntax), the rules of apps/v1 and batch/v1 that
//     decide whether a Deployment or CronJob is accepted (the selector matches the template, the
//     cron schedule and time zone parse, requests do not exceed limits), and for a
//     PrometheusRule what the operator's admission webhook checks: its groups parse as a
//     Prometheus rule file (PromQL, templates).
type k8sValidator struct {
	decoder runtime.Decoder
	schema  managedfields.TypeConverter
}

// builtinGroups are the API groups whose schema client-go ships.
var builtinGroups = map[string]bool{"": true, "apps": true, "batch": true}

func newK8sValidator(t *testing.T) *k8sValidator {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return &k8sValidator{
		decoder: serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer(),
		schema:  applyconfigurations.NewTypeConverter(scheme),
	}
}

// validate runs the four layers on one YAML document and returns the typed object.
func (v *k8sValidator) validate(doc []byte) (runtime.Object, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("yaml: %w", err)
	}
	obj, gvk, err := v.decoder.Decode(js, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if builtinGroups[gvk.Group] {
		if err := v.schemaCheck(js); err != nil {
			return nil, err
		}
	}
	if errs := apiRules(obj); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", gvk.Kind, errs.ToAggregate())
	}
	return obj, nil
}

// schemaCheck is layer 3 alone: the object, as plain JSON, against the API's schema.
func (v *k8sValidator) schemaCheck(js []byte) error {
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(js, &u.Object); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if _, err := v.schema.ObjectToTyped(u); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	return nil
}

// splitYAML returns the non-empty documents of a multi-document YAML file.
func splitYAML(t *testing.T, data []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// apiRules is layer 4.
func apiRules(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		errs = append(errs, objectMeta(&o.ObjectMeta, apivalidation.NameIsDNSSubdomain)...)
		for key := range o.Data {
			for _, msg := range validation.IsConfigMapKey(key) {
				errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, msg))
			}
		}
	case *corev1.Service:
		errs = append(errs, objectMeta(&o.ObjectMeta, apivalidation.NameIsDNS1035Label)...)
		errs = append(errs, metav1validation.ValidateLabels(o.Spec.Selector, field.NewPath("spec", "selector"))...)
		if len(o.Spec.Ports) == 0 {
			errs = append(errs, field.Required(field.NewPath("spec", "ports"), ""))
		}
		for i, p := range o.Spec.Ports {
			path := field.NewPath("spec", "ports").Index(i)
			errs = append(errs, portNumber(path.Child("port"), p.Port)...)
			errs = append(errs, portName(path.Child("name"), p.Name)...)
			errs = append(errs, intOrPortName(path.Child("targetPort"), p.TargetPort)...)
		}
	case *appsv1.Deployment:
		errs = append(errs, objectMeta(&o.ObjectMeta, apivalidation.NameIsDNSSubdomain)...)
		errs = append(errs, selectorMatches(field.NewPath("spec"), o.Spec.Selector, o.Spec.Template.Labels)...)
		errs = append(errs, podSpec(field.NewPath("spec", "template", "spec"), &o.Spec.Template.Spec)...)
	case *batchv1.CronJob:
		// A CronJob's name also names its Jobs (plus 11 characters), so it is capped at 52.
		errs = append(errs, objectMeta(&o.ObjectMeta, apivalidation.NameIsDNSSubdomain)...)
		if len(o.Name) > 52 {
			errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), o.Name, 52))
		}
		if _, err := cron.ParseStandard(o.Spec.Schedule); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "schedule"), o.Spec.Schedule, err.Error()))
		}
		if o.Spec.TimeZone != nil {
			if _, err := time.LoadLocation(*o.Spec.TimeZone); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("spec", "timeZone"), *o.Spec.TimeZone, err.Error()))
			}
		}
		pod := &o.Spec.JobTemplate.Spec.Template.Spec
		path := field.NewPath("spec", "jobTemplate", "spec", "template", "spec")
		if pod.RestartPolicy != corev1.RestartPolicyNever && pod.RestartPolicy != corev1.RestartPolicyOnFailure {
			errs = append(errs, field.NotSupported(path.Child("restartPolicy"), pod.RestartPolicy, []string{"Never", "OnFailure"}))
		}
		errs = append(errs, podSpec(path, pod)...)
	case *monitoringv1.PrometheusRule:
		errs = append(errs, objectMeta(&o.ObjectMeta, apivalidation.NameIsDNSSubdomain)...)
		if _, perrs := ruleGroupsOf(o); len(perrs) > 0 {
			for _, err := range perrs {
				errs = append(errs, field.Invalid(field.NewPath("spec", "groups"), "", err.Error()))
			}
		}
	case *monitoringv1.ServiceMonitor:
		errs = append(errs, objectMeta(&o.ObjectMeta, apivalidation.NameIsDNSSubdomain)...)
		errs = append(errs, metav1validation.ValidateLabelSelector(&o.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "selector"))...)
		for i, ep := range o.Spec.Endpoints {
			errs = append(errs, portName(field.NewPath("spec", "endpoints").Index(i).Child("port"), ep.Port)...)
		}
	default:
		errs = append(errs, field.NotSupported(field.NewPath("kind"), obj.GetObjectKind().GroupVersionKind().Kind,
			[]string{"ConfigMap", "Service", "Deployment", "CronJob", "PrometheusRule", "ServiceMonitor"}))
	}
	return errs
}

func objectMeta(meta *metav1.ObjectMeta, name apivalidation.ValidateNameFunc) field.ErrorList {
	return apivalidation.ValidateObjectMeta(meta, false, name, field.NewPath("metadata"))
}

// selectorMatches is apps/v1's rule: a non-empty, valid selector that selects the pod template.
func selectorMatches(path *field.Path, sel *metav1.LabelSelector, template map[string]string) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(path.Child("selector"), "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(path.Child("selector"), sel, err.Error()))
	}
	if s.Empty() || !s.Matches(labels.Set(template)) {
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), template, "`selector` does not match template `labels`"))
	}
	return errs
}

func podSpec(path *field.Path, spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	volumes := map[string]bool{}
	for i, vol := range spec.Volumes {
		vp := path.Child("volumes").Index(i)
		errs = append(errs, dns1123Label(vp.Child("name"), vol.Name)...)
		if volumes[vol.Name] {
			errs = append(errs, field.Duplicate(vp.Child("name"), vol.Name))
		}
		volumes[vol.Name] = true
		if cm := vol.ConfigMap; cm != nil {
			for j, item := range cm.Items {
				for _, msg := range validation.IsConfigMapKey(item.Key) {
					errs = append(errs, field.Invalid(vp.Child("configMap", "items").Index(j).Child("key"), item.Key, msg))
				}
			}
		}
	}
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	names := map[string]bool{}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		cp := path.Child("containers").Index(i)
		errs = append(errs, dns1123Label(cp.Child("name"), c.Name)...)
		if names[c.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		}
		names[c.Name] = true
		if c.Image == "" {
			errs = append(errs, field.Required(cp.Child("image"), ""))
		}
		portNames := map[string]bool{}
		for j, p := range c.Ports {
			pp := cp.Child("ports").Index(j)
			errs = append(errs, portNumber(pp.Child("containerPort"), p.ContainerPort)...)
			if p.Name != "" {
				errs = append(errs, portName(pp.Child("name"), p.Name)...)
				portNames[p.Name] = true
			}
		}
		for j, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(cp.Child("env").Index(j).Child("name"), e.Name, msg))
			}
			if e.Value != "" && e.ValueFrom != nil {
				errs = append(errs, field.Invalid(cp.Child("env").Index(j), e.Name, "may not have both value and valueFrom"))
			}
		}
		for j, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				errs = append(errs, field.NotFound(cp.Child("volumeMounts").Index(j).Child("name"), m.Name))
			}
			if !strings.HasPrefix(m.MountPath, "/") {
				errs = append(errs, field.Invalid(cp.Child("volumeMounts").Index(j).Child("mountPath"), m.MountPath, "must be absolute"))
			}
		}
		for name, probe := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe, "startupProbe": c.StartupProbe} {
			if probe == nil || probe.HTTPGet == nil {
				continue
			}
			port := probe.HTTPGet.Port
			errs = append(errs, intOrPortName(cp.Child(name, "httpGet", "port"), port)...)
			if port.Type == intstr.String && !portNames[port.StrVal] {
				errs = append(errs, field.NotFound(cp.Child(name, "httpGet", "port"), port.StrVal))
			}
		}
		for res, limit := range c.Resources.Limits {
			if req, ok := c.Resources.Requests[res]; ok && req.Cmp(limit) > 0 {
				errs = append(errs, field.Invalid(cp.Child("resources", "requests").Key(string(res)), req.String(), "must be less than or equal to "+string(res)+" limit of "+limit.String()))
			}
		}
	}
	return errs
}

func dns1123Label(path *field.Path, s string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(s) {
		errs = append(errs, field.Invalid(path, s, msg))
	}
	return errs
}

func portNumber(path *field.Path, n int32) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(n)) {
		errs = append(errs, field.Invalid(path, n, msg))
	}
	return errs
}

func portName(path *field.Path, s string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortName(s) {
		errs = append(errs, field.Invalid(path, s, msg))
	}
	return errs
}

func intOrPortName(path *field.Path, p intstr.IntOrString) field.ErrorList {
	if p.Type == intstr.Int {
		return portNumber(path, p.IntVal)
	}
	return portName(path, p.StrVal)
}

// ruleGroupsOf parses a PrometheusRule's groups as a Prometheus rule file, as the operator's
// admission webhook does before it accepts the object.
func ruleGroupsOf(rule *monitoringv1.PrometheusRule) (*rulefmt.RuleGroups, []error) {
	content, err := yaml.Marshal(rule.Spec)
	if err != nil {
		return nil, []error{err}
	}
	return rulefmt.Parse(content, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
}

// TestK8sValidatorRejects: each layer of the validator rejects a broken copy of a real
// manifest, so a pass of TestK8sManifests means something.
func TestK8sValidatorRejects(t *testing.T) {
	v := newK8sValidator(t)
	dir := filepath.Join(repoRoot(t), "deploy", "k8s")
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"unknown field", "deployment.yaml", "imagePullPolicy: IfNotPresent", "imagePullPolice: IfNotPresent", `unknown field "spec.template.spec.containers[0].imagePullPolice"`},
		{"unknown field in a Service", "service.yaml", "targetPort: http", "targetPorts: http", `unknown field "spec.ports[0].targetPorts"`},
		{"wrong type", "deployment.yaml", "replicas: 1", "replicas: one", "cannot unmarshal"},
		{"port as a string", "deployment.yaml", "containerPort: 9464", `containerPort: "9464"`, "cannot unmarshal"},
		{"duplicate key", "deployment.yaml", "replicas: 1", "replicas: 1\n  replicas: 2", `"replicas" already set`},
		{"invalid name", "configmap.yaml", "name: medallion-config", "name: Medallion_Config", "metadata.name: Invalid value"},
		{"selector does not match the template", "deployment.yaml", "app.kubernetes.io/component: serve\n    spec:", "app.kubernetes.io/component: web\n    spec:", "`selector` does not match template `labels`"},
		{"probe on an unnamed port", "deployment.yaml", "httpGet: {path: /healthz, port: http}\n            periodSeconds: 10", "httpGet: {path: /healthz, port: metrics}\n            periodSeconds: 10", "readinessProbe.httpGet.port: Not found"},
		{"requests above limits", "deployment.yaml", `limits: {cpu: "2", memory: 2Gi}`, `limits: {cpu: "2", memory: 256Mi}`, "must be less than or equal to memory limit"},
		{"bad cron schedule", "cronjob/merge-late.yaml", `schedule: "15 * * * *"`, `schedule: "75 * * * *"`, "spec.schedule: Invalid value"},
		{"unknown field in a PrometheusRule", "monitoring/prometheusrule.yaml", "for: 5m", "fore: 5m", `unknown field "spec.groups[0].rules[0].fore"`},
		{"PromQL that does not parse", "monitoring/prometheusrule.yaml", `[15m]) > 0`, `[15m] > 0`, "unclosed left parenthesis"},
		{"unknown field in a ServiceMonitor", "monitoring/servicemonitor.yaml", "path: /metrics", "pathh: /metrics", `unknown field "spec.endpoints[0].pathh"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.validate(data); err != nil {
				t.Fatalf("%s as committed: %v", tc.file, err)
			}
			broken := strings.Replace(string(data), tc.old, tc.new, 1)
			if broken == string(data) {
				t.Fatalf("%s has no %q to break", tc.file, tc.old)
			}
			_, err = v.validate([]byte(broken))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s with %q: got error %v, want one containing %q", tc.file, tc.new, err, tc.want)
			}
		})
	}
}

// TestK8sSchemaAloneRejects: the API schema layer finds an undeclared field and a wrong type by
// itself, independently of the Go types' strict decoding.
func TestK8sSchemaAloneRejects(t *testing.T) {
	v := newK8sValidator(t)
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "k8s", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(doc string) error {
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return v.schemaCheck(js)
	}
	if err := check(string(data)); err != nil {
		t.Fatalf("deployment.yaml as committed: %v", err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true", "readOnlyRootFileSystem"},
		{"terminationGracePeriodSeconds: 60", "terminationGracePeriodSeconds: soon", "terminationGracePeriodSeconds"},
		{`drop: ["ALL"]`, `drop: ALL`, "drop"},
	} {
		broken := strings.Replace(string(data), tc.old, tc.new, 1)
		if broken == string(data) {
			t.Fatalf("deployment.yaml has no %q", tc.old)
		}
		if err := check(broken); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("schema check of deployment.yaml with %q: got %v, want an error naming %s", tc.new, err, tc.want)
		}
	}
}

// k8sFiles lists every manifest under deploy/k8s.
func k8sFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(repoRoot(t), "deploy", "k8s"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}
