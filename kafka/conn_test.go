package kafka

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientOptions(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		env     map[string]string
		opts    int    // options expected
		wantErr string // substring of the error, "" for none
	}{
		{"nothing", nil, 0, ""},
		{"tls", map[string]string{"KAFKA_TLS": "true"}, 1, ""},
		{"tls implied by server name", map[string]string{"KAFKA_TLS_SERVER_NAME": "kafka.internal"}, 1, ""},
		{"bad tls flag", map[string]string{"KAFKA_TLS": "maybe"}, 0, `KAFKA_TLS="maybe"`},
		{"missing ca", map[string]string{"KAFKA_TLS_CA_FILE": filepath.Join(dir, "none.pem")}, 0, "KAFKA_TLS_CA_FILE"},
		{"ca not pem", map[string]string{"KAFKA_TLS_CA_FILE": notPEM}, 0, "holds no PEM certificate"},
		{"cert without key", map[string]string{"KAFKA_TLS_CERT_FILE": notPEM}, 0, "go together"},
		{"plain", map[string]string{"KAFKA_SASL_MECHANISM": "plain", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"}, 1, ""},
		{"scram tls", map[string]string{"KAFKA_TLS": "1", "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"}, 2, ""},
		{"unknown mechanism", map[string]string{"KAFKA_SASL_MECHANISM": "GSSAPI", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"}, 0, `"GSSAPI": expected PLAIN`},
		{"mechanism without password", map[string]string{"KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "u"}, 0, "needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"},
		{"password without mechanism", map[string]string{"KAFKA_SASL_PASSWORD": "p"}, 0, "KAFKA_SASL_MECHANISM is not"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ClientOptions(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "p\"") {
					t.Fatalf("error prints the password: %v", err)
				}
				return
			}
			if err != nil || len(opts) != tc.opts {
				t.Fatalf("%d options, %v; want %d", len(opts), err, tc.opts)
			}
		})
	}
}
