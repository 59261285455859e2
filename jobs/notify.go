package jobs

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/bronze/watch"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
)

// maxEventBody bounds one notification request.
const maxEventBody = 4 << 20

// Webhook limits. Authenticated requests (MinIO sends one per event) may come in bursts of
// uploads; unauthenticated ones get a much smaller budget of their own, so that a flood of
// bad requests costs little and never starves the real events.
const (
	webhookRate        = 500 // authenticated requests a second, sustained
	webhookBurst       = 2000
	webhookRejectRate  = 10 // requests a second without a valid token
	webhookRejectBurst = 50
	// maxPendingKeys bounds the queue of keys to ingest; past it, events are dropped (counted)
	// and the reconciling listing finds their objects.
	maxPendingKeys = 100_000
	// minWebhookToken is the shortest token accepted: shorter ones could be guessed.
	minWebhookToken = 16
)

// WebhookTokenEnv names the environment variable that holds the webhook's bearer token.
const WebhookTokenEnv = "MEDALLION_WEBHOOK_TOKEN"

// ErrWebhookUnauthenticated: serve would accept unauthenticated events from other hosts.
var ErrWebhookUnauthenticated = errors.New("jobs: the webhook would accept unauthenticated events")

// notifier is event-driven ingestion: the webhook handler queues the landing keys that S3 event
// notifications name, and a loop ingests them (exactly once, under the ingest lease) within
// about a second. Events are hints: the scheduled ingest run lists the prefix and catches any
// object whose event was lost.
type notifier struct {
	env     Env
	leases  *Leases
	lake    bucketurl.Location
	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
	events  *prometheus.CounterVec
	// tokenSum is the SHA-256 of the bearer token, or nil when none is required (loopback).
	// Comparing digests in constant time hides the token's length as well as its bytes.
	tokenSum []byte
	allowed  *rate.Limiter // authenticated requests
	refused  *rate.Limiter // requests without a valid token
	// now is the limiters' clock (Env.Clock): a test freezes it so that no refill happens
	// between its requests however slowly a loaded machine serves them.
	now func() time.Time
	// record counts each ingest as a run of the ingest job (set by the Server).
	record func(start time.Time, summary any, err error)
}

func newNotifier(env Env, leases *Leases, reg prometheus.Registerer) (*notifier, error) {
	loc, err := bucketurl.Parse(env.Config.Lake)
	if err != nil {
		return nil, err
	}
	notify := env.Config.Landing.Notify
	n := &notifier{
		env: env, leases: leases, lake: loc, pending: map[string]bool{}, wake: make(chan struct{}, 1),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "medallion_notifications_total",
			Help: "S3 event notifications received, by outcome (queued, ignored, bad, dropped, unauthorized, limited).",
		}, []string{"outcome"}),
		allowed: rate.NewLimiter(webhookRate, webhookBurst),
		refused: rate.NewLimiter(webhookRejectRate, webhookRejectBurst),
		now:     env.Clock,
	}
	if n.now == nil {
		n.now = time.Now
	}
	switch token := string(notify.Token); {
	case token != "" && len(token) < minWebhookToken:
		return nil, fmt.Errorf("%w: %s is %d characters; use at least %d random ones (e.g. openssl rand -hex 32)",
			ErrWebhookUnauthenticated, WebhookTokenEnv, len(token), minWebhookToken)
	case token != "":
		sum := sha256.Sum256([]byte(token))
		n.tokenSum = sum[:]
	case !isLoopback(env.Config.Serve.Listen) && !notify.AllowUnauthenticated:
		return nil, fmt.Errorf("%w: serve.listen %s is reachable from other hosts and %s is not set; set it (and MinIO's MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_<ID> to the same value), listen on loopback, or set landing.notify.allow_unauthenticated: true",
			ErrWebhookUnauthenticated, env.Config.Serve.Listen, WebhookTokenEnv)
	default:
		env.Logger.Warn("the webhook accepts events without a token", "listen", env.Config.Serve.Listen, "hint", "set "+WebhookTokenEnv)
	}
	if err := reg.Register(n.events); err != nil {
		return nil, err
	}
	return n, nil
}

// lakeKey maps an event's bucket and key to a key of the lake bucket, or "" when the object is
// outside the lake.
func (n *notifier) lakeKey(o watch.Object) string {
	if n.lake.Scheme != "s3" || o.Bucket != n.lake.Bucket {
		if n.lake.Scheme == "s3" {
			return ""
		}
		return o.Key // a file lake has no bucket: take keys as lake-relative
	}
	if n.lake.Prefix == "" {
		return o.Key
	}
	rest, ok := strings.CutPrefix(o.Key, n.lake.Prefix+"/")
	if !ok {
		return ""
	}
	return rest
}

// isLoopback says whether a listen address accepts connections from this host only. An empty
// host ("":9464) or an unspecified one (0.0.0.0, ::) listens everywhere.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorized checks the token in constant time. MinIO sends `Authorization: Bearer <token>`
// when its target has MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_<ID>, and so does an EventBridge API
// destination configured with that header; an SNS HTTPS subscription cannot set headers, but
// sends the user and password of its URL (https://medallion:<token>@host/s3-events) as Basic
// authentication, whose password is then the token.
func (n *notifier) authorized(r *http.Request) bool {
	if n.tokenSum == nil {
		return true
	}
	var token string
	scheme, rest, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	switch {
	case ok && strings.EqualFold(scheme, "Bearer"):
		token = strings.TrimSpace(rest)
	case ok && strings.EqualFold(scheme, "Basic"):
		_, token, ok = r.BasicAuth()
	default:
		ok = false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], n.tokenSum) == 1 && ok
}

