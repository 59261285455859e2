package security

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/medallion-lake/medallion/objstore/s3"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// minioBinary finds the pinned MinIO server that scripts/minio.sh installs.
func minioBinary(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "minio.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`MINIO_VERSION="([^"]+)"`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/minio.sh has no MINIO_VERSION")
	}
	cache := os.Getenv("MEDALLION_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "medallion")
	}
	bin := filepath.Join(cache, "minio-"+string(m[1]), "minio")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("MEDALLION_REQUIRE_S3") == "1" || os.Getenv("CI") == "true" {
			t.Fatalf("MinIO server %s missing: run scripts/minio.sh install", bin)
		}
		t.Skipf("MinIO server %s missing: run scripts/minio.sh install", bin)
	}
	return bin
}

// selfSignedCA writes a CA and a server certificate for 127.0.0.1 signed by it, in MinIO's
// layout (DIR/public.crt, DIR/private.key), and returns the CA's PEM path and pool.
func selfSignedCA(t *testing.T, certsDir string) (string, *x509.CertPool) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "medallion h10 test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(path, typ string, der []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(certsDir, "public.crt"), "CERTIFICATE", leafDER)
	write(filepath.Join(certsDir, "private.key"), "PRIVATE KEY", keyDER)
	caPath := filepath.Join(filepath.Dir(certsDir), "ca.pem")
	write(caPath, "CERTIFICATE", caDER)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return caPath, pool
}

// TestS3OverTLSWithPrivateCA starts a second MinIO serving HTTPS with a self-signed CA and runs
// gen and ingest against it: they work with AWS_CA_BUNDLE and fail cleanly without it.
func TestS3OverTLSWithPrivateCA(t *testing.T) {
	minio := minioBinary(t)
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	caPath, pool := selfSignedCA(t, certs)
	addr := freeAddr(t)
	const user, password = "h10tls", "h10-tls-test-password"
	srv := exec.Command(minio, "server", "--quiet", "--address", addr, "--certs-dir", certs, filepath.Join(dir, "data"))
	srv.Env = append(os.Environ(), "MINIO_ROOT_USER="+user, "MINIO_ROOT_PASSWORD="+password, "MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1")
	var srvOut safeBuffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	endpoint := "https://" + addr
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for i := 0; ; i++ {
		resp, err := httpClient.Get(endpoint + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i == 300 {
			t.Fatalf("TLS MinIO did not come up: %v\n%s", err, srvOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx := context.Background()
	client, err := s3.NewClient(ctx, s3.Config{Endpoint: endpoint, Region: "us-east-1", PathStyle: true,
		AccessKeyID: user, SecretAccessKey: password, HTTPClient: httpClient})
	if err != nil {
		t.Fatal(err)
	}
	bucket := "h10-tls"
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("create bucket over TLS: %v", err)
	}

	bin := lakecheck.Binary(t)
	cfg := lakecheck.WriteConfig(t, dir, "s3://"+bucket+"/lake", "s3: {endpoint: \""+endpoint+"\", region: us-east-1, path_style: true}\n")
	env := []string{"AWS_ACCESS_KEY_ID=" + user, "AWS_SECRET_ACCESS_KEY=" + password, "AWS_SESSION_TOKEN=", "AWS_CA_BUNDLE=" + caPath}
	lakecheck.MustRun(t, bin, env, "gen", "--config", cfg, "--events", "500", "--files", "1")
	r := lakecheck.MustRun(t, bin, env, "run", "ingest", "--config", cfg)
	var sum struct {
		Result struct{ Lines, Rows, Rejected int }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || sum.Result.Lines != 500 || sum.Result.Rows+sum.Result.Rejected != 500 {
		t.Fatalf("ingest over TLS: %q (%v)", r.Stdout, err)
	}

	// Without the CA the certificate is unknown: a clean failure that says so.
	noCA := []string{"AWS_ACCESS_KEY_ID=" + user, "AWS_SECRET_ACCESS_KEY=" + password, "AWS_SESSION_TOKEN=", "AWS_CA_BUNDLE="}
	r, err = lakecheck.Run(ctx, bin, noCA, "run", "stream", "--config", cfg)
	if err != nil || r.Code != 1 {
		t.Fatalf("stream without the CA: exit %d, %v; want 1\n%s", r.Code, err, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "certificate") {
		t.Errorf("the failure without the CA does not name the certificate problem:\n%s", r.Stderr)
	}
}
