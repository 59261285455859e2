package faults

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Kind is one way the proxy breaks a request.
type Kind int

const (
	// Status answers 500 InternalError without forwarding.
	Status500 Kind = iota
	// SlowDown answers 503 SlowDown (S3's throttling) without forwarding.
	SlowDown
	// Reset closes the connection without forwarding (the client sees a reset).
	Reset
	// LostAnswer forwards the whole request (the write lands), waits, then closes the
	// connection: the unknown-outcome case for commits.
	LostAnswer
	// Truncate forwards, then sends the headers and half the body and closes the connection.
	Truncate
	// Latency delays the request, then forwards it.
	Latency
	numKinds
)

var kindNames = [...]string{"500", "SlowDown", "reset", "lost-answer", "truncate", "latency"}

func (k Kind) String() string { return kindNames[k] }

// Rule injects Kind with probability Prob into requests that Match (all requests when nil).
type Rule struct {
	Kind  Kind
	Prob  float64
	Match func(r *http.Request) bool
}

// Proxy is a reverse proxy in front of a real S3 endpoint that injects faults by rule, from a
// seeded generator. SigV4 signs the Host header, so the request goes upstream with the Host the
// client signed.
type Proxy struct {
	URL      string
	upstream *url.URL
	client   *http.Client
	srv      *httptest.Server

	mu      sync.Mutex
	rng     *rand.Rand
	rules   []Rule
	enabled bool

	requests atomic.Int64
	fired    [numKinds]atomic.Int64
}

func newProxy(t *testing.T, upstream string, seed uint64, rules []Rule) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{
		upstream: u,
		client: &http.Client{
			Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		rng:     rand.New(rand.NewPCG(seed, 0x5eed)),
		rules:   rules,
		enabled: true,
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

// SetEnabled turns injection on or off (off: a plain proxy).
func (p *Proxy) SetEnabled(on bool) {
	p.mu.Lock()
	p.enabled = on
	p.mu.Unlock()
}

// Summary counts requests and the faults fired by kind.
func (p *Proxy) Summary() string {
	var parts []string
	total := int64(0)
	for k := Kind(0); k < numKinds; k++ {
		n := p.fired[k].Load()
		total += n
		parts = append(parts, fmt.Sprintf("%s=%d", k, n))
	}
	return fmt.Sprintf("%d requests, %d faults (%s)", p.requests.Load(), total, strings.Join(parts, " "))
}

func (p *Proxy) pick(r *http.Request) (Kind, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.enabled {
		return 0, false
	}
	for _, rule := range p.rules {
		if rule.Match != nil && !rule.Match(r) {
			continue
		}
		if p.rng.Float64() < rule.Prob {
			return rule.Kind, true
		}
	}
	return 0, false
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	kind, fault := p.pick(r)
	if fault {
		p.fired[kind].Add(1)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		hangUp(w)
		return
	}
	if fault {
		switch kind {
		case Status500:
			s3Error(w, http.StatusInternalServerError, "InternalError", "injected")
			return
		case SlowDown:
			s3Error(w, http.StatusServiceUnavailable, "SlowDown", "injected: please reduce your request rate")
			return
		case Reset:
			hangUp(w)
			return
		case Latency:
			time.Sleep(time.Duration(20+p.jitter(80)) * time.Millisecond)
		}
	}
	resp, err := p.forward(r, body)
	if err != nil {
		s3Error(w, http.StatusBadGateway, "InternalError", err.Error())
		return
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		hangUp(w)
		return
	}
	if fault && kind == LostAnswer {
		time.Sleep(time.Duration(p.jitter(50)) * time.Millisecond)
		hangUp(w)
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if fault && kind == Truncate && len(respBody) > 1 {
		w.Header().Set("Content-Length", fmt.Sprint(len(respBody)))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(respBody[:len(respBody)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		hangUp(w)
		return
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}

func (p *Proxy) jitter(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.IntN(n)
}

func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, error) {
	u := *p.upstream
	u.Path = r.URL.Path
	u.RawPath = r.URL.RawPath
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	out.ContentLength = int64(len(body))
	return p.client.Do(out)
}

// hangUp closes the client's connection abruptly (RST, not FIN) without an HTTP answer.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("faults: response writer cannot hijack")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>faults</RequestId></Error>`, code, msg)
}