// ServeHTTP accepts one notification (POST, S3 event JSON): 401 without the token, 429 past the
// rate limit, 400 for a body that is not an S3 event, else 204. A record that cannot be used (a
// key that does not decode or breaks the key rules) is counted as bad and skipped: the other
// records of the same body are still queued, and the reconciling listing deals with that object.
func (n *notifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !n.authorized(r) {
		if !n.refused.AllowN(n.now(), 1) {
			n.events.WithLabelValues("limited").Inc()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		n.events.WithLabelValues("unauthorized").Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="medallion"`)
		http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
		return
	}
	if !n.allowed.AllowN(n.now(), 1) {
		n.events.WithLabelValues("limited").Inc()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many requests", http.StatusTooManyRequests)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEventBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	objs, bad, err := watch.ParseEventRecords(body)
	if err != nil {
		n.events.WithLabelValues("bad").Inc()
		n.env.Logger.Warn("refused a webhook request that is not an S3 event", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, e := range bad {
		n.events.WithLabelValues("bad").Inc()
		n.env.Logger.Warn("skipped a notification record; the reconciling listing will find its object", "err", e)
	}
	queued := 0
	n.mu.Lock()
	for _, o := range objs {
		key := n.lakeKey(o)
		if _, ok := LandingSourceOf(n.env.Config, key); key == "" || !ok {
			n.events.WithLabelValues("ignored").Inc()
			continue
		}
		if err := objstore.ValidateKey(key); err != nil {
			n.events.WithLabelValues("bad").Inc()
			n.env.Logger.Warn("skipped a notification record; the reconciling listing will find its object", "err", err)
			continue
		}
		if len(n.pending) >= maxPendingKeys && !n.pending[key] {
			n.events.WithLabelValues("dropped").Inc()
			continue
		}
		n.pending[key] = true
		queued++
		n.events.WithLabelValues("queued").Inc()
	}
	n.mu.Unlock()
	if queued > 0 {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// run ingests queued keys until ctx ends. Keys arriving together are ingested in one batch.
func (n *notifier) run(ctx context.Context) {
	log := n.env.Logger.With("component", "notifications")
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		// Gather what arrives in the next moment into the same batch.
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		n.mu.Lock()
		keys := make([]string, 0, len(n.pending))
		for k := range n.pending {
			keys = append(keys, k)
		}
		n.pending = map[string]bool{}
		n.mu.Unlock()
		if len(keys) == 0 {
			continue
		}
		if err := n.ingest(ctx, keys); err != nil {
			log.Warn("event-driven ingest failed; the next listing will catch these objects", "keys", len(keys), "err", err)
		}
	}
}

// ingest runs IngestKeys under the ingest lease, waiting a little while the scheduled ingest
// (here or in another process) holds it.
func (n *notifier) ingest(ctx context.Context, keys []string) error {
	var lease *Lease
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		lease, err = n.leases.Acquire(ctx, "ingest")
		if !errors.Is(err, ErrLeaseHeld) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	defer lease.Release(context.WithoutCancel(ctx))
	start := time.Now()
	summary, err := RunLogged(lease.Context(), n.env, "ingest", "", func(ctx context.Context, env Env) (any, error) {
		return IngestKeys(ctx, env, keys)
	})
	rep, _ := summary.(bronze.Report)
	if n.record != nil {
		n.record(start, rep, err) // an ingest run like a scheduled one, in status and metrics
	}
	if err == nil {
		n.env.Logger.Info("ingested from notifications", "keys", len(keys), "files", rep.Files, "rows", rep.Rows)
	}
	return err
}

// subscribeLake attaches the webhook target to the lake's bucket for the landing prefix (MinIO).
func subscribeLake(ctx context.Context, env Env) error {
	loc, err := bucketurl.Parse(env.Config.Lake)
	if err != nil {
		return err
	}
	if loc.Scheme != "s3" {
		return fmt.Errorf("jobs: landing.notify.mode webhook needs an s3:// lake, not %s", env.Config.Lake)
	}
	s3 := env.Config.S3
	// Every files source's landing prefix notifies the same webhook; keys are routed back to
	// their source by prefix (LandingSourceOf).
	for _, src := range env.Config.AllSources() {
		if src.Landing.Kind != config.LandingFiles {
			continue
		}
		prefix := src.Landing.Path
		if loc.Prefix != "" {
			prefix = loc.Prefix + "/" + prefix
		}
		if err := watch.Subscribe(ctx, watch.MinIO{
			Endpoint: s3.Endpoint, AccessKeyID: s3.Credentials.AccessKeyID,
			SecretAccessKey: s3.Credentials.SecretAccessKey, SessionToken: s3.Credentials.SessionToken,
		}, loc.Bucket, prefix, env.Config.Landing.Notify.ARN); err != nil {
			return fmt.Errorf("source %s: %w", src.Name, err)
		}
	}
	return nil
}

// LandingSourceOf is the files source whose landing prefix holds key (the longest such prefix
// when prefixes nest), for routing event notifications to their source.
func LandingSourceOf(cfg *config.Pipeline, key string) (string, bool) {
	best, bestLen := "", -1
	for _, s := range cfg.AllSources() {
		if s.Landing.Kind == config.LandingFiles && strings.HasPrefix(key, s.Landing.Path) && len(s.Landing.Path) > bestLen {
			best, bestLen = s.Name, len(s.Landing.Path)
		}
	}
	return best, bestLen >= 0
}
