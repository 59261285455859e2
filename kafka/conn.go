package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Conn is how to reach a Kafka cluster: its seed brokers and the connection options (TLS,
// SASL; ClientOptions reads them from the environment).
type Conn struct {
	Brokers []string
	Options []kgo.Opt
}

// NewClient is a franz-go client on the brokers with the connection options, then extra (what
// this use needs: a partitioner, a retry timeout, how to consume), reading no partition yet.
func (c Conn) NewClient(extra ...kgo.Opt) (*kgo.Client, error) {
	opts := make([]kgo.Opt, 0, 1+len(c.Options)+len(extra))
	opts = append(opts, kgo.SeedBrokers(c.Brokers...))
	opts = append(opts, c.Options...)
	opts = append(opts, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: client for %v: %w", c.Brokers, err)
	}
	return cl, nil
}

// ClientOptions reads the Kafka connection's secrets and TLS settings from the environment
// (never from the config file):
//
//	KAFKA_TLS=true                 connect with TLS (implied by any KAFKA_TLS_* below)
//	KAFKA_TLS_CA_FILE              PEM bundle of the CAs to trust (default: the system's)
//	KAFKA_TLS_CERT_FILE, _KEY_FILE client certificate and key (mutual TLS)
//	KAFKA_TLS_SERVER_NAME          the name to verify instead of the broker's host
//	KAFKA_SASL_MECHANISM           PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
//	KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD
//
// lookup is os.LookupEnv or the pipeline config's view of the environment. An error names the
// variable and what it expects; it never prints a secret.
func ClientOptions(lookup func(string) (string, bool)) ([]kgo.Opt, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	var opts []kgo.Opt
	tlsOpt, err := tlsOption(get)
	if err != nil {
		return nil, err
	}
	if tlsOpt != nil {
		opts = append(opts, tlsOpt)
	}
	mech, user, pass := strings.ToUpper(get("KAFKA_SASL_MECHANISM")), get("KAFKA_SASL_USERNAME"), get("KAFKA_SASL_PASSWORD")
	if mech == "" && (user != "" || pass != "") {
		return nil, errors.New("kafka: KAFKA_SASL_USERNAME/PASSWORD are set but KAFKA_SASL_MECHANISM is not: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	if mech != "" && (user == "" || pass == "") {
		return nil, fmt.Errorf("kafka: KAFKA_SASL_MECHANISM=%s needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD", mech)
	}
	switch mech {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("kafka: KAFKA_SASL_MECHANISM=%q: expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	return opts, nil
}

// tlsOption is the dial option of the KAFKA_TLS* variables, nil when they ask for no TLS.
func tlsOption(get func(string) string) (kgo.Opt, error) {
	ca, cert, key, server := get("KAFKA_TLS_CA_FILE"), get("KAFKA_TLS_CERT_FILE"), get("KAFKA_TLS_KEY_FILE"), get("KAFKA_TLS_SERVER_NAME")
	useTLS := ca != "" || cert != "" || key != "" || server != ""
	switch v := strings.ToLower(get("KAFKA_TLS")); v {
	case "", "false", "0":
	case "true", "1":
		useTLS = true
	default:
		return nil, fmt.Errorf("kafka: KAFKA_TLS=%q: expected true or false", v)
	}
	if !useTLS {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: server}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("kafka: KAFKA_TLS_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka: KAFKA_TLS_CA_FILE %s holds no PEM certificate", ca)
		}
		tc.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("kafka: KAFKA_TLS_CERT_FILE and KAFKA_TLS_KEY_FILE go together: set both or neither")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("kafka: KAFKA_TLS_CERT_FILE/KAFKA_TLS_KEY_FILE: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return kgo.DialTLSConfig(tc), nil
}
